/*
 * Boot-test program for UKL_BYP (system call bypass, <ukl.h>).
 *
 * Bypass is a per-thread switch: the application's system calls skip the
 * entry/exit work, but signals and rescheduling must still happen. Each
 * check prints "bypass: ok NAME" or "bypass: FAIL NAME: why"; the exit
 * status is the number of failures. On a UKL kernel without UKL_BYP the
 * program prints "bypass: unsupported (errno N)" and exits with 3.
 *
 * The bypass saves only part of the register frame for most calls and
 * completes it when the call has exit work to do (a signal to deliver):
 * check "signal-frame" sees the whole frame in a signal's context and
 * after the return.
 *
 * "bypass --storm" runs only check "signal-storm", meant for
 * `ukl run --one-insn-per-tb`, where an interrupt can come between any
 * two instructions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <ukl.h>
#include <unistd.h>

#include "callee_saved.h"

static int failures;
static volatile sig_atomic_t alarms;
static int wake_fd = -1;

static void report(const char *name, const char *why)
{
	if (why) {
		printf("bypass: FAIL %s: %s (errno %d)\n", name, why, errno);
		failures++;
	} else {
		printf("bypass: ok %s\n", name);
	}
	fflush(stdout);
}

static unsigned int cpl(void)
{
	unsigned short cs;

	__asm__ volatile("mov %%cs, %0" : "=r"(cs));
	return cs & 3;
}

/* The switch reads back and is the calling thread's own. */
static const char *check_toggle(void)
{
	if (ukl_bypass(0) != 1)
		return "bypass was not on at start";
	if (ukl_bypass(0) != 0)
		return "off did not stick";
	if (ukl_bypass(1) != 0 || ukl_bypass(1) != 1)
		return "on did not stick";
	return NULL;
}

static void *thread_main(void *arg)
{
	int *inherited = arg;

	*inherited = ukl_bypass(0);	/* 1 if the thread started bypassing */
	return NULL;
}

static const char *check_inherit(void)
{
	pthread_t t;
	int inherited = -1;

	if (pthread_create(&t, NULL, thread_main, &inherited) ||
	    pthread_join(t, NULL))
		return "pthread_create/join";
	if (inherited != 1)
		return "new thread did not inherit bypass";
	if (ukl_bypass(1) != 1)
		return "the thread turning it off changed the main thread";
	return NULL;
}

static void on_alarm(int sig)
{
	char c = 'w';

	(void)sig;
	alarms++;
	if (wake_fd >= 0 && write(wake_fd, &c, 1) != 1)
		alarms = -1000;
}

static int set_timer(long usec, long interval)
{
	struct itimerval it = { { 0, interval }, { 0, usec } };

	return setitimer(ITIMER_REAL, &it, NULL);
}

static int handle_alarm(int flags)
{
	struct sigaction sa = { 0 };

	sa.sa_handler = on_alarm;
	sa.sa_flags = flags;
	return sigaction(SIGALRM, &sa, NULL);
}

/* A thread that only makes bypassed calls still gets its signals. */
static const char *check_signal_in_loop(void)
{
	long calls = 0;

	alarms = 0;
	if (handle_alarm(0) || set_timer(5000, 0))
		return "sigaction/setitimer";
	while (!alarms && calls < 50000000L) {
		getppid();
		calls++;
	}
	if (!alarms)
		return "SIGALRM never delivered during 50M bypassed calls";
	printf("bypass: SIGALRM delivered after %ld bypassed getppid calls\n", calls);
	return NULL;
}

/*
 * Timer signals whose handler makes bypassed calls of its own (both
 * entries: the C library's wrappers call ukl_entry_SYSCALL_64, syscall()
 * calls ukl_syscall), while the thread makes nothing but bypassed calls.
 * When each instruction is a translation block of its own, the interrupt
 * that delivers a signal can come at any instruction of the fast bypass,
 * the stack switch included: the call must still return its value to its
 * caller on its caller's stack (kernel 0046: before, the handler's calls
 * rewrote the stack pointer the call returns to).
 */
#define STORM_SIGNALS 3000
static volatile sig_atomic_t storm_signals, storm_wrong;
static pid_t storm_ppid;

static void on_storm(int sig)
{
	(void)sig;
	if (getppid() != storm_ppid || syscall(SYS_getppid) != storm_ppid)
		storm_wrong = 1;
	storm_signals++;
}

static const char *check_signal_storm(void)
{
	struct sigaction sa = { 0 };
	long calls = 0;
	char here;
	char *volatile frame = &here;

	storm_ppid = getppid();
	sa.sa_handler = on_storm;
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGALRM, &sa, NULL) || set_timer(100, 100))
		return "sigaction/setitimer";
	while (storm_signals < STORM_SIGNALS && calls < 200000000L) {
		if (getppid() != storm_ppid || syscall(SYS_getppid) != storm_ppid)
			storm_wrong = 1;
		if (frame != &here)
			return "the stack moved under a bypassed call";
		calls++;
	}
	set_timer(0, 0);
	printf("bypass: %d signals during %ld pairs of bypassed calls\n",
	       (int)storm_signals, calls);
	if (storm_wrong)
		return "a bypassed getppid() returned a wrong value";
	if (storm_signals < STORM_SIGNALS)
		return "too few signals";
	return NULL;
}

/*
 * A blocking call interrupted by a signal: restarted with SA_RESTART (the
 * handler writes the byte the read then gets), EINTR without.
 */
static const char *check_restart(void)
{
	int fds[2];
	char c;
	const char *why = NULL;

	if (pipe(fds))
		return "pipe";
	wake_fd = fds[1];
	alarms = 0;
	if (handle_alarm(SA_RESTART) || set_timer(20000, 0))
		why = "sigaction/setitimer";
	else if (read(fds[0], &c, 1) != 1 || c != 'w' || alarms != 1)
		why = "SA_RESTART read did not restart and get the handler's byte";
	wake_fd = -1;
	alarms = 0;
	if (!why && (handle_alarm(0) || set_timer(20000, 0)))
		why = "sigaction/setitimer";
	else if (!why && (read(fds[0], &c, 1) != -1 || errno != EINTR))
		why = "read without SA_RESTART did not fail with EINTR";
	close(fds[0]);
	close(fds[1]);
	return why;
}


/*
 * A signal found at the end of a bypassed call is delivered from a frame
 * that holds the caller's registers: the handler's context shows them, and
 * rt_sigreturn gives them back.
 */
static const char *check_signal_frame(void)
{
	long pid = getpid(), ret;

	if (catch_usr1())
		return "sigaction";
	{
		/*
		 * Registers the call preserves and the asm does not set; no
		 * function call between here and the asm may clobber them.
		 */
		register const unsigned long *in __asm__("r8") = regs_in;
		register unsigned long *out __asm__("r9") = regs_after;

		__asm__ volatile("push %%rbp\n\t"
				 "movq 0(%[in]), %%rbx\n\t"
				 "movq 8(%[in]), %%rbp\n\t"
				 "movq 16(%[in]), %%r12\n\t"
				 "movq 24(%[in]), %%r13\n\t"
				 "movq 32(%[in]), %%r14\n\t"
				 "movq 40(%[in]), %%r15\n\t"
				 "call ukl_entry_SYSCALL_64\n\t"
				 "movq %%rbx, 0(%[out])\n\t"
				 "movq %%rbp, 8(%[out])\n\t"
				 "movq %%r12, 16(%[out])\n\t"
				 "movq %%r13, 24(%[out])\n\t"
				 "movq %%r14, 32(%[out])\n\t"
				 "movq %%r15, 40(%[out])\n\t"
				 "pop %%rbp"
				 : "=a"(ret)
				 : "a"((long)SYS_kill), "D"(pid), "S"((long)SIGUSR1),
				   [in] "r"(in), [out] "r"(out)
				 : "rcx", "r11", "rbx", "r12", "r13", "r14", "r15", "memory",
				   "cc");
	}
	if (ret != 0)
		return "kill(getpid(), SIGUSR1) failed";
	return callee_saved_verdict();
}

/*
 * On one CPU, a process that only makes bypassed calls still lets another
 * one run: a forked child counts in shared memory while we loop.
 */
static const char *check_sched(void)
{
	volatile long *counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	long before, after;
	pid_t pid;
	int status;

	if (counter == MAP_FAILED)
		return "mmap";
	pid = fork();
	if (pid < 0)
		return "fork";
	if (pid == 0) {
		ukl_bypass(0);
		for (;;)
			(*counter)++;
	}
	before = *counter;
	for (long i = 0; i < 2000000L && *counter == before; i++)
		getppid();
	after = *counter;
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	if (after == before)
		return "the other process never ran during 2M bypassed calls";
	printf("bypass: other process ran (%ld increments seen)\n", after - before);
	return NULL;
}

int main(int argc, char **argv)
{
	printf("bypass: cpl=%u\n", cpl());
	if (ukl_bypass(1) < 0) {
		printf("bypass: unsupported (errno %d)\n", errno);
		return 3;
	}
	if (argc > 1 && !strcmp(argv[1], "--storm")) {
		report("signal-storm", check_signal_storm());
		printf("bypass: %d failure(s)\n", failures);
		return failures;
	}
	report("toggle", check_toggle());
	report("inherit", check_inherit());
	report("signal-in-loop", check_signal_in_loop());
	report("restart", check_restart());
	report("signal-frame", check_signal_frame());
	report("sched", check_sched());
	printf("bypass: %d failure(s)\n", failures);
	return failures;
}
