/*
 * Boot-test program, the UKL application under attack (see attacker.c, an
 * ordinary process beside it). It forks a child that keeps its own copy of
 * the static secret, with another value, then publishes both pids and the
 * addresses of two secrets (one in its static data, in the kernel image;
 * one on its heap, in the user half) in /tmp/guarded.info, tries what it
 * may not do
 * itself (a second start, PTRACE_TRACEME), waits for the attacker to
 * finish, checks that both secrets are intact, and restarts itself by exec
 * of the trigger file (refused first while a pipe holds a page of its
 * static data). Prints "guarded_app: ok WHAT" or "FAIL WHAT"; the
 * exit status is the number of failures.
 *
 * Started with "probe-NAME" as argv[1] it is a start that must have been
 * refused: it says so and exits 99.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define SECRET 0x5ec7e75ec7e7L
#define CHILD_SECRET 0xc41d5ec7e7L
#define TRIGGER "/UKL"

static volatile long static_secret = SECRET;
static int failures;

static void check(const char *what, int ok)
{
	printf("guarded_app: %s %s\n", ok ? "ok" : "FAIL", what);
	fflush(stdout);
	failures += !ok;
}

static int cpl(void)
{
	unsigned short cs;

	__asm__ volatile("mov %%cs, %0" : "=r"(cs));
	return cs & 3;
}

/* A second instance from a child of this one: refused with EBUSY. */
static void second_start(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		char *argv[] = { TRIGGER, "probe-second-start", NULL };

		execv(TRIGGER, argv);
		_exit(errno == EBUSY ? 0 : 1);
	}
	check("a second start is refused with EBUSY",
	      pid > 0 && waitpid(pid, &status, 0) == pid &&
	      WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static int wait_for(const char *path, int seconds)
{
	for (int i = 0; i < seconds * 10; i++) {
		if (access(path, F_OK) == 0)
			return 1;
		usleep(100000);
	}
	return 0;
}

/*
 * A forked child, a second target: its copy of the static secret holds
 * CHILD_SECRET until the attacker is done. Exits 0 if it still does.
 */
static pid_t guarded_child(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		static_secret = CHILD_SECRET;
		if (!wait_for("/tmp/attack.done", 240))
			_exit(2);
		_exit(static_secret == CHILD_SECRET ? 0 : 1);
	}
	return pid;
}

/*
 * vmsplice() of a static buffer pins its pages in the pipe. A restart
 * resets the static data, which the pipe's reader would then see: it is
 * refused with EBUSY while the pipe holds them, and may go ahead once the
 * pipe is drained (main()).
 */
static char spliced[8192];

static void restart_while_spliced(char **restart)
{
	struct iovec iov = { spliced, sizeof(spliced) };
	char back[sizeof(spliced)];
	size_t got = 0;
	int fds[2];
	ssize_t n;

	memset(spliced, 's', sizeof(spliced));
	if (pipe(fds)) {
		check("a pipe", 0);
		return;
	}
	n = vmsplice(fds[1], &iov, 1, 0);
	if (n != (ssize_t)sizeof(spliced))
		printf("guarded_app: vmsplice: %zd (%s)\n", n, strerror(errno));
	check("vmsplice of a static buffer", n == (ssize_t)sizeof(spliced));
	if (n > 0) {
		errno = 0;
		execv(TRIGGER, restart);
		check("a restart while a pipe holds its static data is refused with EBUSY",
		      errno == EBUSY);
	}
	while (n > 0 && got < sizeof(back)) {
		ssize_t r = read(fds[0], back + got, sizeof(back) - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	check("the pipe gives back the spliced bytes",
	      got == sizeof(spliced) && !memcmp(back, spliced, sizeof(spliced)));
	close(fds[0]);
	close(fds[1]);
}

int main(int argc, char **argv)
{
	volatile long *heap_secret = malloc(64);
	char *restart[] = { TRIGGER, "restarted", NULL };
	FILE *info;
	pid_t child;
	int status;

	if (argc > 1 && !strncmp(argv[1], "probe-", 6)) {
		printf("guarded_app: STARTED by %s uid=%d cpl=%d\n", argv[1], getuid(), cpl());
		return 99;
	}
	if (argc > 1 && !strcmp(argv[1], "restarted")) {
		printf("guarded_app: restarted cpl=%d\n", cpl());
		return 0;
	}
	printf("guarded_app: cpl=%d pid=%d\n", cpl(), getpid());
	*heap_secret = SECRET;

	second_start();
	errno = 0;
	check("PTRACE_TRACEME is refused",
	      ptrace(PTRACE_TRACEME, 0, NULL, NULL) == -1 && errno == EPERM);

	child = guarded_child();
	check("fork", child > 0);
	info = fopen("/tmp/guarded.info.new", "w");
	if (!info)
		return 1;
	fprintf(info, "%d %p %p %d\n", getpid(), (void *)&static_secret, (void *)heap_secret,
		child);
	fclose(info);
	rename("/tmp/guarded.info.new", "/tmp/guarded.info");

	check("the attacker finished", wait_for("/tmp/attack.done", 240));
	check("the static secret is intact", static_secret == SECRET);
	check("the heap secret is intact", *heap_secret == SECRET);
	check("the forked child's static secret is intact",
	      child > 0 && waitpid(child, &status, 0) == child &&
	      WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (failures)
		return failures;
	restart_while_spliced(restart);
	if (failures)
		return failures;
	/* Alone in its address space, the instance may replace itself. */
	execv(TRIGGER, restart);
	check("restart by exec of the trigger", 0);
	return failures;
}
