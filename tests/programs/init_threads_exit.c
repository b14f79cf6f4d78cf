/*
 * Boot-test program: the application ends with exit_group(2) while its
 * other threads run, on other CPUs, or sleep in a system call.
 *
 * Under UKL_NSS the application is global init. The last of its threads
 * to exit panics with "Attempted to kill init! exitcode=0x00000700",
 * which is how the host learns the exit status (7). The thread-group
 * leader exits first, and the others, killed, follow at once: the leader
 * may then find no thread alive to take over its children while one of
 * them has yet to panic. The kernel must panic the same way there, not
 * zap the initial PID namespace (BUG() without CONFIG_PID_NS).
 *
 * Two more threads change the protection of a large region all along.
 *
 * Usage: init_threads_exit [SPINNING [SLEEPING]]   (default 2 and 2)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_THREADS 16
#define EXIT_STATUS 7

static atomic_int ready;

static void *spin(void *arg)
{
	(void)arg;
	atomic_fetch_add(&ready, 1);
	for (;;)
		atomic_signal_fence(memory_order_seq_cst);
	return NULL;
}

/*
 * mprotect() over a large populated region holds the address space's lock
 * for writing for a long time: the leader's exit then waits for it in
 * exit_mm(), and this thread, killed, follows it out at once.
 */
#define PROTECT_BYTES (64UL << 20)
static atomic_long protects;

static void *protect(void *arg)
{
	char *p = mmap(NULL, PROTECT_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	(void)arg;
	if (p == MAP_FAILED) {
		perror("init_threads_exit: mmap");
		exit(1);
	}
	memset(p, 1, PROTECT_BYTES);
	atomic_fetch_add(&ready, 1);
	for (;;) {
		mprotect(p, PROTECT_BYTES, PROT_READ);
		mprotect(p, PROTECT_BYTES, PROT_READ | PROT_WRITE);
		atomic_fetch_add(&protects, 1);
	}
	return NULL;
}

static void *sleep_in_the_kernel(void *arg)
{
	(void)arg;
	atomic_fetch_add(&ready, 1);
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	int spinning = argc > 1 ? atoi(argv[1]) : 2;
	int sleeping = argc > 2 ? atoi(argv[2]) : 2;
	pthread_t t;

	if (spinning < 0 || sleeping < 0 || spinning + sleeping > MAX_THREADS) {
		fprintf(stderr, "init_threads_exit: at most %d threads\n", MAX_THREADS);
		return 2;
	}
	for (int i = 0; i < 2; i++) {
		if (pthread_create(&t, NULL, protect, NULL)) {
			perror("init_threads_exit: pthread_create");
			return 1;
		}
	}
	for (int i = 0; i < spinning + sleeping; i++) {
		if (pthread_create(&t, NULL, i < spinning ? spin : sleep_in_the_kernel,
				   NULL)) {
			perror("init_threads_exit: pthread_create");
			return 1;
		}
	}
	while (atomic_load(&ready) < spinning + sleeping + 2 || atomic_load(&protects) < 4)
		;
	printf("init_threads_exit: pid %d ends with %d threads running, %d sleeping\n",
	       (int)getpid(), spinning, sleeping);
	fflush(stdout);
	_exit(EXIT_STATUS);
}
