/*
 * Kernel tracing beside a UKL application.
 *
 * This program, the application itself (root), puts kprobes (at a
 * function's first instruction, riding on its ftrace call, and further in,
 * an INT3) and the function tracer on kernel functions while it makes
 * calls:
 *  - on a system call's body: every call is seen, none is harmed;
 *  - on ktime_get_real_ts64(), which the application's clock_gettime()
 *    once ran in application mode (ukl_vdso_clock_gettime() called it):
 *    every clock read still answers, and no probe's INT3 or handler is
 *    taken for the application's;
 *  - on the application's own code and the vDSO stand-ins, which are
 *    application code: kprobes and the function tracer must refuse them;
 *  - the same through register_kprobe() from a module (/ukl_probe.ko, when
 *    the image has it): refused on the application's code and the
 *    stand-ins, accepted on a kernel function;
 *  - first of all, an INT3 kprobe set after the application forked, hit by
 *    the child: the probe's out-of-line instruction slot is new module
 *    memory, which the child's copy of the kernel image's page tables
 *    (full fork) must map too.
 *
 * Prints "trace_vdso: ok WHAT" or "trace_vdso: FAIL WHAT: why" per check.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TRACING "/sys/kernel/tracing"
#define CALLS 200

static int failures;
static int kmsg = -1;

/*
 * A line of the report. Through the kernel log when it can: the kernel's
 * own messages (a refused probe's warning) then never cut into a line on
 * the console, as they can into a program's output on 2 CPUs.
 */
static void __attribute__((format(printf, 1, 2))) say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n >= (int)sizeof(line))
		n = sizeof(line) - 1;
	if (kmsg >= 0 && write(kmsg, line, n) == n)
		return;
	fputs(line, stdout);
	fflush(stdout);
}

/* The kernel log, without its rate limit for writers (root). */
static void open_kmsg(void)
{
	int fd = open("/proc/sys/kernel/printk_devkmsg", O_WRONLY);

	if (fd < 0 || write(fd, "on\n", 3) != 3) {
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	kmsg = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
}

static void check(const char *what, int ok, const char *why)
{
	if (ok)
		say("trace_vdso: ok %s\n", what);
	else
		say("trace_vdso: FAIL %s: %s\n", what, why);
	failures += !ok;
}

static int write_file_quiet(const char *name, const char *text, int quiet)
{
	char path[128];
	int fd, ok;

	snprintf(path, sizeof(path), TRACING "/%s", name);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0) {
		say("trace_vdso: open %s: %s\n", path, strerror(errno));
		return 0;
	}
	ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	if (!ok && !quiet)
		say("trace_vdso: write %s: %s\n", path, strerror(errno));
	close(fd);
	return ok;
}

static int write_file(const char *name, const char *text)
{
	return write_file_quiet(name, text, 0);
}

/* Read a tracing file whole (NUL-terminated) into buf. */
static int read_file(const char *name, char *buf, size_t size)
{
	char path[128];
	size_t used = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), TRACING "/%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	while (used + 1 < size && (n = read(fd, buf + used, size - used - 1)) > 0)
		used += n;
	buf[used] = '\0';
	close(fd);
	return 1;
}

/* How many of CALLS calls of clock_gettime() gave a sane time. */
static int call_clock(void)
{
	struct timespec ts;
	int good = 0;

	for (int i = 0; i < CALLS; i++)
		good += clock_gettime(CLOCK_REALTIME, &ts) == 0 && ts.tv_sec > 0;
	return good;
}

/* How many of CALLS calls of getppid() answered. */
static int call_getppid(void)
{
	int good = 0;

	for (int i = 0; i < CALLS; i++)
		good += getppid() >= 0;
	return good;
}

/* A child forked before the first probe is set; it calls when told to. */
static int child_go[2], child_done[2];
static pid_t child = -1;

static void fork_waiting_child(void)
{
	int good;
	char c;

	if (pipe(child_go) || pipe(child_done))
		return;
	child = fork();
	if (child != 0)
		return;
	if (read(child_go[0], &c, 1) != 1)
		_exit(1);
	good = call_getppid();
	_exit(write(child_done[1], &good, sizeof(good)) == sizeof(good) ? 0 : 1);
}

/* How many of CALLS calls of getppid() answered in that child. */
static int call_getppid_in_child(void)
{
	int good = 0, status;

	if (child <= 0)
		return 0;
	if (write(child_go[1], "g", 1) != 1 ||
	    read(child_done[0], &good, sizeof(good)) != sizeof(good))
		good = 0;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		good = 0;
	return good;
}

/*
 * Set a kprobe on @func at the first offset from @min that kprobes accept
 * (an instruction boundary): at 0 it rides on the function's ftrace call,
 * further in it is an INT3. Returns the offset, or -1.
 */
static int set_kprobe(const char *func, int min)
{
	char probe[128];

	for (int off = min; off < 64; off++) {
		snprintf(probe, sizeof(probe), "p:ukl/probe %s+%d\n", func, off);
		if (write_file_quiet("kprobe_events", probe, 1))
			return off;
	}
	return -1;
}

/*
 * Probe @func while @call runs: every call must answer, and the probe must
 * have hit at least @min_hits times.
 */
static void kprobe(const char *what, const char *func, int min_off,
		   int (*call)(void), unsigned long min_hits)
{
	char buf[4096], *line;
	unsigned long hits = 0;
	int good, off;

	off = set_kprobe(func, min_off);
	if (off < 0 || !write_file("events/ukl/probe/enable", "1")) {
		check(what, 0, "could not set the probe");
		return;
	}
	good = call();
	write_file("events/ukl/probe/enable", "0");
	read_file("kprobe_profile", buf, sizeof(buf));
	line = strstr(buf, "probe ");
	if (line)
		hits = strtoul(line + 6, NULL, 10);
	write_file("kprobe_events", "\n");
	say("trace_vdso: %s: %s+%d hit %lu times in %d good calls\n", what,
	       func, off, hits, good);
	check(what, good == CALLS && hits >= min_hits, "calls or hits missing");
}

/* The application's code, the vDSO stand-ins included, cannot be probed. */
static void kprobe_refused(const char *what, const char *func)
{
	int off = set_kprobe(func, 0);

	if (off >= 0)
		write_file("kprobe_events", "\n");
	check(what, off < 0, "kprobes accepted a probe there");
}

int main(void);

/* The vDSO stand-in, on a UKL kernel only (no definition on stock). */
extern int ukl_vdso_clock_gettime(clockid_t clock, struct timespec *ts) __attribute__((weak));

/*
 * Load /ukl_probe.ko with @params: its load fails with register_kprobe()'s
 * error, or ECANCELED if the probe was accepted. Returns that errno, or 0
 * if the module loaded (it never should).
 */
static int module_probe(const char *params)
{
	int fd = open("/ukl_probe.ko", O_RDONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -1;
	if (syscall(SYS_finit_module, fd, params, 0))
		err = errno;
	close(fd);
	say("trace_vdso: ukl_probe.ko %s: %s\n", params, err ? strerror(err) : "loaded");
	return err;
}

static void module_probes(void)
{
	char params[64];
	int err;

	if (access("/ukl_probe.ko", R_OK))
		return;
	check("kprobe-module-kernel", module_probe("sym=__x64_sys_getppid") == ECANCELED,
	      "register_kprobe() refused a kernel function");
	/* Refused: EINVAL on UKL; on stock, main() is no kernel text at all. */
	snprintf(params, sizeof(params), "addr=%lu", (unsigned long)main);
	err = module_probe(params);
	check("kprobe-module-refused-app", err > 0 && err != ECANCELED,
	      "register_kprobe() did not refuse the application's main()");
	if (ukl_vdso_clock_gettime) {
		snprintf(params, sizeof(params), "addr=%lu",
			 (unsigned long)ukl_vdso_clock_gettime);
		check("kprobe-module-refused-vdso", module_probe(params) == EINVAL,
		      "register_kprobe() did not refuse a vDSO stand-in");
	}
}

/* Trace @func with the function tracer while @call runs. */
static void function_tracer(const char *what, const char *func,
			    int (*call)(void), int min_seen)
{
	static char buf[1 << 17];
	char filter[96];
	int good, seen = 0;
	char *p;

	snprintf(filter, sizeof(filter), "%s\n", func);
	if (!write_file("set_ftrace_filter", filter) ||
	    !write_file("trace", "") || !write_file("current_tracer", "function")) {
		check(what, 0, "could not start the tracer");
		return;
	}
	good = call();
	/* Read before changing tracers: that empties the buffer. */
	write_file("tracing_on", "0");
	read_file("trace", buf, sizeof(buf));
	write_file("current_tracer", "nop");
	write_file("set_ftrace_filter", "");
	write_file("tracing_on", "1");
	for (p = buf; (p = strstr(p, func)); p++)
		seen++;
	say("trace_vdso: %s: the tracer saw %s %d times in %d good calls\n",
	       what, func, seen, good);
	check(what, good == CALLS && seen >= min_seen, "calls or trace entries missing");
}

int main(void)
{
	mkdir("/sys", 0755);
	if (mount("sysfs", "/sys", "sysfs", 0, NULL) && errno != EBUSY)
		perror("trace_vdso: mount /sys");
	if (mount("tracefs", TRACING, "tracefs", 0, NULL) && errno != EBUSY)
		perror("trace_vdso: mount tracefs");
	open_kmsg();

	/* Module memory allocated after a fork, used by the child. */
	fork_waiting_child();
	kprobe("kprobe-int3-forked-child", "__x64_sys_getppid", 1, call_getppid_in_child, CALLS);
	/* A system call's body: the probes and the tracer see every call. */
	kprobe("kprobe-syscall", "__x64_sys_getppid", 0, call_getppid, CALLS);
	kprobe("kprobe-int3-syscall", "__x64_sys_getppid", 1, call_getppid, CALLS);
	function_tracer("ftrace-syscall", "__task_pid_nr_ns", call_getppid, CALLS);
	/* The kernel's timekeeping while the application reads clocks. */
	kprobe("kprobe-timekeeping", "ktime_get_real_ts64", 0, call_clock, 0);
	kprobe("kprobe-int3-timekeeping", "ktime_get_real_ts64", 1, call_clock, 0);
	function_tracer("ftrace-timekeeping", "ktime_get_real_ts64", call_clock, 0);
	/* The application's own code and the stand-ins it calls. */
	kprobe_refused("kprobe-refused-vdso", "ukl_vdso_clock_gettime");
	kprobe_refused("kprobe-refused-app", "__ukl_main");
	module_probes();
	check("ftrace-refused-vdso",
	      !write_file_quiet("set_ftrace_filter", "ukl_vdso_clock_gettime\n", 1),
	      "the function tracer accepted a stand-in");
	say("trace_vdso: %d failure(s)\n", failures);
	return failures != 0;
}
