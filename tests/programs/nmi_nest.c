/*
 * NMIs against the UKL IST stacks, with /ukl_nmi_nest.ko
 * (tests/programs/ukl_nmi_nest):
 *
 *  1. an NMI taken while a fault's frame is still on the IST stack the
 *     fault came in on, whose handler faults too (a general protection
 *     fault, then a page fault);
 *  2. with 2 CPUs and UKL IST stacks (a UKL kernel): an unprivileged
 *     ordinary process (/ist_rsp) points its stack pointer just above the
 *     bottom of CPU 1's UKL IST stack, then of its page-fault IST stack,
 *     and spins there while the module sends CPU 1 NMIs. The NMI must not
 *     take that stack pointer for the kernel's own.
 *
 * Prints the module's reports from the kernel log ("nmi_nest: kernel log:
 * ..."), "nmi_nest: ok WHAT" or "nmi_nest: FAIL WHAT: why" per part, and
 * "nmi_nest: N failure(s)" at the end, after a few more system calls that
 * show the machine still works.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SYSLOG_ACTION_READ_CLEAR 4
/* EXCEPTION_STKSZ without KASAN: the size of every UKL IST stack. */
#define IST_STACK_SIZE 8192
#define POKES 5

static char log_buf[1 << 16];
static unsigned long ist5, ist6;	/* CPU 1's entries */
static int failures;

static void check(const char *what, int ok, const char *why)
{
	if (ok) {
		printf("nmi_nest: ok %s\n", what);
	} else {
		printf("nmi_nest: FAIL %s: %s\n", what, why);
		failures++;
	}
	fflush(stdout);
}

/* Prints the module's new lines of the kernel log and notes CPU 1's IST. */
static void print_module_report(void)
{
	int len = klogctl(SYSLOG_ACTION_READ_CLEAR, log_buf, sizeof(log_buf) - 1);
	char *line, *save, *report;

	if (len < 0) {
		printf("nmi_nest: cannot read the kernel log: %s\n", strerror(errno));
		return;
	}
	log_buf[len] = '\0';
	for (line = strtok_r(log_buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		report = strstr(line, "ukl_nmi_nest: ");
		if (!report)
			continue;
		printf("nmi_nest: kernel log: %s\n", report);
		sscanf(report, "ukl_nmi_nest: cpu 1 IST5 %lx IST6 %lx", &ist5, &ist6);
	}
	fflush(stdout);
}

/* Loads the module with @params; the errno its load failed with. */
static int load_module(const char *params)
{
	int fd = open("/ukl_nmi_nest.ko", O_RDONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return errno;
	if (syscall(SYS_finit_module, fd, params, 0))
		err = errno;
	close(fd);
	print_module_report();
	return err;
}

/* Part 2 for one IST stack, whose entry (its top) is @top. */
static void user_sp_on(const char *what, unsigned long top)
{
	unsigned long sp = top - IST_STACK_SIZE + 8;
	char arg[32], params[32], line[128] = "";
	int pipefd[2], status, err;
	FILE *out;
	pid_t pid;

	snprintf(arg, sizeof(arg), "%lx", sp);
	if (pipe(pipefd)) {
		check(what, 0, "pipe");
		return;
	}
	pid = fork();
	if (pid == 0) {
		dup2(pipefd[1], 1);
		execl("/ist_rsp", "ist_rsp", "1", arg, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	out = fdopen(pipefd[0], "r");
	/* Its line comes just before it points its stack pointer there. */
	if (!out || !fgets(line, sizeof(line), out) || !strstr(line, "spinning")) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		check(what, 0, "/ist_rsp did not start");
		return;
	}
	usleep(100000);
	snprintf(params, sizeof(params), "poke_cpu=1 pokes=%d", POKES);
	err = load_module(params);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	fclose(out);
	check(what, err == ECANCELED && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	      err != ECANCELED ? strerror(err) : "/ist_rsp did not end by SIGKILL");
}

int main(void)
{
	long sum = 0;
	int err;

	err = load_module("");
	check("nmi-during-fault-entry", err == ECANCELED, strerror(err));
	if (sysconf(_SC_NPROCESSORS_ONLN) >= 2 && ist5) {
		user_sp_on("user-sp-on-ukl-ist", ist5);
		if (ist6)
			user_sp_on("user-sp-on-ukl-pf-ist", ist6);
	} else {
		printf("nmi_nest: no UKL IST stacks on a second CPU\n");
	}
	for (int i = 0; i < 1000; i++)
		sum += getppid();
	printf("nmi_nest: %d failure(s) (%ld)\n", failures, sum);
	return failures != 0;
}
