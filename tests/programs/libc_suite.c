/*
 * Exercises the UKL C library: stdio, malloc, 8 threads with TLS and
 * mutex/condvar, signals, fork/wait, vfork/exec-free posix_spawn-like use
 * of vfork, setjmp/longjmp. Prints one "ok NAME" line per check; any
 * failure prints "FAIL NAME: why" and exits 1.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(name, cond) do { \
	if (!(cond)) { printf("FAIL %s: %s (errno %d)\n", name, #cond, errno); exit(1); } \
	printf("ok %s\n", name); \
} while (0)

#define NTHREADS 8
static __thread long tls_value = -1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int arrived, released;

static void *worker(void *arg)
{
	long id = (long)arg;

	tls_value = id * 100;
	pthread_mutex_lock(&lock);
	arrived++;
	pthread_cond_broadcast(&cond);
	while (!released)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	/* Every thread still sees its own TLS value after the barrier. */
	return (void *)(tls_value == id * 100 ? id : -1);
}

static volatile sig_atomic_t got_alarm, got_usr1, si_code_seen;

static void on_alarm(int sig) { got_alarm = sig; }
static void on_usr1(int sig, siginfo_t *si, void *ctx)
{
	(void)ctx;
	got_usr1 = sig;
	si_code_seen = si->si_code;
}

static jmp_buf jb;

int main(void)
{
	/* stdio and malloc */
	char buf[64];
	snprintf(buf, sizeof(buf), "%d-%s-%.2f", 42, "ukl", 3.14159);
	CHECK("stdio", strcmp(buf, "42-ukl-3.14") == 0);
	size_t big = 64 << 20;
	unsigned char *p = malloc(big);
	CHECK("malloc", p != NULL);
	for (size_t i = 0; i < big; i += 4096)
		p[i] = (unsigned char)i;
	free(p);
	CHECK("malloc-touch", 1);

	/* threads, TLS, mutex/condvar */
	pthread_t t[NTHREADS];
	tls_value = 7;
	for (long i = 0; i < NTHREADS; i++)
		CHECK("pthread_create", pthread_create(&t[i], NULL, worker, (void *)i) == 0);
	pthread_mutex_lock(&lock);
	while (arrived < NTHREADS)
		pthread_cond_wait(&cond, &lock);
	released = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	for (long i = 0; i < NTHREADS; i++) {
		void *ret;
		pthread_join(t[i], &ret);
		CHECK("thread-tls", (long)ret == i);
	}
	CHECK("main-tls", tls_value == 7);

	/* signals: setitimer -> SIGALRM, raise with SA_SIGINFO */
	signal(SIGALRM, on_alarm);
	/* Blocked until sigsuspend(), so the wake-up cannot fall before the wait. */
	sigset_t alrm, unblocked;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	sigprocmask(SIG_BLOCK, &alrm, &unblocked);
	struct itimerval it = { .it_value = { .tv_usec = 20000 } };
	setitimer(ITIMER_REAL, &it, NULL);
	while (!got_alarm)
		sigsuspend(&unblocked);
	sigprocmask(SIG_SETMASK, &unblocked, NULL);
	CHECK("sigalrm", got_alarm == SIGALRM);
	struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO };
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	CHECK("sa_siginfo", got_usr1 == SIGUSR1 && si_code_seen == SI_TKILL);

	/* fork/wait and vfork */
	pid_t pid = fork();
	if (pid == 0)
		_exit(42);
	int status;
	CHECK("fork-wait", waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 42);
	pid = vfork();
	if (pid == 0)
		_exit(7);
	CHECK("vfork-wait", waitpid(pid, &status, 0) == pid && WEXITSTATUS(status) == 7);

	/* setjmp/longjmp */
	volatile int jumped = 0;
	if (setjmp(jb) == 0) {
		jumped = 1;
		longjmp(jb, 5);
	}
	CHECK("longjmp", jumped == 1);

	printf("libc_suite: all passed\n");
	return 0;
}
