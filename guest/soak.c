// SPDX-License-Identifier: GPL-2.0
/*
 * The soak (`ukl soak`): everything at once for SECONDS, as the UKL
 * application and, built as an ordinary program, as a process beside it.
 *
 *   soak SECONDS NAME
 *
 * Threads each repeat one kind of work, counting rounds: mmap churn
 * (map, touch, mprotect, mremap, unmap), pipes (two threads ping-pong),
 * vfork+exec (posix_spawn of /bin/true, then wait), clock reads,
 * pthread_kill to a sibling, and switching bypass and run-to-completion
 * on and off (where the kernel has them). A 1 ms timer signals the
 * process throughout; the main thread grows its stack to 256 KiB and
 * back between its progress reports. Every counter must advance in every
 * WINDOW_S seconds: one that does not is reported as stalled. Resident
 * memory is reported with each window and must not grow without bound.
 *
 * Output lines the host reads (ukl/soak.py):
 *   soak NAME: t=T mmap=.. pipe=.. spawn=.. clock=.. kill=.. switch=.. timer=.. stack=.. rss=..KiB
 *   soak NAME: stalled ACTIVITY at t=T
 *   soak NAME: done seconds T stalls S rounds R
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WINDOW_S	10
/* The process beside the application ("peer") says when it runs. */
#define PEER_STARTED	"/tmp/soak-peer.started"
#define PEER_DONE	"/tmp/soak-peer.done"

long ukl_set_bypass(int on) __attribute__((weak));
long ukl_set_run_to_completion(int on) __attribute__((weak));

extern char **environ;

enum activity { MMAP, PIPE, SPAWN, CLOCK, KILL, SWITCH, TIMER, STACK, NR_ACTIVITIES };

static const char *const names[NR_ACTIVITIES] = {
	"mmap", "pipe", "spawn", "clock", "kill", "switch", "timer", "stack",
};

static volatile unsigned long count[NR_ACTIVITIES];
static volatile int stop;
static int ping[2], pong[2];
static pthread_t kill_target;
static const char *name;

static void *churn_memory(void *arg)
{
	(void)arg;
	while (!stop) {
		size_t len = 64 * 1024;
		char *q, *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			continue;
		memset(p, 0x5a, len);
		/* Split the mapping and merge it again: mremap takes one
		 * mapping only (EFAULT across two). */
		mprotect(p, len / 2, PROT_READ);
		mprotect(p, len / 2, PROT_READ | PROT_WRITE);
		q = mremap(p, len, 2 * len, MREMAP_MAYMOVE);
		if (q == MAP_FAILED) {
			munmap(p, len);
			continue;
		}
		q[2 * len - 1] = 1;
		munmap(q, 2 * len);
		count[MMAP]++;
	}
	return NULL;
}

static void *pipe_ping(void *arg)
{
	char c = 'p';

	(void)arg;
	while (!stop) {
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			continue;
		count[PIPE]++;
	}
	return NULL;
}

static void *pipe_pong(void *arg)
{
	char c;

	(void)arg;
	for (;;)
		if (read(ping[0], &c, 1) == 1 && write(pong[1], &c, 1) != 1)
			break;
	return NULL;
}

static void *spawn_processes(void *arg)
{
	char *argv[] = { "true", NULL };

	(void)arg;
	while (!stop) {
		pid_t pid;
		int status;

		/* posix_spawn: clone(CLONE_VM | CLONE_VFORK) and exec. */
		if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ))
			continue;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			count[SPAWN]++;
	}
	return NULL;
}

static void *read_clocks(void *arg)
{
	struct timespec a, b;

	(void)arg;
	while (!stop) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		clock_gettime(CLOCK_REALTIME, &b);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (b.tv_sec > a.tv_sec || (b.tv_sec == a.tv_sec && b.tv_nsec >= a.tv_nsec))
			count[CLOCK]++;
	}
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
}

static void *kill_sibling(void *arg)
{
	(void)arg;
	while (!stop) {
		pthread_kill(kill_target, SIGUSR1);
		count[KILL]++;
		sched_yield();
	}
	return NULL;
}

/* Bypass and run-to-completion on and off, with system calls between. */
static void *switch_modes(void *arg)
{
	(void)arg;
	while (!stop) {
		if (ukl_set_bypass && ukl_set_bypass(1) == 0) {
			getppid();
			ukl_set_bypass(0);
		}
		if (ukl_set_run_to_completion && ukl_set_run_to_completion(1) == 0) {
			getppid();
			ukl_set_run_to_completion(0);
		}
		getppid();
		count[SWITCH]++;
	}
	return NULL;
}

static void on_timer(int sig)
{
	(void)sig;
	count[TIMER]++;
}

/* Stack growth: about 256 KiB of frames, touched, then returned. */
static unsigned long grow(int depth)
{
	volatile char frame[4096];

	frame[0] = (char)depth;
	frame[sizeof(frame) - 1] = (char)depth;
	if (depth == 0)
		return frame[0];
	return grow(depth - 1) + frame[sizeof(frame) - 1];
}

/* sleep(1) would end at the next 1 ms timer signal. */
static void one_second(void)
{
	struct timespec left = { 1, 0 };

	while (nanosleep(&left, &left) && errno == EINTR)
		;
}

/*
 * Until `deadline` (CLOCK_MONOTONIC), then one second on: the progress
 * seconds stay wall seconds however long each round's stack growth takes
 * on a loaded host.
 */
static void until(struct timespec *deadline)
{
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline, NULL) == EINTR)
		;
	deadline->tv_sec++;
}

/* Resident memory in KiB (/proc/self/statm), -1 if unreadable. */
static long resident_kib(void)
{
	long size, resident = -1;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &size, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static int start_timer(void)
{
	struct sigaction sa = { .sa_handler = on_timer, .sa_flags = SA_RESTART };
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };
	struct itimerspec every_ms = { { 0, 1000 * 1000 }, { 0, 1000 * 1000 } };
	timer_t timer;

	sigaction(SIGALRM, &sa, NULL);
	return timer_create(CLOCK_MONOTONIC, &ev, &timer) ||
	       timer_settime(timer, 0, &every_ms, NULL);
}

int main(int argc, char **argv)
{
	void *(*const workers[])(void *) = {
		churn_memory, pipe_ping, pipe_pong, spawn_processes, read_clocks,
		switch_modes, kill_sibling,
	};
	struct sigaction usr1 = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	unsigned long window[NR_ACTIVITIES] = { 0 }, seconds, stalls = 0, rounds = 0;
	long first_rss = -1, rss = -1;
	struct timespec tick;
	int peer;
	pthread_t threads[sizeof(workers) / sizeof(workers[0])];

	if (argc < 3) {
		fprintf(stderr, "usage: soak SECONDS NAME\n");
		return 2;
	}
	seconds = strtoul(argv[1], NULL, 0);
	name = argv[2];
	peer = !strcmp(name, "peer");
	if (peer)
		close(open(PEER_STARTED, O_WRONLY | O_CREAT, 0644));
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigaction(SIGUSR1, &usr1, NULL);
	if (pipe(ping) || pipe(pong) || start_timer()) {
		printf("soak %s: setup failed: %s\n", name, strerror(errno));
		return 2;
	}
	/* The clock reader is the one pthread_kill interrupts. */
	for (size_t i = 0; i < sizeof(workers) / sizeof(workers[0]); i++) {
		if (pthread_create(&threads[i], NULL, workers[i], NULL)) {
			printf("soak %s: pthread_create failed\n", name);
			return 2;
		}
		if (workers[i] == read_clocks)
			kill_target = threads[i];
	}
	clock_gettime(CLOCK_MONOTONIC, &tick);
	tick.tv_sec++;
	for (unsigned long t = 1; t <= seconds; t++) {
		until(&tick);
		if (grow(64))
			count[STACK]++;
		if (t % WINDOW_S)
			continue;
		rss = resident_kib();
		if (first_rss < 0)
			first_rss = rss;
		printf("soak %s: t=%lu", name, t);
		for (int a = 0; a < NR_ACTIVITIES; a++)
			printf(" %s=%lu", names[a], count[a]);
		printf(" rss=%ldKiB\n", rss);
		for (int a = 0; a < NR_ACTIVITIES; a++) {
			if (count[a] == window[a]) {
				printf("soak %s: stalled %s at t=%lu\n", name, names[a], t);
				stalls++;
			}
			window[a] = count[a];
		}
	}
	stop = 1;
	/* Every round gives back what it takes: resident memory must not
	 * keep growing (a leak ends a long run in the OOM killer). */
	if (first_rss > 0 && rss > 2 * first_rss + 32 * 1024) {
		printf("soak %s: stalled memory: resident %ld KiB at the first window, %ld at "
		       "the end\n", name, first_rss, rss);
		stalls++;
	}
	for (int a = 0; a < NR_ACTIVITIES; a++)
		rounds += count[a];
	printf("soak %s: done seconds %lu stalls %lu rounds %lu\n", name, seconds, stalls, rounds);
	fflush(stdout);
	if (peer) {
		close(open(PEER_DONE, O_WRONLY | O_CREAT, 0644));
	} else if (access(PEER_STARTED, F_OK) == 0) {
		/* The machine stops when the application ends: let the
		 * process beside it, started a little later, finish too. */
		for (int i = 0; i < 60 && access(PEER_DONE, F_OK); i++)
			one_second();
	}
	/* The pipe partner may be blocked: end the process as a whole. */
	_exit(stalls ? 1 : 0);
}
