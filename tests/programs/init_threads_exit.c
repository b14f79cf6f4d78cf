/*
 * Boot-test program: every thread of the application ends at the same
 * moment with exit(2), the system call that ends one thread.
 *
 * Under UKL_NSS the application is global init. The last of its threads
 * to exit panics with "Attempted to kill init! exitcode=0x00000700",
 * which is how the host learns the exit status (7). The thread-group
 * leader, exiting beside the others, may find no thread alive to take
 * over its children before that panic: the kernel must panic the same
 * way there, not zap the initial PID namespace (BUG() without
 * CONFIG_PID_NS).
 *
 * Usage: init_threads_exit [THREADS]   (default 3, besides the leader)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_THREADS 16
#define EXIT_STATUS 7

static atomic_int ready;
static atomic_int go;

static void *exit_together(void *arg)
{
	(void)arg;
	atomic_fetch_add(&ready, 1);
	while (!atomic_load(&go))
		;
	syscall(SYS_exit, EXIT_STATUS);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 3;
	pthread_t t[MAX_THREADS];

	if (threads < 1 || threads > MAX_THREADS) {
		fprintf(stderr, "init_threads_exit: 1 to %d threads\n", MAX_THREADS);
		return 2;
	}
	for (int i = 0; i < threads; i++) {
		if (pthread_create(&t[i], NULL, exit_together, NULL)) {
			perror("init_threads_exit: pthread_create");
			return 1;
		}
	}
	while (atomic_load(&ready) < threads)
		;
	printf("init_threads_exit: pid %d, %d threads exit with the leader\n",
	       (int)getpid(), threads);
	fflush(stdout);
	atomic_store(&go, 1);
	syscall(SYS_exit, EXIT_STATUS);
	return 1;
}
