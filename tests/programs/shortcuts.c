/*
 * Boot-test program for the UKL shortcuts (CONFIG_UKL_SHORTCUTS) and
 * run-to-completion (CONFIG_UKL_RTC), all declared in <ukl.h>.
 *
 *   shortcuts checks       error cases, pinned buffers, run-to-completion;
 *                          each check prints "shortcuts: ok NAME" or
 *                          "shortcuts: FAIL NAME: why"; the exit status is
 *                          the number of failures
 *   shortcuts unsupported  on a kernel without the options: every call
 *                          must say so (-ENOSYS, EOPNOTSUPP)
 *   shortcuts echo PORT    a TCP echo server whose every byte goes through
 *                          ukl_tcp_recv/ukl_tcp_send and a pinned buffer;
 *                          "quit" ends it with the byte count
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if __has_include(<ukl.h>)
#include <ukl.h>
#define HAVE_UKL_H 1
#else
/*
 * An ordinary build, for the stock kernel: the shortcut numbers as raw
 * system calls, which a kernel without UKL must refuse like any unknown one.
 */
#include <sys/syscall.h>
#define UKL_NR_BASE 0x20000000L

static long ukl_raw(long nr, long a, long b, long c, long d)
{
	long ret = syscall(nr, a, b, c, d);

	return ret < 0 ? -errno : ret;
}

static ssize_t ukl_tcp_send(int fd, const void *buf, size_t len, int flags)
{
	return ukl_raw(UKL_NR_BASE, fd, (long)buf, (long)len, flags);
}

static ssize_t ukl_tcp_recv(int fd, void *buf, size_t len, int flags)
{
	return ukl_raw(UKL_NR_BASE + 1, fd, (long)buf, (long)len, flags);
}

static void *ukl_pinned_alloc(size_t size)
{
	long ret = ukl_raw(UKL_NR_BASE + 2, (long)size, 0, 0, 0);

	if (ret < 0) {
		errno = (int)-ret;
		return NULL;
	}
	return (void *)ret;
}

/* Not a system call: an ordinary build has no way to ask for it. */
static int ukl_run_to_completion(int on)
{
	(void)on;
	errno = EOPNOTSUPP;
	return -1;
}
#endif

#define PINNED_PAGES	64

static int failures;

static void report(const char *name, const char *why)
{
	if (why) {
		printf("shortcuts: FAIL %s: %s (errno %d)\n", name, why, errno);
		failures++;
	} else {
		printf("shortcuts: ok %s\n", name);
	}
	fflush(stdout);
}

static unsigned int cpl(void)
{
	unsigned short cs;

	__asm__ volatile("mov %%cs, %0" : "=r"(cs));
	return cs & 3;
}

/* A connected TCP pair over loopback: *a is the client, *b the server. */
static int tcp_pair(int *a, int *b)
{
	struct sockaddr_in addr = { .sin_family = AF_INET,
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(addr);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&addr, len) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&addr, &len))
		return -1;
	*a = socket(AF_INET, SOCK_STREAM, 0);
	if (*a < 0 || connect(*a, (struct sockaddr *)&addr, len))
		return -1;
	*b = accept(l, NULL, NULL);
	close(l);
	return *b < 0 ? -1 : 0;
}

/* Data through the shortcut reaches an ordinary recv() and back. */
static const char *check_tcp(void)
{
	char buf[64] = "";
	int a, b;

	if (tcp_pair(&a, &b))
		return "no loopback TCP pair";
	if (ukl_tcp_send(a, "ping", 4, 0) != 4)
		return "ukl_tcp_send did not send 4 bytes";
	if (recv(b, buf, sizeof(buf), 0) != 4 || memcmp(buf, "ping", 4))
		return "recv() did not get what ukl_tcp_send sent";
	if (send(b, "pong!", 5, 0) != 5)
		return "send() failed";
	if (ukl_tcp_recv(a, buf, sizeof(buf), 0) != 5 || memcmp(buf, "pong!", 5))
		return "ukl_tcp_recv did not get what send() sent";
	if (ukl_tcp_recv(a, buf, sizeof(buf), MSG_DONTWAIT) != -EAGAIN)
		return "empty non-blocking receive is not -EAGAIN";
	if (ukl_tcp_send(a, (void *)8, 16, 0) != -EFAULT)
		return "a bad buffer is not -EFAULT";
	close(b);
	if (ukl_tcp_recv(a, buf, sizeof(buf), 0) != 0)
		return "receive after the peer closed is not 0 (EOF)";
	close(a);
	return NULL;
}

/* What the shortcuts do not handle, they refuse with the documented error. */
static const char *check_refusals(void)
{
	int p[2], u, sv[2];
	char c = 0;

	if (pipe(p) || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return "no pipe or socketpair";
	u = socket(AF_INET, SOCK_DGRAM, 0);
	if (ukl_tcp_send(p[1], &c, 1, 0) != -ENOTSOCK)
		return "a pipe is not -ENOTSOCK";
	if (ukl_tcp_recv(p[0], &c, 1, 0) != -ENOTSOCK)
		return "a pipe (recv) is not -ENOTSOCK";
	if (ukl_tcp_send(u, &c, 1, 0) != -EOPNOTSUPP)
		return "a UDP socket is not -EOPNOTSUPP";
	if (ukl_tcp_send(sv[0], &c, 1, 0) != -EOPNOTSUPP)
		return "a unix socket is not -EOPNOTSUPP";
	if (ukl_tcp_send(9999, &c, 1, 0) != -EBADF)
		return "a closed descriptor is not -EBADF";
	close(p[0]);
	close(p[1]);
	close(u);
	close(sv[0]);
	close(sv[1]);
	return NULL;
}

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* A "Field: N kB" line of a /proc file (meminfo, self/status), or -1. */
static long proc_kb(const char *path, const char *field)
{
	FILE *f = fopen(path, "r");
	char line[128];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)) &&
		    sscanf(line + strlen(field), ": %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static long vmalloc_used_kb(void)
{
	return proc_kb("/proc/meminfo", "VmallocUsed");
}

static long status_kb(const char *field)
{
	return proc_kb("/proc/self/status", field);
}

static int mapped_as_pinned(void *p)
{
	char want[32], line[256];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	snprintf(want, sizeof(want), "%lx-", (unsigned long)p);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, want, strlen(want)) && strstr(line, "[ukl_pinned]"))
			found = 1;
	if (f)
		fclose(f);
	return found;
}

/*
 * Pinned buffers: resident from the start (touching every page costs no
 * fault), usable for I/O, kernel memory counted as pinned (VmPin) that
 * munmap() gives back, one piece, not inherited by fork(), contents kept
 * across MADV_DONTNEED.
 */
static const char *check_pinned(void)
{
	size_t size = PINNED_PAGES * 4096;
	long before_kb = vmalloc_used_kb(), pinned_kb = status_kb("VmPin"), faults;
	unsigned char *p, vec[PINNED_PAGES];
	char out[8];
	int fds[2];
	pid_t pid;
	int status;
	size_t i;

	p = ukl_pinned_alloc(size);
	if (!p)
		return "ukl_pinned_alloc failed";
	if (!mapped_as_pinned(p))
		return "no [ukl_pinned] mapping in /proc/self/maps";
	if (vmalloc_used_kb() < before_kb + (long)size / 1024)
		return "VmallocUsed did not grow by the buffer";
	if (status_kb("VmPin") != pinned_kb + (long)size / 1024)
		return "VmPin did not grow by the buffer";
	if (mincore(p, size, vec))
		return "mincore failed";
	for (i = 0; i < PINNED_PAGES; i++)
		if (!(vec[i] & 1))
			return "a page is not resident before first touch";

	faults = minor_faults();
	for (i = 0; i < size; i += 4096)
		p[i] = (unsigned char)(i / 4096 + 1);
	if (minor_faults() != faults)
		return "touching the buffer caused page faults";

	if (pipe(fds) || write(fds[1], p + 4096, 1) != 1 ||
	    read(fds[0], out, 1) != 1 || out[0] != 2)
		return "write() from the buffer did not carry its data";
	close(fds[0]);
	close(fds[1]);

	if (munmap(p, 4096) != -1 || errno != EINVAL)
		return "unmapping part of the buffer was not refused with EINVAL";

	pid = fork();
	if (pid == 0)
		_exit(mapped_as_pinned(p) ? 1 : 0);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
		return "a forked child inherited the buffer";

	if (madvise(p, size, MADV_DONTNEED))
		return "madvise(MADV_DONTNEED) failed";
	if (p[3 * 4096] != 4)
		return "contents lost after MADV_DONTNEED";
	p[3 * 4096] = 40;
	if (p[3 * 4096] != 40)
		return "write after MADV_DONTNEED lost";

	if (munmap(p, size))
		return "munmap of the whole buffer failed";
	if (vmalloc_used_kb() > before_kb + (long)size / 2048)
		return "VmallocUsed did not come back after munmap";
	if (status_kb("VmPin") != pinned_kb)
		return "VmPin did not come back after munmap";
	if (ukl_pinned_alloc(0) || errno != EINVAL)
		return "a zero-sized buffer was not refused with EINVAL";
	return NULL;
}

/*
 * Duplicated mappings of one pinned buffer (fork after MADV_DOFORK,
 * mremap with old_len 0, a move) share it and give it back once: no
 * double free (a kernel complaint the test reads from the log), VmPin and
 * VmallocUsed back where they were.
 */
static const char *check_pinned_copies(void)
{
	size_t size = PINNED_PAGES * 4096;
	long before_kb = vmalloc_used_kb(), pinned_kb = status_kb("VmPin");
	unsigned char *p, *dup, *moved;
	pid_t pid;
	int status;

	p = ukl_pinned_alloc(size);
	if (!p)
		return "ukl_pinned_alloc failed";
	p[0] = 7;
	if (madvise(p, size, MADV_DOFORK))
		return "madvise(MADV_DOFORK) failed";
	pid = fork();
	if (pid == 0)
		_exit(p[0] == 7 && munmap(p, size) == 0 ? 0 : 1);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
		return "a child given the buffer by MADV_DOFORK could not use and unmap it";
	/*
	 * A copy by mremap(old_len 0) must share the buffer, or be refused
	 * cleanly: the mapping cannot expand (VM_DONTEXPAND), which such a
	 * copy needs, so the kernel answers EFAULT.
	 */
	dup = mremap(p, 0, size, MREMAP_MAYMOVE);
	if (dup == MAP_FAILED) {
		if (errno != EFAULT && errno != EINVAL)
			return "mremap(old_len 0) of the buffer failed, not with EFAULT or EINVAL";
		dup = p;
		p = NULL;
	} else if (dup[0] != 7 || (dup[1] = 8, p[1] != 8)) {
		return "the mremap(old_len 0) copy does not share the buffer";
	}
	dup[1] = 8;
	moved = mremap(dup, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, dup + 2 * size);
	if (moved == MAP_FAILED || moved[1] != 8)
		return "moving the buffer (or a copy) failed";
	if (mremap(moved, size, 2 * size, MREMAP_MAYMOVE) != MAP_FAILED)
		return "growing the buffer was not refused";
	if ((p && munmap(p, size)) || moved[0] != 7 || munmap(moved, size))
		return "unmapping the copies failed";
	if (status_kb("VmPin") != pinned_kb)
		return "VmPin did not come back after unmapping every copy";
	if (vmalloc_used_kb() > before_kb + (long)size / 2048)
		return "VmallocUsed did not come back after unmapping every copy";
	return NULL;
}

static long involuntary_switches(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nivcsw;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Spin for ms of wall time; return the involuntary context switches. */
static long spin(double ms)
{
	long before;
	double end;

	sched_yield();		/* a voluntary switch starts a fresh deferral */
	before = involuntary_switches();
	end = now_ms() + ms;
	while (now_ms() < end)
		;
	return involuntary_switches() - before;
}

static void *rtc_thread(void *arg)
{
	*(int *)arg = ukl_run_to_completion(0);
	return NULL;
}

/*
 * Run-to-completion, on one CPU shared with a busy process: off, the app
 * is preempted within a 15 ms spin; on, never within 15 ms but still
 * within 150 ms (the 20 ms bound), and the busy process progresses.
 */
static const char *check_rtc(void)
{
	volatile long *progress = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	long off, on = 0, bounded, seen;
	int inherited = -1, i;
	pthread_t t;
	pid_t busy;

	if (sysconf(_SC_NPROCESSORS_ONLN) != 1)
		return "needs a one-CPU guest";
	busy = fork();
	if (busy == 0)
		for (;;)
			(*progress)++;

	off = spin(15);
	if (ukl_run_to_completion(1) != 0 || ukl_run_to_completion(1) != 1)
		return "the switch does not read back";
	if (pthread_create(&t, NULL, rtc_thread, &inherited) ||
	    pthread_join(t, NULL) || inherited != 0)
		return "a new thread inherited run-to-completion";
	for (i = 0; i < 5; i++)
		on += spin(15);
	seen = *progress;
	bounded = spin(150);
	ukl_run_to_completion(0);
	kill(busy, SIGKILL);
	waitpid(busy, NULL, 0);
	printf("shortcuts: rtc preemptions: off %ld in 15 ms, on %ld in 5 x 15 ms, on %ld in 150 ms\n",
	       off, on, bounded);
	if (off < 1)
		return "without run-to-completion the app was never preempted";
	if (on != 0)
		return "preempted while in run-to-completion";
	if (bounded < 1 || *progress == seen)
		return "run-to-completion held the CPU beyond its bound";
	return NULL;
}

/*
 * A kernel without the options refuses every call, and says why (the
 * run-to-completion switch is a kernel function only a UKL build can call).
 */
static int unsupported(void)
{
	char c = 0;
	int ok = ukl_tcp_send(0, &c, 1, 0) == -ENOSYS &&
		 ukl_tcp_recv(0, &c, 1, 0) == -ENOSYS &&
		 !ukl_pinned_alloc(4096) && errno == ENOSYS;

#ifdef HAVE_UKL_H
	ok = ok && ukl_run_to_completion(1) == -1 && errno == EOPNOTSUPP;
#endif

	printf("shortcuts: unsupported %s\n", ok ? "as expected" : "NOT reported");
	return ok ? 0 : 1;
}

/* Echo through the shortcuts until a client sends "quit". */
static int echo(int port)
{
	struct sockaddr_in addr = { .sin_family = AF_INET,
				    .sin_addr.s_addr = htonl(INADDR_ANY),
				    .sin_port = htons(port) };
	size_t size = 16384, total = 0;
	char *buf = ukl_pinned_alloc(size);
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1, stop = 0;

	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (!buf || s < 0 || bind(s, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(s, 8)) {
		perror("shortcuts: echo setup");
		return 1;
	}
	printf("shortcuts: echo listening on port %d (ring %u)\n", port, cpl());
	fflush(stdout);
	while (!stop) {
		int fd = accept(s, NULL, NULL);
		ssize_t n;

		if (fd < 0)
			return 1;
		while ((n = ukl_tcp_recv(fd, buf, size, 0)) > 0) {
			if (n >= 4 && !memcmp(buf, "quit", 4)) {
				stop = 1;
				break;
			}
			if (ukl_tcp_send(fd, buf, n, 0) != n) {
				printf("shortcuts: echo send failed\n");
				return 1;
			}
			total += n;
		}
		if (n < 0) {
			printf("shortcuts: echo receive failed: %zd\n", n);
			return 1;
		}
		close(fd);
	}
	printf("shortcuts: echo done, %zu bytes through ukl_tcp_recv/ukl_tcp_send\n", total);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "checks";

	printf("shortcuts: cpl=%u\n", cpl());
	fflush(stdout);
	if (!strcmp(mode, "unsupported"))
		return unsupported();
	if (!strcmp(mode, "echo"))
		return echo(argc > 2 ? atoi(argv[2]) : 7);

	report("tcp", check_tcp());
	report("refusals", check_refusals());
	report("pinned", check_pinned());
	report("pinned-copies", check_pinned_copies());
	report("rtc", check_rtc());
	printf("shortcuts: %d failure(s)\n", failures);
	return failures;
}
