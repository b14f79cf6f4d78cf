/*
 * LEBench-style microbenchmarks for UKL, after the UKL paper (Figure 3,
 * Figure 4, Table 2). The same source runs as an ordinary process on the
 * stock kernel and linked into a UKL kernel.
 *
 * Every operation is timed with rdtsc around one call. Under QEMU TCG with
 * `-icount shift=0,sleep=off` the guest TSC advances one tick per guest
 * instruction, so each figure is an exact instruction count (including
 * the ~2 instructions of the rdtsc pair itself; see the "rdtsc" row).
 *
 * Output, one line per measurement, for `ukl bench` to collect:
 *   bench,OP,SIZE,ITERATIONS,MIN,MEDIAN
 * after the kernel's view of the CPU's bugs, "vuln NAME: STATUS".
 *
 * Usage: lebench [--bypass] [--shortcuts] [--quick] [--max-size N] [--only OP]
 *                [GROUP...]
 *   (no GROUP: all of them)
 *   --bypass     turn UKL_BYP system call bypass on first (fails without it)
 *   --shortcuts  TCP send/recv through ukl_tcp_send/ukl_tcp_recv
 *                (UKL_SHORTCUTS; fails without it)
 *   --quick      1,000 timed iterations instead of 10,000
 *   --max-size N sizes up to N bytes only (1: the 1-byte operations)
 *   --only OP    only the measurement OP (e.g. read-pipe), to profile it
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ukl_marks.h"
#if __has_include(<ukl.h>)
#include <ukl.h>
#endif

#define MAX_SIZE 8192
#define SIZE_STEP 256
#define WARMUP 100
#define PAGE 4096

static long iterations = 10000;
/* --max-size N: sizes up to N only; --only OP: that measurement only. */
static long max_size = MAX_SIZE;
static const char *only_op;
static int use_shortcuts;
static uint64_t *samples;
static char *buf;

static inline uint64_t tsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi) :: "memory");
	return (uint64_t)hi << 32 | lo;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *op, long size, long n)
{
	qsort(samples, n, sizeof(*samples), cmp_u64);
	printf("bench,%s,%ld,%ld,%llu,%llu\n", op, size, n,
	       (unsigned long long)samples[0], (unsigned long long)samples[n / 2]);
	fflush(stdout);
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/*
 * Time `call` once per iteration after a warm-up; `between` runs untimed.
 * Each timed iteration is also a pass of counting window 0 for the
 * ukl_counts QEMU plugin (`ukl bench` runs under it), flushed into a row
 * per measurement: the K-th `bench,` line is the plugin's row 0.K.
 */
#define MEASURE(op, size, call, between)				\
	do {								\
		if (only_op && strcmp(only_op, op))			\
			break;						\
		for (long i_ = 0; i_ < WARMUP; i_++) {			\
			call;						\
			between;					\
		}							\
		for (long i_ = 0; i_ < iterations; i_++) {		\
			UKL_COUNT_BEGIN(0);				\
			uint64_t t0_ = tsc();				\
			call;						\
			samples[i_] = tsc() - t0_;			\
			UKL_COUNT_END(0);				\
			between;					\
		}							\
		UKL_COUNT_FLUSH(0);					\
		report(op, size, iterations);				\
	} while (0)

static void bench_floor(void)
{
	struct timespec ts;

	MEASURE("rdtsc", 0, (void)0, (void)0);
	MEASURE("clock_gettime", 0, clock_gettime(CLOCK_MONOTONIC, &ts), (void)0);
	MEASURE("getppid", 0, syscall(SYS_getppid), (void)0);
}

static void bench_file(void)
{
	int fd = open("/tmp/lebench.dat", O_CREAT | O_RDWR | O_TRUNC, 0600);

	if (fd < 0 || pwrite(fd, buf, MAX_SIZE, 0) != MAX_SIZE)
		die("tmpfs file");
	for (long size = 1; size <= max_size; size = size == 1 ? SIZE_STEP : size + SIZE_STEP) {
		MEASURE("read-file", size, pread(fd, buf, size, 0), (void)0);
		MEASURE("write-file", size, pwrite(fd, buf, size, 0), (void)0);
	}
	close(fd);
	unlink("/tmp/lebench.dat");
}

static void bench_pipe(void)
{
	int p[2];

	if (pipe(p))
		die("pipe");
	for (long size = 1; size <= max_size; size = size == 1 ? SIZE_STEP : size + SIZE_STEP) {
		MEASURE("write-pipe", size, write(p[1], buf, size), read(p[0], buf, size));
		/* Prime the pipe, then time each read and refill untimed. */
		write(p[1], buf, size);
		MEASURE("read-pipe", size, read(p[0], buf, size), write(p[1], buf, size));
		read(p[0], buf, size);
	}
	close(p[0]);
	close(p[1]);
}

static void bench_socket(const char *send_op, const char *recv_op, int tx, int rx,
			 const struct sockaddr *to, socklen_t tolen)
{
	for (long size = 1; size <= max_size; size = size == 1 ? SIZE_STEP : size + SIZE_STEP) {
		MEASURE(send_op, size, sendto(tx, buf, size, 0, to, tolen),
			recvfrom(rx, buf, size, 0, NULL, NULL));
		/* Prime one datagram, then time each receive and refill. */
		sendto(tx, buf, size, 0, to, tolen);
		MEASURE(recv_op, size, recvfrom(rx, buf, size, 0, NULL, NULL),
			sendto(tx, buf, size, 0, to, tolen));
		recvfrom(rx, buf, size, 0, NULL, NULL);
	}
}

static void bench_udp(void)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t len = sizeof(addr);
	int rcvbuf = 1 << 20;
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (s < 0 || bind(s, (struct sockaddr *)&addr, sizeof(addr)) ||
	    getsockname(s, (struct sockaddr *)&addr, &len))
		die("udp socket");
	bench_socket("sendto-udp", "recvfrom-udp", s, s, (struct sockaddr *)&addr, len);
	close(s);
}

static void bench_unix(void)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv))
		die("socketpair");
	bench_socket("sendto-unix", "recvfrom-unix", sv[0], sv[1], NULL, 0);
	close(sv[0]);
	close(sv[1]);
}

/*
 * TCP over loopback, one connected pair, Nagle off so that every send goes
 * out at once. With --shortcuts the same calls go through the UKL
 * shortcuts, straight into tcp_sendmsg()/tcp_recvmsg().
 */
static ssize_t tcp_send(int fd, const void *p, size_t n)
{
#if __has_include(<ukl.h>)
	if (use_shortcuts)
		return ukl_tcp_send(fd, p, n, 0);
#endif
	return send(fd, p, n, 0);
}

static ssize_t tcp_recv(int fd, void *p, size_t n)
{
#if __has_include(<ukl.h>)
	if (use_shortcuts)
		return ukl_tcp_recv(fd, p, n, 0);
#endif
	return recv(fd, p, n, 0);
}

static void bench_tcp(void)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t len = sizeof(addr);
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0), tx, rx;

	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || bind(l, (struct sockaddr *)&addr, len) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&addr, &len))
		die("tcp listen");
	tx = socket(AF_INET, SOCK_STREAM, 0);
	if (tx < 0 || connect(tx, (struct sockaddr *)&addr, len))
		die("tcp connect");
	rx = accept(l, NULL, NULL);
	if (rx < 0)
		die("tcp accept");
	setsockopt(tx, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (tcp_send(tx, buf, 1) != 1 || tcp_recv(rx, buf, 1) != 1)
		die("tcp send/recv (--shortcuts without UKL_SHORTCUTS?)");
	for (long size = 1; size <= max_size; size = size == 1 ? SIZE_STEP : size + SIZE_STEP) {
		MEASURE("send-tcp", size, tcp_send(tx, buf, size), tcp_recv(rx, buf, size));
		/* Prime one message, then time each receive and refill. */
		tcp_send(tx, buf, size);
		MEASURE("recv-tcp", size, tcp_recv(rx, buf, size), tcp_send(tx, buf, size));
		tcp_recv(rx, buf, size);
	}
	close(tx);
	close(rx);
	close(l);
}

/* One new anonymous page per iteration: the paper's page-fault loop. */
static void bench_page_fault(void)
{
	long n = iterations + WARMUP;
	volatile char *area = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long page = 0;

	if (area == MAP_FAILED)
		die("mmap");
	MEASURE("page-fault", 0, area[PAGE * page] = 1, page++);
	munmap((void *)area, n * PAGE);
}

/*
 * One new page of the main thread's stack per iteration: the stack grows
 * down, page by page, below the current stack pointer.
 */
static void __attribute__((noinline)) bench_stack_fault(void)
{
	struct rlimit big = { 256UL << 20, 256UL << 20 };
	volatile char *sp = __builtin_frame_address(0);
	long page = 4;

	/* Room for iterations + warm-up pages (checked at fault time). */
	setrlimit(RLIMIT_STACK, &big);
	MEASURE("stack-fault", 0, sp[-PAGE * page] = 1, page++);
}

static void *nothing(void *arg)
{
	return arg;
}

static void bench_thread(void)
{
	pthread_t t;

	MEASURE("thread-create-join", 0,
		(pthread_create(&t, NULL, nothing, NULL), pthread_join(t, NULL)), (void)0);
}

static void bench_fork(void)
{
	pid_t pid;

	MEASURE("fork-wait", 0,
		((pid = fork()) == 0 ? _exit(0) : (void)waitpid(pid, NULL, 0)), (void)0);
}

/*
 * Which CPU bugs the kernel found and how it mitigates them, one line per
 * file of /sys/devices/system/cpu/vulnerabilities: "vuln NAME: STATUS".
 * `ukl bench` records them and checks a deployed flavour's mitigations.
 */
static void print_vulnerabilities(void)
{
	static const char dir[] = "/sys/devices/system/cpu/vulnerabilities";
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[512], status[256];
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(status, sizeof(status), f)) {
			status[strcspn(status, "\n")] = '\0';
			printf("vuln %s: %s\n", e->d_name, status);
		}
		fclose(f);
	}
	closedir(d);
	fflush(stdout);
}

struct group {
	const char *name;
	void (*run)(void);
};

static const struct group groups[] = {
	{ "floor", bench_floor },	{ "file", bench_file },
	{ "pipe", bench_pipe },		{ "udp", bench_udp },
	{ "unix", bench_unix },		{ "tcp", bench_tcp },
	{ "page-fault", bench_page_fault },
	{ "stack-fault", bench_stack_fault }, { "thread", bench_thread },
	{ "fork", bench_fork },
};

int main(int argc, char **argv)
{
	int first = 1, ran = 0;

	if (argc > first && !strcmp(argv[first], "--bypass")) {
#if __has_include(<ukl.h>)
		if (ukl_bypass(1) < 0)
			die("ukl_bypass");
#else
		fprintf(stderr, "lebench: --bypass needs the UKL toolchain\n");
		return 2;
#endif
		first++;
	}
	if (argc > first && !strcmp(argv[first], "--shortcuts")) {
#if __has_include(<ukl.h>)
		use_shortcuts = 1;
#else
		fprintf(stderr, "lebench: --shortcuts needs the UKL toolchain\n");
		return 2;
#endif
		first++;
	}
	if (argc > first && !strcmp(argv[first], "--quick")) {
		iterations = 1000;
		first++;
	}
	if (argc > first + 1 && !strcmp(argv[first], "--max-size")) {
		max_size = atol(argv[first + 1]);
		if (max_size < 1 || max_size > MAX_SIZE) {
			fprintf(stderr, "lebench: --max-size must be 1 to %d\n", MAX_SIZE);
			return 2;
		}
		first += 2;
	}
	if (argc > first + 1 && !strcmp(argv[first], "--only")) {
		only_op = argv[first + 1];
		first += 2;
	}
	samples = malloc(iterations * sizeof(*samples));
	buf = malloc(MAX_SIZE);
	if (!samples || !buf)
		die("malloc");
	/* Pre-fault every buffer the measurements touch. */
	memset(samples, 0, iterations * sizeof(*samples));
	memset(buf, 0x5a, MAX_SIZE);
	print_vulnerabilities();

	for (unsigned int g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		int wanted = argc <= first;

		for (int i = first; i < argc; i++)
			wanted |= !strcmp(argv[i], groups[g].name);
		if (wanted) {
			groups[g].run();
			ran++;
		}
	}
	printf("bench-done,%d\n", ran);
	return ran ? 0 : 2;
}
