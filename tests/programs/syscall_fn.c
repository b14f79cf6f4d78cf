/*
 * Boot-test program for the C library's syscall() on UKL: it enters the
 * kernel through ukl_syscall, with its own registers (number in rdi, the
 * sixth argument in rax), and with UKL_BYP takes the fast bypass from there.
 *
 * Each check prints "syscall_fn: ok NAME" or "syscall_fn: FAIL NAME: why";
 * the exit status is the number of failures. "--bypass" turns UKL_BYP
 * bypass on first (exit 3 if the kernel cannot).
 *
 * The checks are what differs from ukl_entry_SYSCALL_64: all six arguments
 * arrive, errors set errno, a call interrupted by a signal restarts (with
 * SA_RESTART, and through restart_syscall() after a stop) or fails with
 * EINTR, and a signal delivered at the end of a call sees, and gives back,
 * the caller's callee-saved registers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "callee_saved.h"
#if __has_include(<ukl.h>)
#include <ukl.h>
#endif

static int failures;
static volatile sig_atomic_t alarms;
static volatile int wake_fd = -1;

static void report(const char *name, const char *why)
{
	if (why) {
		printf("syscall_fn: FAIL %s: %s (errno %d)\n", name, why, errno);
		failures++;
	} else {
		printf("syscall_fn: ok %s\n", name);
	}
	fflush(stdout);
}

/* syscall() with six arguments: mmap of a file at a non-zero offset. */
static const char *check_args6(void)
{
	static const char text[] = "sixth argument";
	long page = sysconf(_SC_PAGESIZE);
	int fd = (int)syscall(SYS_memfd_create, "syscall_fn", 0L);
	const char *why = NULL;
	char *p;

	if (fd < 0)
		return "memfd_create";
	if (pwrite(fd, text, sizeof(text), page) != (ssize_t)sizeof(text)) {
		close(fd);
		return "pwrite";
	}
	p = (char *)syscall(SYS_mmap, NULL, page, (long)PROT_READ, (long)MAP_SHARED, (long)fd,
			    page);
	if (p == MAP_FAILED)
		why = "mmap through syscall()";
	else if (memcmp(p, text, sizeof(text)))
		why = "the mapping does not start at the sixth argument's offset";
	if (p != MAP_FAILED)
		munmap(p, page);
	close(fd);
	return why;
}

static const char *check_errno(void)
{
	errno = 0;
	if (syscall(-1L) != -1 || errno != ENOSYS)
		return "syscall(-1) did not fail with ENOSYS";
	errno = 0;
	if (syscall(SYS_close, -1L) != -1 || errno != EBADF)
		return "close(-1) through syscall() did not fail with EBADF";
	if (syscall(SYS_getppid) != getppid() || syscall(SYS_getpid) != getpid())
		return "getppid/getpid through syscall() disagree with the wrappers";
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

static int handle_alarm(int flags)
{
	struct sigaction sa = { 0 };
	struct itimerval it = { { 0, 0 }, { 0, 20000 } };

	sa.sa_handler = on_alarm;
	sa.sa_flags = flags;
	if (sigaction(SIGALRM, &sa, NULL))
		return -1;
	return setitimer(ITIMER_REAL, &it, NULL);
}

/*
 * A blocking read through syscall() interrupted by a signal: restarted
 * with SA_RESTART (the handler writes the byte the read then gets), EINTR
 * without.
 */
static const char *check_restart(void)
{
	int fds[2];
	char c = 0;
	long n;
	const char *why = NULL;

	if (pipe(fds))
		return "pipe";
	wake_fd = fds[1];
	alarms = 0;
	if (handle_alarm(SA_RESTART))
		why = "sigaction/setitimer";
	else if ((n = syscall(SYS_read, (long)fds[0], &c, 1L)) != 1 || c != 'w' || alarms != 1)
		why = "SA_RESTART read did not restart and get the handler's byte";
	wake_fd = -1;
	alarms = 0;
	if (!why && handle_alarm(0))
		why = "sigaction/setitimer";
	else if (!why && (syscall(SYS_read, (long)fds[0], &c, 1L) != -1 || errno != EINTR))
		why = "read without SA_RESTART did not fail with EINTR";
	close(fds[0]);
	close(fds[1]);
	return why;
}

static long elapsed_ms(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1000 + (b->tv_nsec - a->tv_nsec) / 1000000;
}

/*
 * A sleep through syscall() that a child stops and continues: the kernel
 * restarts it through restart_syscall() (ERESTART_RESTARTBLOCK), and it
 * still sleeps its whole time and returns 0.
 */
static const char *check_restart_block(void)
{
	struct timespec req = { 0, 300 * 1000 * 1000 }, t0, t1;
	pid_t parent = getpid(), child;
	int status;
	long ret;

	child = fork();
	if (child < 0)
		return "fork";
	if (child == 0) {
		struct timespec d = { 0, 50 * 1000 * 1000 };

		nanosleep(&d, NULL);
		kill(parent, SIGSTOP);
		nanosleep(&d, NULL);
		kill(parent, SIGCONT);
		_exit(0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = syscall(SYS_clock_nanosleep, (long)CLOCK_MONOTONIC, 0L, &req, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return "the child did not stop and continue us";
	if (ret != 0)
		return "clock_nanosleep through syscall() did not come back with 0";
	if (elapsed_ms(&t0, &t1) < 290)
		return "clock_nanosleep through syscall() returned early";
	return NULL;
}


/*
 * A signal found at the end of a call through syscall() is delivered from
 * a frame that holds the caller's callee-saved registers, and they are
 * still there when syscall() returns. syscall() is called from assembly so
 * that nothing else touches them in between.
 */
static const char *check_signal_frame(void)
{
	long nr = SYS_kill, pid = getpid(), sig = SIGUSR1, ret;

	if (catch_usr1())
		return "sigaction";
	{
		register const unsigned long *in __asm__("r8") = regs_in;
		register unsigned long *out __asm__("r9") = regs_after;

		/* syscall(SYS_kill, pid, SIGUSR1); 16-byte aligned at the call. */
		__asm__ volatile("push %%rbp\n\t"
				 "push %[out]\n\t"
				 "movq 0(%[in]), %%rbx\n\t"
				 "movq 8(%[in]), %%rbp\n\t"
				 "movq 16(%[in]), %%r12\n\t"
				 "movq 24(%[in]), %%r13\n\t"
				 "movq 32(%[in]), %%r14\n\t"
				 "movq 40(%[in]), %%r15\n\t"
				 "xorl %%eax, %%eax\n\t"
				 "call syscall\n\t"
				 "pop %%r9\n\t"
				 "movq %%rbx, 0(%%r9)\n\t"
				 "movq %%rbp, 8(%%r9)\n\t"
				 "movq %%r12, 16(%%r9)\n\t"
				 "movq %%r13, 24(%%r9)\n\t"
				 "movq %%r14, 32(%%r9)\n\t"
				 "movq %%r15, 40(%%r9)\n\t"
				 "pop %%rbp"
				 : "=a"(ret), [in] "+r"(in), [out] "+r"(out), "+D"(nr), "+S"(pid), "+d"(sig)
				 :
				 : "rbx", "rcx", "r10", "r11", "r12", "r13", "r14", "r15", "memory",
				   "cc");
	}
	if (ret != 0)
		return "syscall(SYS_kill, getpid(), SIGUSR1) failed";
	return callee_saved_verdict();
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--bypass")) {
#if __has_include(<ukl.h>)
		if (ukl_bypass(1) < 0) {
			printf("syscall_fn: bypass unsupported (errno %d)\n", errno);
			return 3;
		}
		printf("syscall_fn: bypass on\n");
#else
		printf("syscall_fn: bypass needs the UKL toolchain\n");
		return 3;
#endif
	}
	report("args6", check_args6());
	report("errno", check_errno());
	report("restart", check_restart());
	report("restart-block", check_restart_block());
	report("signal-frame", check_signal_frame());
	printf("syscall_fn: %d failure(s)\n", failures);
	return failures;
}
