/*
 * Boot-test program for the UKL base model. The same source runs as an
 * ordinary process on the stock kernel and linked into a UKL kernel; each
 * check prints "ukl_suite: ok NAME" or "ukl_suite: FAIL NAME: why", and the
 * exit status is the number of failures.
 *
 * Usage: ukl_suite [--bypass] [CHECK...]   (no CHECK: every base check)
 *   --bypass   run the checks with UKL_BYP system call bypass on (<ukl.h>)
 *
 * The checks of options (pf-df, nss-*, nss-ps-*) run only when named: they
 * pass only on kernels with that option. So do the checks that print what
 * a test judges from outside (hw-breakpoint, irq-storm, thunks).
 *
 * ukl_suite --overflow recurses until its stack runs out: with UKL_NSS_PS it
 * must die of SIGSEGV on its fixed-size stack while the kernel goes on.
 * --overflow-calling does the same making system calls at every level.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#if __has_include(<ukl.h>)
#include <ukl.h>
#endif

static int failures;

static int report(const char *name, const char *why)
{
	if (why) {
		printf("ukl_suite: FAIL %s: %s (errno %d)\n", name, why, errno);
		failures++;
	} else {
		printf("ukl_suite: ok %s\n", name);
	}
	fflush(stdout);
	return why != NULL;
}

static unsigned int cpl(void)
{
	unsigned short cs;

	__asm__ volatile("mov %%cs, %0" : "=r"(cs));
	return cs & 3;
}

/*
 * SMAP and SMEP stay on in the kernel; at CPL0 the application can read
 * CR4 itself and sees EFLAGS.AC, which lets it touch its user-half memory.
 * /proc/cpuinfo lists the features the kernel enabled for every process.
 */
static const char *check_smap(void)
{
	char line[4096];
	FILE *f = fopen("/proc/cpuinfo", "r");
	int smap = 0, smep = 0;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags", 5)) {
			smap = strstr(line, " smap") != NULL;
			smep = strstr(line, " smep") != NULL;
			break;
		}
	if (f)
		fclose(f);
	if (!smap || !smep)
		return "smap/smep missing from /proc/cpuinfo";
	if (cpl() == 0) {
		unsigned long cr4, flags;

		__asm__ volatile("mov %%cr4, %0" : "=r"(cr4));
		__asm__ volatile("pushf; pop %0" : "=r"(flags));
		printf("ukl_suite: cr4.smap=%lu cr4.smep=%lu eflags.ac=%lu\n",
		       (cr4 >> 21) & 1, (cr4 >> 20) & 1, (flags >> 18) & 1);
		if (!((cr4 >> 21) & 1) || !((cr4 >> 20) & 1) || !((flags >> 18) & 1))
			return "CR4.SMAP, CR4.SMEP or EFLAGS.AC clear at CPL0";
	}
	return NULL;
}

static const char *check_files(void)
{
	static const char msg[] = "hello tmpfs";
	char buf[64] = { 0 };
	struct stat st;
	int fd = open("/tmp/ukl-suite", O_CREAT | O_RDWR | O_TRUNC, 0600);

	if (fd < 0)
		return "open";
	if (write(fd, msg, sizeof(msg)) != sizeof(msg))
		return "write";
	if (lseek(fd, 6, SEEK_SET) != 6)
		return "lseek";
	if (read(fd, buf, sizeof(buf)) != sizeof(msg) - 6 || strcmp(buf, "tmpfs"))
		return "read back";
	if (fstat(fd, &st) || st.st_size != sizeof(msg))
		return "fstat size";
	close(fd);
	if (stat("/tmp/ukl-suite", &st) || !S_ISREG(st.st_mode))
		return "stat";
	if (unlink("/tmp/ukl-suite") || stat("/tmp/ukl-suite", &st) == 0)
		return "unlink";
	return NULL;
}

static const char *check_pipe(void)
{
	int fds[2];
	char buf[8];

	if (pipe(fds))
		return "pipe";
	if (write(fds[1], "ping", 4) != 4 || read(fds[0], buf, 8) != 4 ||
	    memcmp(buf, "ping", 4))
		return "round trip";
	close(fds[0]);
	close(fds[1]);
	return NULL;
}

/* Run by init (pid 1), or, on a UKL_NSS kernel, init itself (ppid 0). */
static const char *check_ids(void)
{
	pid_t pid = getpid(), ppid = getppid();

	if (pid < 1 || ppid < 0 || (pid == 1) != (ppid == 0))
		return "getpid/getppid";
	if (syscall(SYS_getpid) != getpid())
		return "syscall(SYS_getpid)";
	return NULL;
}

static const char *check_time(void)
{
	struct timespec a, b, nap = { 0, 20 * 1000 * 1000 };

	if (clock_gettime(CLOCK_MONOTONIC, &a))
		return "clock_gettime";
	if (nanosleep(&nap, NULL))
		return "nanosleep";
	clock_gettime(CLOCK_MONOTONIC, &b);
	if ((b.tv_sec - a.tv_sec) * 1000000000L + b.tv_nsec - a.tv_nsec < 20000000L)
		return "nanosleep returned early";
	return NULL;
}

static long long ns(const struct timespec *t)
{
	return t->tv_sec * 1000000000LL + t->tv_nsec;
}

/*
 * Every clock read through the C library (the vDSO on stock, the kernel's
 * stand-in functions on UKL, the system call for CPU-time clocks) agrees
 * with the system call: libc <= syscall <= libc, each clock on its own.
 */
static const char *check_clocks(void)
{
	static const clockid_t clocks[] = {
		CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_MONOTONIC_RAW,
		CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE,
		CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID,
	};
	struct timespec a, b, c;
	struct timeval tv;
	time_t t;

	for (unsigned int i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		if (clock_gettime(clocks[i], &a) ||
		    syscall(SYS_clock_gettime, clocks[i], &b) ||
		    clock_gettime(clocks[i], &c))
			return "clock_gettime failed";
		if (ns(&a) > ns(&b) || ns(&b) > ns(&c)) {
			printf("ukl_suite: clock %d: %lld %lld %lld\n", (int)clocks[i],
			       ns(&a), ns(&b), ns(&c));
			return "libc and system call clocks disagree";
		}
	}
	if (clock_gettime(12345, &a) == 0 || errno != EINVAL)
		return "bad clock id not EINVAL";
	t = time(NULL);
	if (gettimeofday(&tv, NULL) || tv.tv_sec < t || tv.tv_sec > t + 1)
		return "gettimeofday and time disagree";
	clock_gettime(CLOCK_REALTIME, &a);
	if (a.tv_sec < tv.tv_sec || a.tv_sec > tv.tv_sec + 1)
		return "gettimeofday and CLOCK_REALTIME disagree";
	return NULL;
}

static const char *check_mmap(void)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return "mmap";
	memset(p, 0x5a, 4 * page);
	if (mprotect(p, page, PROT_READ))
		return "mprotect";
	if (p[0] != 0x5a || p[3 * page] != 0x5a)
		return "contents";
	if (munmap(p, 4 * page))
		return "munmap";
	return NULL;
}

static const char *check_malloc(void)
{
	size_t size = 256UL << 20;
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *p = malloc(size);
	unsigned long sum = 0;

	if (!p)
		return "malloc 256 MiB";
	for (size_t i = 0; i < size; i += page)
		p[i] = (unsigned char)(i / page);
	for (size_t i = 0; i < size; i += page)
		sum += p[i];
	free(p);
	return sum ? NULL : "contents";
}

/* Each frame touches a whole 1 KiB buffer: 8 MiB deep in all. */
static unsigned long recurse(int depth)
{
	volatile unsigned char frame[1024];

	for (size_t i = 0; i < sizeof(frame); i += 64)
		frame[i] = (unsigned char)depth;
	if (depth == 0)
		return frame[0];
	return recurse(depth - 1) + frame[64];
}

static const char *check_stack(void)
{
	/* 7.5 MiB of frames: the default 8 MiB limit minus argv and env. */
	return recurse(7 * 1024 + 512) ? NULL : "recursion";
}

#define NTHREADS 8
static __thread long tls_value;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int started, go, tls_ok, cpus_seen;

static void *worker(void *arg)
{
	long id = (long)arg;

	tls_value = id * 1000;
	pthread_mutex_lock(&lock);
	started++;
	pthread_cond_broadcast(&cond);
	while (!go)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	/* Spin a little so that, with two CPUs, both get used. */
	for (int i = 0; i < 200; i++) {
		int cpu = sched_getcpu();

		pthread_mutex_lock(&lock);
		if (cpu >= 0 && cpu < 32)
			cpus_seen |= 1 << cpu;
		pthread_mutex_unlock(&lock);
		sched_yield();
	}
	pthread_mutex_lock(&lock);
	tls_ok += tls_value == id * 1000;
	pthread_mutex_unlock(&lock);
	return (void *)(id + 1);
}

static const char *check_threads(void)
{
	pthread_t t[NTHREADS];
	void *ret;

	tls_value = -1;
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i))
			return "pthread_create";
	pthread_mutex_lock(&lock);
	while (started < NTHREADS)
		pthread_cond_wait(&cond, &lock);
	go = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_join(t[i], &ret) || ret != (void *)(i + 1))
			return "pthread_join";
	if (tls_ok != NTHREADS || tls_value != -1)
		return "per-thread TLS values";
	printf("ukl_suite: threads ran on %d CPU(s)\n",
	       __builtin_popcount(cpus_seen));
	return NULL;
}

static volatile sig_atomic_t alarms, raised, info_ok;

static void on_alarm(int sig) { alarms += sig == SIGALRM; }
static void on_usr1(int sig) { raised += sig == SIGUSR1; }
static void on_usr2(int sig, siginfo_t *info, void *ctx)
{
	info_ok = sig == SIGUSR2 && info->si_code == SI_TKILL &&
		  info->si_pid == getpid() && ctx != NULL;
}

static const char *check_signals(void)
{
	struct sigaction sa = { 0 };
	struct itimerval it = { { 0, 10000 }, { 0, 10000 } };

	sa.sa_handler = on_alarm;
	if (sigaction(SIGALRM, &sa, NULL))
		return "sigaction SIGALRM";
	if (setitimer(ITIMER_REAL, &it, NULL))
		return "setitimer";
	/* Busy and blocking work both get interrupted. */
	while (alarms < 3) {
		for (volatile int i = 0; i < 100000; i++)
			;
		usleep(1000);
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);

	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	if (raise(SIGUSR1) || raised != 1)
		return "raise SIGUSR1";

	sa.sa_sigaction = on_usr2;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR2, &sa, NULL);
	if (raise(SIGUSR2) || !info_ok)
		return "SA_SIGINFO handler";
	return NULL;
}

static const char *check_fork(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return "fork";
	if (pid == 0)
		_exit(cpl() == cpl() ? 42 : 1);
	if (waitpid(pid, &status, 0) != pid)
		return "waitpid";
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 42)
		return "child status";
	return NULL;
}

/*
 * Full fork: after fork() each process has its own static data, as an
 * ordinary process has. In the UKL image .data and .bss are in the kernel
 * image, so each forked process needs its own copy of them; the checks
 * below fail where a parent, child and grandchild share one.
 */
static volatile int fork_data = 1;		/* .data */
static volatile int fork_bss;			/* .bss */
static __thread volatile int fork_tls = 2;	/* the thread's TLS block */
static char fork_buf[16];			/* filled by read() */

/* Set every kind of static state to values made from @tag. */
static const char *fork_set(int tag, int fd)
{
	char msg[16];

	fork_data = tag;
	fork_bss = tag + 1;
	fork_tls = tag + 2;
	srand(tag);		/* rand()'s state is a static of the C library */
	snprintf(msg, sizeof(msg), "tag%d", tag);
	if (write(fd, msg, sizeof(msg)) != sizeof(msg) ||
	    read(fd - 1, fork_buf, sizeof(fork_buf)) != sizeof(fork_buf))
		return "pipe round trip into .bss";
	return NULL;
}

/* Whether the static state is still what fork_set(@tag) made it. */
static const char *fork_check(int tag)
{
	char msg[16];
	int expect;

	snprintf(msg, sizeof(msg), "tag%d", tag);
	if (fork_data != tag)
		return "a global in .data changed under this process";
	if (fork_bss != tag + 1)
		return "a global in .bss changed under this process";
	if (fork_tls != tag + 2)
		return "a __thread variable changed under this process";
	if (strcmp(fork_buf, msg))
		return "a .bss buffer that read() filled changed under this process";
	expect = rand();
	srand(tag);
	if (rand() != expect)
		return "rand()'s state changed under this process";
	srand(tag);
	rand();
	return NULL;
}

/*
 * fork_set(@tag), then, @depth levels of descendants having done the same,
 * fork_check(@tag): 0 if this process and its descendants kept their own.
 */
static int fork_level(int tag, int depth, int fd)
{
	const char *why = fork_set(tag, fd);
	int status;
	pid_t pid;

	if (!why && depth > 0) {
		pid = fork();
		if (pid == 0) {
			fflush(stdout);
			_exit(fork_level(tag + 10, depth - 1, fd));
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			return 1;
	}
	if (!why)
		why = fork_check(tag);
	if (why)
		printf("ukl_suite: fork-data level %d: %s\n", tag, why);
	return why != NULL;
}

/*
 * A parent, a child and a grandchild each write a global in .data and in
 * .bss, a __thread variable, rand()'s state and a .bss buffer (through a
 * system call), then check them after their descendants ran. stdout's
 * FILE, in the C library's .data, keeps the parent's unwritten output
 * when the child discards its copy.
 */
static const char *check_fork_data(void)
{
	static const char pending[] = "ukl_suite: fork-data: pending output";
	size_t held;
	int status, fds[2];
	pid_t pid;

	if (pipe(fds))
		return "pipe";
	/* The pipe's write end is the read end + 1 (both fresh, lowest free). */
	if (fds[1] != fds[0] + 1)
		return "pipe descriptors not adjacent";
	fputs(pending, stdout);
	held = stdout->_IO_write_ptr - stdout->_IO_write_base;
	pid = fork();
	if (pid < 0)
		return "fork";
	if (pid == 0) {
		__fpurge(stdout);	/* the child's copy of the pending output */
		_exit(fork_level(100, 1, fds[1]));
	}
	if (waitpid(pid, &status, 0) != pid)
		return "waitpid";
	if ((size_t)(stdout->_IO_write_ptr - stdout->_IO_write_base) != held)
		return "the child's stdio changed the parent's stdout buffer";
	fputs("\n", stdout);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return "a child or grandchild saw its data change";
	status = fork_level(1, 0, fds[1]);
	close(fds[0]);
	close(fds[1]);
	return status ? "the parent saw its data change" : NULL;
}

static volatile int fork_spinning = 1;
static volatile unsigned long fork_spins;	/* .bss, bumped by threads */

static void *fork_spinner(void *arg)
{
	while (fork_spinning) {
		free(malloc(64 + fork_spins % 512));
		fork_spins++;
	}
	return arg;
}

/* The number in the first line of @path that @format ("Name: %ld") reads, or -1. */
static long proc_number(const char *path, const char *format)
{
	char line[128];
	FILE *f = fopen(path, "r");
	long n = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, format, &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* The forked child of a multi-threaded parent: 0 if all is well. */
static int fork_threads_child(void)
{
	unsigned long before = fork_spins;
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	char *p;

	if (proc_number("/proc/self/status", "Threads: %ld") != 1)
		return 1;
	nanosleep(&pause, NULL);
	if (fork_spins != before)
		return 2;	/* the parent's threads wrote this copy */
	p = malloc(100000);
	if (!p)
		return 3;
	snprintf(p, 100000, "%lu", before);
	free(p);
	if (printf("ukl_suite: fork-threads child: malloc and printf work\n") <= 0 ||
	    fflush(stdout))
		return 4;
	return 0;
}

/*
 * fork() while two threads allocate and write a global: the child has one
 * thread, a copy of the global that nobody changes, and a working malloc;
 * the parent's threads keep running. vfork and posix_spawn still work.
 */
static const char *check_fork_threads(void)
{
	char *argv[] = { "/bin/true", NULL };
	extern char **environ;
	const char *why = NULL;
	pthread_t t[2];
	int status;
	pid_t pid;

	fork_spinning = 1;
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, fork_spinner, NULL))
			return "pthread_create";
	while (fork_spins < 1000)
		sched_yield();
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(fork_threads_child());
	if (pid < 0)
		why = "fork";
	else if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		why = "waitpid";
	else if (WEXITSTATUS(status) == 1)
		why = "the child has more than one thread";
	else if (WEXITSTATUS(status) == 2)
		why = "the parent's threads changed the child's copy of a global";
	else if (WEXITSTATUS(status) != 0)
		why = "malloc or printf failed in the child";
	fork_spinning = 0;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (why)
		return why;
	pid = vfork();
	if (pid == 0)
		_exit(7);
	if (pid < 0 || waitpid(pid, &status, 0) != pid ||
	    !WIFEXITED(status) || WEXITSTATUS(status) != 7)
		return "vfork";
	if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) ||
	    waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return "posix_spawn of /bin/true";
	return NULL;
}

static int fork_exit_cycles(int n)
{
	int status;

	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
			return -1;
	}
	return 0;
}

/*
 * 4,000 fork+exit cycles give back the memory each child's copy took:
 * free memory comes back to within 8 MiB (a leak of one page per fork
 * would be 16 MiB). MemFree moves by itself: pages freed on one CPU wait
 * in its per-CPU lists, which it does not count, and on stock Linux with
 * 2 CPUs 1,000 cycles after a warm-up moved it by up to 3.3 MiB either
 * way. So the run is long against that, after a warm-up, and the frees
 * RCU defers get a second to land.
 */
static const char *check_fork_cycles(void)
{
	long before, after;

	if (fork_exit_cycles(1000))
		return "fork+exit (warm-up)";
	sleep(1);
	before = proc_number("/proc/meminfo", "MemFree: %ld kB");
	if (fork_exit_cycles(4000))
		return "fork+exit";
	sleep(1);
	after = proc_number("/proc/meminfo", "MemFree: %ld kB");
	printf("ukl_suite: fork-cycles: MemFree %ld kB before, %ld kB after 4000 cycles\n",
	       before, after);
	if (before < 0 || after < 0)
		return "no MemFree in /proc/meminfo";
	if (before - after > 8192)
		return "4000 fork+exit cycles kept more than 8 MiB";
	return NULL;
}

/*
 * The application starts ordinary programs: system() and popen() clone a
 * child that execs /bin/sh, which then runs at CPL3 like any process.
 */
static const char *check_spawn(void)
{
	char line[64] = { 0 };
	FILE *p;
	int status = system("exit 3");

	if (!WIFEXITED(status) || WEXITSTATUS(status) != 3)
		return "system() status";
	p = popen("echo from-sh", "r");
	if (!p || !fgets(line, sizeof(line), p) || strcmp(line, "from-sh\n"))
		return "popen() output";
	if (pclose(p) != 0)
		return "pclose() status";
	return NULL;
}

static const char *check_efault(void)
{
	/* Unmapped user memory, a non-canonical address, kernel memory. */
	static void *const bad[] = { (void *)0x10, (void *)0x8000000000000000UL,
				     (void *)0xffff888000000000UL };
	struct stat st;
	int fds[2];

	if (pipe(fds))
		return "pipe";
	write(fds[1], "x", 1);
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		if (read(fds[0], bad[i], 1) != -1 || errno != EFAULT)
			return "read into a bad pointer";
		errno = 0;
		if (write(fds[1], bad[i], 1) != -1 || errno != EFAULT)
			return "write from a bad pointer";
		errno = 0;
		if (stat(bad[i], &st) != -1 || errno != EFAULT)
			return "stat of a bad path pointer";
	}
	close(fds[0]);
	close(fds[1]);
	return NULL;
}

/* A number read from a one-line file, or -1. */
/*
 * The flags a system call runs the kernel with, and those a sigreturn
 * hands back, are the kernel's to choose: whatever the caller sets (NT,
 * DF backwards string operations) the call works as with clean flags,
 * SYSCALL's flag mask or not, and a handler that clears AC or sets NT in
 * its saved context gets neither (at CPL0 with SMAP, the application
 * needs AC to touch its own memory).
 */
#define FLAG_TF 0x100UL
#define FLAG_DF 0x400UL
#define FLAG_NT 0x4000UL
#define FLAG_AC 0x40000UL

static unsigned long get_flags(void)
{
	unsigned long flags;

	__asm__ volatile("pushfq; popq %0" : "=r"(flags));
	return flags;
}

static void set_flags(unsigned long flags)
{
	__asm__ volatile("pushq %0; popfq" : : "r"(flags) : "cc", "memory");
}

#define FLAG_IF 0x200UL

/*
 * A stack pointer no allocation gives out: in the user half, above
 * TASK_SIZE_MAX (its last page, never mapped).
 */
#define ODD_STACK 0x7ffffffff800UL

static volatile sig_atomic_t traps, traps_irqs_off, traps_odd_stack;

/* Counts SIGTRAPs, and those whose interrupted context had IF clear. */
static void on_trap(int sig, siginfo_t *info, void *ctx)
{
	ucontext_t *uc = ctx;

	(void)info;
	if (sig != SIGTRAP)
		return;
	traps++;
	if (!(uc->uc_mcontext.gregs[REG_EFL] & FLAG_IF))
		traps_irqs_off++;
	if ((unsigned long)uc->uc_mcontext.gregs[REG_RSP] == ODD_STACK)
		traps_odd_stack++;
}

/*
 * Single-steps a few instructions run with ODD_STACK as the stack pointer.
 * Its traps are delivered on the alternate signal stack.
 */
static __attribute__((noinline)) void step_on_odd_stack(void)
{
	__asm__ volatile("pushfq\n\t"
			 "orq $0x100, (%%rsp)\n\t"
			 "popfq\n\t"
			 "movq %%rsp, %%rbx\n\t"
			 "movabsq %0, %%rsp\n\t"
			 "nop\n\t"
			 "movq %%rbx, %%rsp\n\t"
			 "pushfq\n\t"
			 "andq $~0x100, (%%rsp)\n\t"
			 "popfq"
			 : : "i"(ODD_STACK) : "rbx", "cc", "memory");
}

static void tamper_saved_flags(int sig, siginfo_t *info, void *ctx)
{
	ucontext_t *uc = ctx;

	(void)sig;
	(void)info;
	uc->uc_mcontext.gregs[REG_EFL] &= ~FLAG_AC;
	uc->uc_mcontext.gregs[REG_EFL] |= FLAG_NT;
}

/* A read() from a pipe, made with @flags set: does it carry its data? */
static int read_with_flags(unsigned long flags)
{
	char buf[64] = { 0 };
	char *volatile heap = malloc(64);
	const char msg[] = "flags";
	unsigned long saved = get_flags();
	int fds[2], ok;
	long n;

	if (!heap || pipe(fds) || write(fds[1], msg, sizeof(msg)) != sizeof(msg))
		return 0;
	memset(heap, 0x5a, 64);
	set_flags(saved | flags);
	n = syscall(SYS_read, fds[0], heap + 16, sizeof(msg));
	set_flags(saved);
	memcpy(buf, heap, 64);
	ok = n == sizeof(msg) && !memcmp(buf + 16, msg, sizeof(msg)) &&
	     buf[15] == 0x5a && buf[16 + sizeof(msg)] == 0x5a;
	close(fds[0]);
	close(fds[1]);
	free(heap);
	return ok;
}

/*
 * Single-stepping itself (TF): SIGTRAP after each instruction, system
 * calls included, each with the interrupted context's interrupts on (the
 * entry clears TF without touching IF). At CPL0 the #DB of application
 * code must take the path of one from user mode: a kernel #DB would warn
 * and clear TF after the first trap. So must a step with a stack pointer
 * the kernel never hands out: its handler must not stay on the #DB stack.
 * Clock reads step through the vDSO, which at CPL0 is the kernel's
 * stand-ins: application code, whose steps are the application's too.
 */
static const char *check_single_step(void)
{
	struct sigaction trap = { .sa_sigaction = on_trap,
				  .sa_flags = SA_SIGINFO | SA_ONSTACK };
	unsigned long saved = get_flags();
	stack_t ss = { .ss_size = 64 * 1024 }, old;
	const char *err = NULL;
	struct timespec ts = { 0 };
	struct timeval tv = { 0 };
	int clocks_ok;
	long ppid;

	ss.ss_sp = malloc(ss.ss_size);
	if (!ss.ss_sp || sigaltstack(&ss, &old))
		return "no alternate signal stack";
	if (sigaction(SIGTRAP, &trap, NULL)) {
		err = "sigaction(SIGTRAP) failed";
		goto out;
	}
	traps = traps_irqs_off = 0;
	set_flags(saved | FLAG_TF);
	ppid = syscall(SYS_getppid);
	set_flags(saved);
	if (ppid != getppid() || traps < 8)
		err = "a single-stepped getppid() failed or raised (almost) no SIGTRAP";
	else if (!read_with_flags(FLAG_TF))
		err = "a single-stepped read() did not carry its data";
	else if (traps_irqs_off)
		err = "a SIGTRAP of a single-stepped system call had interrupts off";
	if (err)
		goto out;
	/* Into the vDSO (at CPL0: the kernel's stand-ins) and back. */
	traps = 0;
	set_flags(saved | FLAG_TF);
	clocks_ok = clock_gettime(CLOCK_MONOTONIC, &ts) == 0 &&
		    gettimeofday(&tv, NULL) == 0;
	set_flags(saved);
	if (!clocks_ok || traps < 20 || (!ts.tv_sec && !ts.tv_nsec) || tv.tv_sec <= 0) {
		err = "single-stepped clock reads failed or raised (almost) no SIGTRAP";
		goto out;
	}
	traps = traps_odd_stack = 0;
	step_on_odd_stack();
	if (traps < 5 || traps_odd_stack < 1)
		err = "no SIGTRAP for a step with an odd stack pointer";
out:
	signal(SIGTRAP, SIG_DFL);
	sigaltstack(&old, NULL);
	free(ss.ss_sp);
	return err;
}

static const char *check_flags(void)
{
	struct sigaction tamper = { .sa_sigaction = tamper_saved_flags, .sa_flags = SA_SIGINFO };
	volatile long *heap;

	if (!read_with_flags(FLAG_DF))
		return "a read() made with DF set did not carry its data";
	if (!read_with_flags(FLAG_NT))
		return "a read() made with NT set did not carry its data";
	if (sigaction(SIGUSR1, &tamper, NULL) || raise(SIGUSR1))
		return "raising SIGUSR1 failed";
	signal(SIGUSR1, SIG_DFL);
	heap = malloc(sizeof(*heap));
	if (!heap)
		return "malloc failed";
	*heap = 42;
	if (*heap != 42)
		return "heap store lost after the handler";
	free((void *)heap);
	if (get_flags() & FLAG_NT)
		return "NT set by a handler's saved context survived sigreturn";
	if (cpl() == 0 && !(get_flags() & FLAG_AC))
		return "AC cleared by a handler's saved context survived sigreturn";
	return NULL;
}

/*
 * A coroutine on a stack in .bss (kernel memory for a UKL application):
 * timer signals and a bad load there are the application's, as on any
 * stack of its own: SIGALRM handlers run, the load raises SIGSEGV (not
 * an oops), and nothing outside the coroutine stack changes (guards on
 * both sides).
 */
#define CORO_STACK (64 * 1024)
static struct {
	unsigned char below[4096];
	unsigned char stack[CORO_STACK] __attribute__((aligned(16)));
	unsigned char above[4096];
} coro;
static ucontext_t coro_main, coro_ctx;
static sigjmp_buf coro_jmp;
static volatile sig_atomic_t coro_segv, coro_alarms;

static void coro_on_segv(int sig) { coro_segv += sig == SIGSEGV; siglongjmp(coro_jmp, 1); }
static void coro_on_alarm(int sig) { coro_alarms += sig == SIGALRM; }

static void coro_body(void)
{
	struct timespec end;

	static volatile long *volatile bad = (volatile long *)16;

	if (!sigsetjmp(coro_jmp, 1))
		(void)*bad;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += 1;
	for (;;) {
		struct timespec now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (coro_alarms >= 20 || now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec > end.tv_nsec))
			break;
	}
}

static const char *check_bss_stack(void)
{
	struct sigaction segv = { .sa_handler = coro_on_segv };
	struct sigaction alarm = { .sa_handler = coro_on_alarm, .sa_flags = SA_RESTART };
	struct itimerval tick = { { 0, 1000 }, { 0, 1000 } }, off = { 0 };

	memset(coro.below, 0xa5, sizeof(coro.below));
	memset(coro.above, 0xa5, sizeof(coro.above));
	if (getcontext(&coro_ctx))
		return "getcontext failed";
	coro_ctx.uc_stack.ss_sp = coro.stack;
	coro_ctx.uc_stack.ss_size = sizeof(coro.stack);
	coro_ctx.uc_link = &coro_main;
	makecontext(&coro_ctx, coro_body, 0);
	if (sigaction(SIGSEGV, &segv, NULL) || sigaction(SIGALRM, &alarm, NULL) ||
	    setitimer(ITIMER_REAL, &tick, NULL))
		return "setting up signals failed";
	if (swapcontext(&coro_main, &coro_ctx))
		return "swapcontext failed";
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGSEGV, SIG_DFL);
	signal(SIGALRM, SIG_DFL);
	if (coro_segv != 1)
		return "a bad load on a .bss stack raised no SIGSEGV";
	if (!coro_alarms)
		return "no SIGALRM reached code on a .bss stack";
	for (size_t i = 0; i < sizeof(coro.below); i++)
		if (coro.below[i] != 0xa5 || coro.above[i] != 0xa5)
			return "memory next to the .bss stack changed";
	return NULL;
}

static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long n = -1;

	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

/* The count of #DF -> #PF reroutes (UKL_PF_DF), or -1 without UKL_PF_DF. */
static long pf_df_reroutes(void)
{
	return read_long("/sys/module/ukl/parameters/pf_df_reroutes");
}

static void *touch_thread_stack(void *arg)
{
	return (void *)(recurse(64) + (long)arg);
}

/*
 * UKL_PF_DF: a page fault in application code pushes its frame onto the
 * application stack; where that page is missing (stack growth, a new
 * thread's stack) or read-only (copy on write after fork), the push fails
 * and the kernel must recognise the double fault as that page fault.
 */
static const char *check_pf_df(void)
{
	long before = pf_df_reroutes(), after;
	pthread_t t;
	void *ret;
	int status;
	pid_t pid;

	if (before < 0)
		return "no /sys/module/ukl/parameters/pf_df_reroutes (UKL_PF_DF off?)";
	if (!recurse(2048))			/* 2 MiB of new stack */
		return "recursion";
	if (pthread_create(&t, NULL, touch_thread_stack, (void *)1) ||
	    pthread_join(t, &ret) || !ret)
		return "thread touching its new stack";
	pid = fork();				/* both stacks become copy on write */
	if (pid == 0)
		_exit(recurse(256) ? 0 : 1);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
		return "fork child touching its stack";
	if (!recurse(256))
		return "recursion after fork";
	after = pf_df_reroutes();
	printf("ukl_suite: pf_df_reroutes %ld -> %ld\n", before, after);
	return after > before ? NULL : "no double fault was sent back to #PF";
}

/*
 * UKL_NSS_PS: system calls made on a kernel-half (pinned) stack run right
 * below the caller's frames. Fill the memory there with a pattern, sleep
 * for a microsecond (the kernel keeps its timer on its stack, where the
 * timer interrupt finds it) and count the bytes the kernel changed: none
 * when the kernel switches stacks. The top SYSCALL_FRAMES bytes are spared:
 * the libc wrapper's and ukl_syscall's return addresses, and the flags and
 * return address the entry's return path writes just below the caller's
 * stack pointer (syscall() -> ukl_syscall -> ukl_entry_SYSCALL_64).
 */
#define SYSCALL_FRAMES 128

static __attribute__((noinline)) long bytes_changed_by_syscall(void)
{
	volatile unsigned char *sp = __builtin_frame_address(0);
	static const struct timespec us = { 0, 1000 };
	long changed = 0;

	for (long i = SYSCALL_FRAMES; i < 8192; i++)
		sp[-i] = 0xa5;
	syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &us, NULL);
	for (long i = SYSCALL_FRAMES; i < 8192; i++)
		changed += sp[-i] != 0xa5;
	return changed;
}

static void *stack_address(void *arg)
{
	uintptr_t sp;

	(void)arg;
	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	return (void *)sp;
}

static const char *check_nss_ps_stack(void)
{
	volatile char here;
	long changed = bytes_changed_by_syscall();
	pthread_t t;
	void *thread_sp;

	if (pthread_create(&t, NULL, stack_address, NULL) ||
	    pthread_join(t, &thread_sp))
		return "pthread";
	printf("ukl_suite: main stack %p, thread stack %p, a 1 us sleep changed %ld bytes below the stack pointer\n",
	       (void *)&here, thread_sp, changed);
	if ((long)&here >= 0 || (long)thread_sp >= 0)
		return "a stack is not in the kernel half";
	return changed > 0 ? NULL : "the kernel did not run on the application stack";
}

/* Whether the kernel log has a line containing @what. */
static int kernel_log_has(const char *what)
{
	static char log[1 << 17];
	int n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, log, sizeof(log) - 1);

	if (n < 0)
		return 0;
	log[n] = 0;
	return strstr(log, what) != NULL;
}

/* fork() from a pinned stack is refused; vfork and posix_spawn work. */
/*
 * fork() fails with EBUSY and the kernel logs @warning; vfork() works.
 * Returns NULL or what went wrong.
 */
static const char *fork_refused_vfork_works(const char *warning)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid(pid, &status, 0);
	if (pid >= 0 || errno != EBUSY)
		return "fork did not fail with EBUSY";
	if (!kernel_log_has(warning))
		return "no kernel warning for the refused fork";
	pid = vfork();
	if (pid == 0)
		_exit(7);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || WEXITSTATUS(status) != 7)
		return "vfork";
	return NULL;
}

static const char *check_nss_ps_fork(void)
{
	char *argv[] = { "true", NULL };
	const char *why = fork_refused_vfork_works("UKL_NSS_PS: fork by pid");
	int status;
	pid_t pid;

	if (why)
		return why;
	if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, NULL) ||
	    waitpid(pid, &status, 0) != pid || status != 0)
		return "posix_spawn /bin/true";
	return NULL;
}

static pthread_barrier_t ps_barrier;

static void *wait_at_barrier(void *arg)
{
	pthread_barrier_wait(&ps_barrier);
	return arg;
}

static int write_long(const char *path, long n)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "%ld\n", n);
	return fclose(f);
}

#define PS_MAX "/sys/module/ukl/parameters/ps_max_kb"
#define PS_USED "/sys/module/ukl/parameters/ps_used_kb"
#define PS_STACK "/sys/module/ukl/parameters/ps_stack_kb"

/*
 * Pinned stacks are limited (ukl.ps_max_kb): with room for two more,
 * the third new thread fails with EAGAIN; the room comes back once
 * threads are gone.
 */
static const char *check_nss_ps_limit(void)
{
	long max = read_long(PS_MAX), kb = read_long(PS_STACK);
	pthread_t t[3];
	const char *why = NULL;
	int made = 0, err = 0;

	if (max < 0 || kb <= 0)
		return "no " PS_MAX " or " PS_STACK;
	/* Earlier threads' stacks go when they are reaped: only main's left. */
	for (int tries = 0; read_long(PS_USED) != kb; tries++) {
		if (tries == 100)
			return "stacks of joined threads were not freed";
		usleep(10000);
	}
	if (write_long(PS_MAX, 3 * kb))
		return "writing " PS_MAX;
	pthread_barrier_init(&ps_barrier, NULL, 3);
	for (int i = 0; i < 3; i++) {
		err = pthread_create(&t[made], NULL, wait_at_barrier, NULL);
		if (err)
			break;
		made++;
	}
	printf("ukl_suite: %d of 3 threads created, then error %d\n", made, err);
	if (made != 2 || err != EAGAIN)
		why = "not exactly two new threads before EAGAIN";
	else if (!kernel_log_has("UKL_NSS_PS: no pinned stack"))
		why = "no kernel warning for the refused thread";
	pthread_barrier_wait(&ps_barrier);
	for (int i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	/* Freed when the threads are reaped (after an RCU grace period). */
	for (int tries = 0; !why && tries < 100; tries++) {
		pthread_barrier_destroy(&ps_barrier);
		pthread_barrier_init(&ps_barrier, NULL, 1);
		if (!pthread_create(&t[0], NULL, wait_at_barrier, NULL)) {
			pthread_join(t[0], NULL);
			break;
		}
		if (tries == 99)
			why = "no room for a thread after the others were joined";
		usleep(10000);
	}
	write_long(PS_MAX, max);
	pthread_barrier_destroy(&ps_barrier);
	return why;
}

static void *return_at_once(void *arg)
{
	return arg;
}

/*
 * A thread creation that fails after the kernel copied the creating task
 * (RLIMIT_NPROC, which binds only without root) must leave the creator's
 * pinned stack alone: the failed child's cleanup once freed it, and the
 * creator ran on freed memory (seen by the fuzzer as an oops in the timer
 * interrupt). Drops root for good: run it alone, last.
 */
static const char *check_nss_ps_clone_fail(void)
{
	struct rlimit one = { 1, 1 };
	long kb = read_long(PS_STACK), used = read_long(PS_USED);
	struct timespec ms = { 0, 1000000 };
	pthread_t t;

	if (kb <= 0 || used < kb)
		return "no " PS_STACK " or " PS_USED;
	if (setrlimit(RLIMIT_NPROC, &one) || setgid(65534) || setuid(65534))
		return "could not become nobody with RLIMIT_NPROC 1";
	for (int i = 0; i < 20; i++) {
		int err = pthread_create(&t, NULL, return_at_once, NULL);

		if (!err) {
			pthread_join(t, NULL);
			return "a thread was created beyond RLIMIT_NPROC";
		}
		if (err != EAGAIN)
			return "the refused thread failed with another error than EAGAIN";
		/* A timer on this stack, as the fuzzer's sleeping worker had. */
		nanosleep(&ms, NULL);
	}
	printf("ukl_suite: ps_used_kb %ld before, %ld after 20 refused threads\n", used,
	       read_long(PS_USED));
	if (read_long(PS_USED) != used)
		return "refused threads changed ps_used_kb (a pinned stack was freed)";
	return NULL;
}

static void *bytes_changed_in_thread(void *arg)
{
	(void)arg;
	return (void *)bytes_changed_by_syscall();
}

static volatile long changed_on_altstack = -1;

static void measure_on_altstack(int sig)
{
	(void)sig;
	changed_on_altstack = bytes_changed_by_syscall();
}

/*
 * A system call from a handler on an alternate signal stack: the stack is
 * the upper half of an area of ours, so the 8 KiB the measurement marks
 * below the handler's stack pointer stay inside it.
 */
static long bytes_changed_on_altstack(void)
{
	static char area[32 << 10] __attribute__((aligned(16)));
	stack_t ss = { .ss_sp = area + sizeof(area) / 2, .ss_size = sizeof(area) / 2 };
	stack_t old;
	struct sigaction sa = { .sa_handler = measure_on_altstack, .sa_flags = SA_ONSTACK };

	if (sigaltstack(&ss, &old) || sigaction(SIGUSR2, &sa, NULL))
		return -1;
	raise(SIGUSR2);
	signal(SIGUSR2, SIG_DFL);
	sigaltstack(&old, NULL);
	return changed_on_altstack;
}

/*
 * The app runs at CPL0, so an interrupt taken while the handler runs has
 * its frame pushed by the CPU onto the signal stack, whatever the system
 * call does (CI saw 216 bytes once). A system call that ran there would
 * change the stack every time; an interrupt cannot land in every one of a
 * few short windows, so the fewest bytes changed over several tries is
 * what the system call itself did.
 */
static long fewest_bytes_changed_on_altstack(void)
{
	long fewest = -1;

	for (int try = 0; try < 8 && fewest != 0; try++) {
		long changed = bytes_changed_on_altstack();

		if (changed < 0)
			return changed;
		if (fewest < 0 || changed < fewest)
			fewest = changed;
	}
	return fewest;
}

/*
 * UKL_NSS: system calls run on the application's own stacks, in the user
 * half, main thread and threads alike, but not on the alternate signal
 * stack (small, with other data below it); SMAP is off.
 */
static const char *check_nss_stack(void)
{
	volatile char here;
	long changed = bytes_changed_by_syscall(), on_altstack;
	unsigned long cr4 = 0;
	void *in_thread;
	pthread_t t;

	if (pthread_create(&t, NULL, bytes_changed_in_thread, NULL) ||
	    pthread_join(t, &in_thread))
		return "pthread";
	on_altstack = fewest_bytes_changed_on_altstack();
	if (cpl() == 0)
		__asm__ volatile("mov %%cr4, %0" : "=r"(cr4));
	printf("ukl_suite: main stack %p; a 1 us sleep changed %ld bytes below the stack pointer, %ld in a thread, %ld on the signal stack (fewest of up to 8 tries); cr4.smap=%lu\n",
	       (void *)&here, changed, (long)in_thread, on_altstack, (cr4 >> 21) & 1);
	if ((long)&here < 0)
		return "the main stack is not in the user half";
	if (changed <= 0 || (long)in_thread <= 0)
		return "the kernel did not run on the application stack";
	if (on_altstack != 0)
		return "the kernel ran on the alternate signal stack";
	return (cr4 >> 21) & 1 ? "SMAP is on" : NULL;
}

#define NSS_SYNCS "/sys/module/ukl/parameters/nss_pgd_syncs"
#define NSS_DROPS "/sys/module/ukl/parameters/nss_pgd_drops"

/*
 * Send a lazy CPU back to init_mm: unmapping page tables makes every CPU
 * that still has this address space loaded but idle switch to init_mm.
 */
static int free_some_page_tables(void)
{
	size_t len = 4 << 20;	/* at least one whole page table */
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	return munmap(p, len);
}

static int run_on_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/*
 * Have an interrupt on CPU 1, in init_mm, wake a wait-queue entry on the
 * calling thread's stack: arm a timer on CPU 1 (hrtimers fire where they
 * were armed), move to CPU 0, send the idle CPU 1 back to init_mm, and
 * block reading the timerfd (the entry lies in that read's frames).
 */
static void *woken_from_cpu1(void *arg)
{
	/* Long enough for the unmapping to finish first, even under TCG. */
	struct itimerspec in_1s = { .it_value = { 1, 0 } };
	uint64_t ticks = 0;
	int fd = -1;

	(void)arg;
	if (!run_on_cpu(1)) {
		fd = timerfd_create(CLOCK_MONOTONIC, 0);
		if (fd >= 0 && timerfd_settime(fd, 0, &in_1s, NULL))
			close(fd), fd = -1;
	}
	if (fd < 0 || run_on_cpu(0) || free_some_page_tables() ||
	    read(fd, &ticks, sizeof(ticks)) != sizeof(ticks))
		ticks = 0;
	if (fd >= 0)
		close(fd);
	return (void *)(long)ticks;
}

/*
 * UKL_NSS: kernel code on another CPU, in init_mm, uses objects on the
 * application's stacks: a timer interrupt on CPU 1 wakes a read() whose
 * wait entry lies on the reader's stack. Without init_mm's view of the
 * application's memory that oopses; with it, nss_pgd_syncs counts the
 * copied top-level entry. Then the same from a thread whose stack is alone
 * in a 512 GiB slot (its own top-level entry, copied in turn): unmapping
 * that stack frees the slot's tables, and init_mm's copy must go with
 * them (nss_pgd_drops).
 */
static const char *check_nss_mirror(void)
{
	long syncs0 = read_long(NSS_SYNCS), drops0 = read_long(NSS_DROPS);
	long syncs1, syncs2, drops2, woken, far_woken = 0;
	size_t far_len = 1 << 20;
	void *far = (void *)(32UL << 39);
	pthread_attr_t attr;
	cpu_set_t all;
	pthread_t t;

	if (syncs0 < 0 || drops0 < 0)
		return "no " NSS_SYNCS " or " NSS_DROPS;
	if (sched_getaffinity(0, sizeof(all), &all))
		return "sched_getaffinity";
	woken = (long)woken_from_cpu1(NULL);
	syncs1 = read_long(NSS_SYNCS);
	far = mmap(far, far_len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (far == MAP_FAILED)
		return "mmap of a stack at 16 TiB";
	pthread_attr_init(&attr);
	if (pthread_attr_setstack(&attr, far, far_len) ||
	    pthread_create(&t, &attr, woken_from_cpu1, NULL) ||
	    pthread_join(t, (void **)&far_woken))
		return "thread on the far stack";
	pthread_attr_destroy(&attr);
	syncs2 = read_long(NSS_SYNCS);
	munmap(far, far_len);
	drops2 = read_long(NSS_DROPS);
	sched_setaffinity(0, sizeof(all), &all);
	printf("ukl_suite: nss_pgd_syncs %ld before, %ld after, %ld after the far stack; nss_pgd_drops %ld -> %ld\n",
	       syncs0, syncs1, syncs2, drops0, drops2);
	if (woken != 1 || far_woken != 1)
		return "a timerfd read was not woken once";
	if (syncs1 <= 0)
		return "no entry was copied into init_mm";
	if (syncs2 <= syncs1)
		return "the far stack's entry was not copied into init_mm";
	return drops2 > drops0 ? NULL : "init_mm kept the entry of a freed table";
}

/*
 * UKL_NSS: the application's address space stays the only one: fork and
 * the exec of another program are refused with warnings; threads (the
 * other checks) and vfork work.
 */
static const char *check_nss_alone(void)
{
	char *argv[] = { "true", NULL };
	const char *why = fork_refused_vfork_works("UKL_NSS: fork by pid");
	int status, err;
	pid_t pid;

	if (why)
		return why;
	err = posix_spawn(&pid, "/bin/true", NULL, NULL, argv, NULL);
	if (!err)
		waitpid(pid, &status, 0);
	printf("ukl_suite: posix_spawn /bin/true: error %d\n", err);
	if (err != EBUSY)
		return "posix_spawn of /bin/true did not fail with EBUSY";
	if (!kernel_log_has("UKL_NSS: exec of /bin/true"))
		return "no kernel warning for the refused exec";
	/* A second instance of the application would be a second space. */
	err = posix_spawn(&pid, "/UKL", NULL, NULL, argv, NULL);
	if (!err)
		waitpid(pid, &status, 0);
	/* EBUSY: one instance at a time, on every UKL kernel. */
	if (err != EBUSY)
		return "a second instance of the application was not refused with EBUSY";
	return NULL;
}

static __attribute__((noinline)) unsigned long overflow(unsigned long depth)
{
	volatile unsigned char frame[1024];

	frame[0] = (unsigned char)depth;
	if (depth == ~0UL)		/* never: the stack runs out first */
		return 0;
	return overflow(depth + 1) + frame[0];
}

/*
 * The same with a system call at every level whose kernel frames are deep
 * (poll() keeps its wait-queue table on the stack): with UKL_NSS_PS the
 * calls run on the pinned stack below the caller's frames until too
 * little of it is left, then on the task stack; only the application's own
 * frames may reach the guard page.
 */
static __attribute__((noinline)) unsigned long overflow_calling(unsigned long depth)
{
	volatile unsigned char frame[1024];
	struct pollfd pfd[4];
	int fds[2];

	frame[0] = (unsigned char)depth;
	if (depth == ~0UL)		/* never: the stack runs out first */
		return 0;
	if (pipe(fds))
		return 1;
	for (int i = 0; i < 4; i++)
		pfd[i] = (struct pollfd){ .fd = fds[i & 1], .events = POLLIN | POLLOUT };
	poll(pfd, 4, 0);
	close(fds[0]);
	close(fds[1]);
	return overflow_calling(depth + 1) + frame[0];
}

/* The target of an instruction breakpoint: its own, never inlined. */
static __attribute__((noinline)) int breakpoint_target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

/*
 * An instruction breakpoint (perf, HW_BREAKPOINT_X) on the program's own
 * code counts each call and lets the instruction run: the return must
 * set RF (IRET; a POPF cannot), or the breakpoint fires again forever.
 * Named only: breakpoints on kernel-half addresses (a UKL application's
 * text) need CONFIG_KPROBES, and perf must let a CPL0 program watch
 * itself (exclude_kernel off).
 */
static const char *check_hw_breakpoint(void)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_BREAKPOINT,
		.size = sizeof(attr),
		.bp_type = HW_BREAKPOINT_X,
		.bp_addr = (unsigned long)breakpoint_target,
		.bp_len = sizeof(long),
		.exclude_hv = 1,
	};
	long long count = -1;
	int fd, sum = 0;

	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0)
		return "perf_event_open(HW_BREAKPOINT_X) on its own code failed";
	for (int i = 0; i < 5; i++)
		sum += breakpoint_target(i);
	if (read(fd, &count, sizeof(count)) != sizeof(count))
		count = -1;
	close(fd);
	if (sum != 15 || count != 5)
		return "an instruction breakpoint did not count 5 calls";
	return NULL;
}

static volatile sig_atomic_t storm_ticks;
static void on_storm_tick(int sig) { storm_ticks += sig == SIGALRM; }

/*
 * Interrupts at every point of the system call path: a 100 us interval
 * timer while a loop makes system calls for 10 s. With AMD's SRSO
 * Safe-RET mitigation, the return to the application goes through the
 * return thunk on the application's stack with interrupts on, and an
 * interrupt there is unwound by the entry code (which must read that
 * stack as the user memory it is). Named only: it is long, and it
 * matters on a kernel with the mitigations under an AMD CPU model.
 */
static const char *check_irq_storm(void)
{
	struct sigaction sa = { .sa_handler = on_storm_tick, .sa_flags = SA_RESTART };
	struct itimerval it = { { 0, 100 }, { 0, 100 } }, off = { { 0, 0 }, { 0, 0 } };
	struct timespec start, now;

	storm_ticks = 0;
	if (sigaction(SIGALRM, &sa, NULL) || setitimer(ITIMER_REAL, &it, NULL))
		return "setitimer(100 us) failed";
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		for (int i = 0; i < 1000; i++)
			syscall(SYS_getppid);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < 10);
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_DFL);
	if (storm_ticks < 1000)
		return "the 100 us timer fired fewer than 1000 times in 10 s";
	return NULL;
}

/*
 * The speculation thunks of application code (ukl-cc compiles returns and
 * indirect branches through the kernel's thunks; the kernel link makes each
 * site what the kernel makes of its own: ukl/kbuild/thunks.py). Print the
 * first bytes of a function that returns and of one that calls through a
 * pointer, as the kernel left them, for the test to disassemble; both must
 * still work.
 */
__attribute__((noinline)) static int thunk_return(int x)
{
	return x + 1;
}

static int (*volatile thunk_pointer)(int) = thunk_return;

__attribute__((noinline)) static int thunk_call(int x)
{
	return thunk_pointer(x) + 1;
}

static void print_code(const char *name, const void *fn)
{
	const unsigned char *p = fn;

	printf("ukl_suite: code %s %p", name, fn);
	for (int i = 0; i < 32; i++)
		printf(" %02x", p[i]);
	printf("\n");
}

/* What the kernel chose, as "vuln NAME: STATUS" (as tests/programs/cpu_vulns.c). */
static void print_vulnerability(const char *name)
{
	char path[128], line[256] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/vulnerabilities/%s", name);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		printf("vuln %s: %s\n", name, line);
	}
	fclose(f);
}

#if __has_include(<ukl.h>)
/* The kernel's stand-in for the vDSO's time(), which the C library calls. */
extern time_t ukl_vdso_time(time_t *t);
#endif

static const char *check_thunks(void)
{
	if (thunk_call(40) != 42)
		return "a call through a function pointer returned a wrong value";
	print_code("thunk_return", thunk_return);
	print_code("thunk_call", thunk_call);
	/* The C library's compiled code is built with the same thunks. */
	print_code("libc_return", labs);
#if __has_include(<ukl.h>)
	/* So are the kernel's vDSO stand-ins, the application's code too. */
	print_code("vdso_return", ukl_vdso_time);
#endif
	print_vulnerability("spectre_v2");
	print_vulnerability("retbleed");
	print_vulnerability("spec_rstack_overflow");
	print_vulnerability("indirect_target_selection");
	return NULL;
}

struct check {
	const char *name;
	const char *(*run)(void);
	int named_only;		/* run only when named on the command line */
};

static const struct check checks[] = {
	{ "files", check_files },	{ "pipe", check_pipe },
	{ "ids", check_ids },		{ "time", check_time },
	{ "clocks", check_clocks },
	{ "mmap", check_mmap },		{ "malloc", check_malloc },
	{ "stack", check_stack },	{ "threads", check_threads },
	{ "signals", check_signals },	{ "fork", check_fork },
	{ "fork-data", check_fork_data },
	{ "fork-threads", check_fork_threads },
	{ "fork-cycles", check_fork_cycles },
	{ "efault", check_efault },	{ "smap", check_smap },
	{ "spawn", check_spawn },	{ "flags", check_flags },
	{ "single-step", check_single_step },
	{ "bss-stack", check_bss_stack },
	{ "pf-df", check_pf_df, 1 },
	{ "nss-ps-stack", check_nss_ps_stack, 1 },
	{ "nss-ps-fork", check_nss_ps_fork, 1 },
	{ "nss-ps-limit", check_nss_ps_limit, 1 },
	{ "nss-ps-clone-fail", check_nss_ps_clone_fail, 1 },
	{ "nss-stack", check_nss_stack, 1 },
	{ "nss-mirror", check_nss_mirror, 1 },
	{ "nss-alone", check_nss_alone, 1 },
	{ "hw-breakpoint", check_hw_breakpoint, 1 },
	{ "irq-storm", check_irq_storm, 1 },
	{ "thunks", check_thunks, 1 },
};

static int wanted(const struct check *c, int argc, char **argv, int first)
{
	const char *name = c->name;

	if (argc <= first)
		return !c->named_only;
	for (int i = first; i < argc; i++)
		if (!strcmp(argv[i], name))
			return 1;
	return 0;
}

/* Turn bypass on for the main thread (and so for every thread it creates). */
static int bypass_on(void)
{
#if __has_include(<ukl.h>)
	return ukl_bypass(1) == 0 ? 0 : -1;
#else
	errno = EOPNOTSUPP;
	return -1;
#endif
}

int main(int argc, char **argv)
{
	const char *env = getenv("UKL_SUITE_ENV");
	int first = 1;

	if (argc == 2 && !strcmp(argv[1], "--overflow"))
		return (int)overflow(0);
	if (argc == 2 && !strcmp(argv[1], "--overflow-calling"))
		return (int)overflow_calling(0);
	printf("ukl_suite: cpl=%u argc=%d argv0=%s env=%s\n", cpl(), argc,
	       argv[0], env ? env : "(unset)");
	if (argc > 1 && !strcmp(argv[1], "--bypass")) {
		if (bypass_on()) {
			printf("ukl_suite: FAIL bypass: %s\n", strerror(errno));
			return 1;
		}
		printf("ukl_suite: bypass on\n");
		first = 2;
	}
	for (unsigned int i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
		if (wanted(&checks[i], argc, argv, first))
			report(checks[i].name, checks[i].run());
	printf("ukl_suite: %d failure(s)\n", failures);
	return failures;
}
