// SPDX-License-Identifier: GPL-2.0
/*
 * A seeded, trinity-like system call fuzzer, run as the UKL application
 * (CPL0) or as an ordinary process on the stock kernel (`ukl fuzz`).
 *
 *   fuzz SEED SECONDS THREADS [--log-calls]
 *
 * THREADS workers call random system call numbers (every number up to
 * NR_LIMIT, UKL's private numbers and the UKL switch functions) with
 * arguments drawn from pools of hostile values: 0, -1, small and
 * boundary integers, open file descriptors, unmapped, non-canonical and
 * kernel addresses, the application's own section bounds +-1, and a
 * scratch area of random bytes. The kernel must answer each with a result
 * or an error: an oops, a warning or a stall is a finding, and so is a
 * signal the call itself raised in the fuzzer (a bad pointer must give
 * EFAULT, not SIGSEGV).
 *
 * The harness survives its own calls: it runs as nobody, reads and
 * writes only its stack and static data, prints through a descriptor no
 * pool holds, and leaves out the calls that would end, replace, block
 * signals in or unmap the fuzzer itself (see `excluded`). A per-worker
 * timer interrupts blocking calls. The fuzzing runs in a child of the
 * application process, which reports how it ended (main()). Its main
 * thread is the watchdog: it
 * prints progress, interrupts a worker that made no progress for a
 * second, names one stuck for STALL_S seconds with its current call and
 * lets another take its place, and ends the run. The replacements are
 * started with the workers and wait: by the time one is needed the calls
 * may have changed what a new thread needs (the limits, the address
 * space), and the application that fuzzes itself (no fork) had only its
 * first threads for the whole run.
 *
 * Output lines the host reads (ukl/fuzz.py):
 *   fuzz: seed S seconds N threads T cpl C
 *   fuzz: progress CALLS at ELAPSED s
 *   fuzz: stalled worker W call NR(a0, ..., a5) #INDEX
 *   fuzz: signal SIG (code C) in worker W call NR(...) #INDEX
 *   fuzz: signal SIG ended the fuzzing process, then each worker's call
 *   fuzz: SIGKILL ended fuzzing process G after N s, then each worker's call
 *   fuzz: done calls N distinct D ok K stalled S peer-alive yes|no
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NR_LIMIT	460		/* past the last x86-64 number in 6.1 */
#define UKL_NR_BASE	0x20000000L
#define UKL_NR_COUNT	6		/* three calls and three numbers past them */
#define MAX_THREADS	8
/* Workers, with the ones started for workers stuck in a call. */
#define MAX_WORKERS	32
#define SPARE_WORKERS	8	/* started waiting, to replace stalled ones */
#define OUT_FD		1023		/* the console; no pool holds it */
#define SCRATCH_ADDR	0x10000000UL
#define SCRATCH_PAGES	16
#define STALL_S		5
#define NOBODY		65534
#define FUZZ_DIR	"/tmp/fuzz"

/* The UKL switches (<ukl.h> of the UKL sysroot); weak, so stock links too. */
long ukl_set_bypass(int on) __attribute__((weak));
long ukl_set_run_to_completion(int on) __attribute__((weak));

/*
 * The application's own bounds: kernel memory at CPL0 (the UKL link's
 * symbols), process memory on stock (the ordinary link's). Weak: each
 * link has one set; the other is 0.
 */
extern char __ukl_text_start[] __attribute__((weak));
extern char __ukl_text_end[] __attribute__((weak));
extern char __ukl_rodata_start[] __attribute__((weak));
extern char __ukl_rodata_end[] __attribute__((weak));
extern char __ukl_data_start[] __attribute__((weak));
extern char __ukl_bss_end[] __attribute__((weak));
extern char __executable_start[] __attribute__((weak));
extern char etext[] __attribute__((weak));
extern char end[] __attribute__((weak));

struct call {
	long nr;
	long arg[6];
	unsigned long index;
};

struct worker {
	pthread_t thread;
	int id;
	pid_t tid;
	uint64_t rng;
	timer_t timer;
	volatile int active;	/* a spare waits until the watchdog sets it */
	volatile unsigned long calls;
	volatile unsigned long ok;
	struct call current;	/* written before each call, read by the watchdog */
} __attribute__((aligned(64)));

/*
 * Everything the workers and the watchdog change, in its own mapping: the
 * pools never point at it, so a call that writes into the application's
 * static data (which the fuzzer asks for on purpose) does not corrupt it.
 */
struct harness {
	struct worker workers[MAX_WORKERS];
	int nworkers;
	int log_calls;
	volatile int stop;
	volatile int done;		/* the fuzzing process finished its time */
	/* Kept by the supervisor across fuzzing processes. */
	volatile unsigned long elapsed, calls_before, ok_before, stalled;
	int fds[16];
	int nfds;
	/* Which numbers answered something other than ENOSYS (one byte each:
	 * the workers' writes race harmlessly). */
	unsigned char answered[NR_LIMIT + UKL_NR_COUNT];
};

static struct harness *h;

static void out(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	/* The timers interrupt console writes too. */
	for (char *p = buf; n > 0;) {
		ssize_t done = write(OUT_FD, p, n);

		if (done < 0 && errno != EINTR)
			_exit(4);
		if (done > 0) {
			p += done;
			n -= done;
		}
	}
}

static void describe(const struct call *c, const char *prefix)
{
	out("%s call %ld(%#lx, %#lx, %#lx, %#lx, %#lx, %#lx) #%lu\n", prefix, c->nr,
	    c->arg[0], c->arg[1], c->arg[2], c->arg[3], c->arg[4], c->arg[5], c->index);
}

/* splitmix64: a seed per worker, reproducible runs. */
static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static long pick(uint64_t *s, const long *pool, size_t n)
{
	return pool[next(s) % n];
}

static long address(uint64_t *s)
{
	static const long fixed[] = {
		0, 1, 4095, 4096, -1L, -4096L,
		0x00007ffffffff000L,		/* top of the user half */
		0x0000800000000000L,		/* first non-canonical */
		0x7fffffffffffffffL,
		(long)0xffff800000000000UL,	/* bottom of the kernel half */
		(long)0xffffffff81000000UL,	/* kernel text */
		(long)0xffffffffff600000UL,	/* vsyscall page */
	};
	long scratch = (long)SCRATCH_ADDR + (long)(next(s) % (SCRATCH_PAGES * 4096UL));

	switch (next(s) % 8) {
	case 0:
		return pick(s, fixed, sizeof(fixed) / sizeof(fixed[0]));
	case 1: {
		/*
		 * Around the application's image: text and read-only data
		 * (writes must fail), just before its data and just past its
		 * .bss (other kernel memory). Not inside its data: that is
		 * the fuzzer's own C library state.
		 */
		const long bounds[] = {
			(long)__ukl_text_start - 1, (long)__ukl_text_start,
			(long)__ukl_text_end - 1, (long)__ukl_text_end,
			(long)__ukl_rodata_start, (long)__ukl_rodata_end - 1,
			(long)__ukl_data_start - 1, (long)__ukl_bss_end,
			(long)__ukl_bss_end + 1,
			(long)__executable_start, (long)etext - 1, (long)etext,
			(long)end, (long)end + 1,
		};

		return pick(s, bounds, sizeof(bounds) / sizeof(bounds[0]));
	}
	case 2:
		return (long)SCRATCH_ADDR + (long)(SCRATCH_PAGES * 4096UL) - (long)(next(s) % 64);
	default:
		return scratch;
	}
}

static long integer(uint64_t *s)
{
	static const long fixed[] = {
		0, 1, 2, 3, 4, 7, 8, 16, 64, 255, 256, 4095, 4096, 4097, 65535, 65536,
		0x7fffffff, 0x80000000L, 0xffffffffL, 0x100000000L, -1, -2, -4095,
		0x7fffffffffffffffL, (long)0x8000000000000000UL, 1L << 40,
	};

	switch (next(s) % 4) {
	case 0:
		return (long)(next(s) & 0xff);
	case 1:
		return (long)(uint32_t)next(s);
	default:
		return pick(s, fixed, sizeof(fixed) / sizeof(fixed[0]));
	}
}

static long argument(uint64_t *s)
{
	switch (next(s) % 10) {
	case 0: case 1: case 2:
		return h->fds[next(s) % h->nfds];
	case 3: case 4: case 5:
		return address(s);
	case 6:
		/* Flags: one to three random bits. */
		return (1L << (next(s) % 32)) | (1L << (next(s) % 32)) * (long)(next(s) & 1);
	default:
		return integer(s);
	}
}

/*
 * Where the memory calls may act: inside the scratch area, below
 * mmap_min_addr, or at kernel-half and non-canonical addresses (which must
 * fail). Anywhere else they could unmap the fuzzer's own text (on stock),
 * heap, thread stacks or stack.
 */
static int harmless_range(long addr, long length)
{
	unsigned long a = (unsigned long)addr, len = (unsigned long)length;
	unsigned long lo = SCRATCH_ADDR, hi = SCRATCH_ADDR + SCRATCH_PAGES * 4096UL;

	if (a >= 0x0000800000000000UL)
		return 1;
	if (len > hi - lo)
		return a + len < a ? 1 : a < 0x1000 && a + len <= 0x10000;
	return (a >= lo && a + len <= hi) || (a + len <= 0x10000);
}

/*
 * Calls that would end, replace or stop the fuzzer itself, block the
 * signals its timers need, or unmap its stack, TLS or heap: not kernel
 * findings. Some are left out only for some arguments.
 */
static int excluded(const struct call *c)
{
	switch (c->nr) {
	case SYS_exit: case SYS_exit_group: case SYS_rt_sigreturn:
	case SYS_clone: case SYS_clone3: case SYS_fork: case SYS_vfork:
	case SYS_execve: case SYS_execveat:
	case SYS_rt_sigaction: case SYS_rt_sigprocmask: case SYS_sigaltstack:
	case SYS_rt_sigsuspend: case SYS_pause:
	case SYS_kill: case SYS_tkill: case SYS_tgkill:
	case SYS_rt_sigqueueinfo: case SYS_rt_tgsigqueueinfo: case SYS_pidfd_send_signal:
	case SYS_seccomp: case SYS_brk: case SYS_close_range:
	/* An idle-class or niced worker starves beside busy ones and looks
	 * stuck. */
	case SYS_sched_setscheduler: case SYS_sched_setattr: case SYS_setpriority:
	case SYS_setitimer: case SYS_alarm: case SYS_timer_delete:
	case SYS_munmap: case SYS_mremap: case SYS_mprotect: case SYS_madvise:
	case SYS_mmap: case SYS_pkey_mprotect: case SYS_shmat:
		/* The memory calls: only on the scratch area (below). */
		break;
	default:
		return 0;
	}
	switch (c->nr) {
	case SYS_munmap: case SYS_mprotect: case SYS_madvise: case SYS_pkey_mprotect:
	case SYS_mremap: case SYS_mmap: case SYS_shmat:
		if (c->nr == SYS_mmap && !(c->arg[3] & (MAP_FIXED | MAP_FIXED_NOREPLACE)))
			return 0;
		if (c->nr == SYS_mremap && (c->arg[3] & MREMAP_FIXED) &&
		    !harmless_range(c->arg[4], c->arg[2]))
			return 1;
		if (c->nr == SYS_shmat)
			return !harmless_range(c->arg[1], 1UL << 20);
		return !harmless_range(c->arg[0], c->arg[1]);
	}
	return 1;
}

/* Signals the fuzzer does not survive or reports as findings. */
static int fatal_signal(long sig)
{
	return sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS ||
	       sig == SIGILL || sig == SIGFPE || sig == SIGTRAP;
}

/*
 * Calls with these arguments would stop the fuzzer in other ways:
 * setting FS (its TLS), a seccomp filter, syscall user dispatch (every
 * later call a SIGSYS), a CPU-time or memory limit.
 */
static int excluded_arguments(const struct call *c)
{
	/* The kernel takes these arguments as 32-bit ints: compare them so
	 * (0x100000000 is RLIMIT_CPU too). */
	unsigned int a0 = (unsigned int)c->arg[0], a1 = (unsigned int)c->arg[1];

	switch (c->nr) {
	/*
	 * Calls that store a pointer to the fuzzer's own thread data (its TLS,
	 * its robust list, its clear-tid word) in the scratch area, where
	 * later calls take it as a buffer and overwrite that data.
	 */
	case SYS_get_robust_list:
		return 1;
	case SYS_arch_prctl:
		/* ARCH_SET_FS ends the fuzzer's TLS; ARCH_GET_FS and _GS. */
		return a0 == 0x1002 || a0 == 0x1003 || a0 == 0x1004;
	case SYS_prctl:
		/* PR_SET_SECCOMP; PR_GET_TID_ADDRESS; PR_SET_SYSCALL_USER_DISPATCH. */
		return a0 == 22 || a0 == 40 || a0 == 59;
	case SYS_ptrace:
		/* Traced by init, every signal would stop the fuzzer for a
		 * tracer that never answers. (A UKL application is refused.) */
		return c->arg[0] == 0;			/* PTRACE_TRACEME */
	case SYS_setrlimit:
	case SYS_prlimit64: {
		unsigned int r = c->nr == SYS_setrlimit ? a0 : a1;

		return r == RLIMIT_CPU || r == RLIMIT_DATA || r == RLIMIT_STACK ||
		       r == RLIMIT_AS || r == RLIMIT_RTTIME || r == RLIMIT_NOFILE;
	}
	case SYS_dup2: case SYS_dup3:
		return a1 == OUT_FD;
	case SYS_fcntl:
		/* F_SETSIG to a signal that stops or ends the fuzzer. */
		if (a1 == 10 && fatal_signal((int)c->arg[2]))
			return 1;
		return a0 == OUT_FD;
	case SYS_ioctl:
		return a0 == OUT_FD;
	}
	return 0;
}

static long make_call(const struct call *c)
{
	long r;

	if (c->nr >= UKL_NR_BASE + UKL_NR_COUNT) {
		/* The UKL switch functions, where the kernel has them. */
		long (*fn)(int) = c->nr & 1 ? ukl_set_run_to_completion : ukl_set_bypass;
		long r;

		if (!fn)
			return -ENOSYS;
		r = fn((int)c->arg[0]);
		/* A worker that is never preempted would starve the
		 * watchdog: run-to-completion goes off again at once. */
		if (fn == ukl_set_run_to_completion)
			fn(0);
		return r;
	}
	r = syscall(c->nr, c->arg[0], c->arg[1], c->arg[2], c->arg[3], c->arg[4], c->arg[5]);
	return r < 0 ? -errno : r;
}

static void on_timer(int sig)
{
	(void)sig;		/* only interrupts a blocking call */
}

static void arm_timer(struct worker *w)
{
	struct itimerspec every = { { 0, 50 * 1000 * 1000 }, { 0, 50 * 1000 * 1000 } };
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGALRM };

	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_settime(w->timer, 0, &every, NULL) == 0)
		return;
	/* The fuzzer deleted or retargeted it: a new one. */
	if (timer_create(CLOCK_MONOTONIC, &ev, &w->timer) == 0)
		timer_settime(w->timer, 0, &every, NULL);
}

static struct worker *self_worker(void)
{
	pthread_t me = pthread_self();

	for (int i = 0; i < h->nworkers; i++)
		if (pthread_equal(h->workers[i].thread, me))
			return &h->workers[i];
	return NULL;
}

/*
 * A fault the kernel raised in the fuzzer: a finding, reported with the
 * call. The same signals sent by a process, a timer or a message queue
 * (si_code <= 0), which the calls can set up, are ignored.
 */
static void on_fault(int sig, siginfo_t *info, void *context)
{
	struct worker *w = self_worker();
	char prefix[64];

	(void)context;
	if (info->si_code <= 0)
		return;
	snprintf(prefix, sizeof(prefix), "fuzz: signal %d (code %d) in worker %d", sig,
		 info->si_code, w ? w->id : -1);
	if (w)
		describe(&w->current, prefix);
	else
		out("%s outside the workers\n", prefix);
	_exit(3);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGALRM };

	w->tid = (pid_t)syscall(SYS_gettid);
	while (!w->active && !h->stop)
		usleep(100000);
	ev._sigev_un._tid = w->tid;
	if (timer_create(CLOCK_MONOTONIC, &ev, &w->timer))
		out("fuzz: timer_create: %s\n", strerror(errno));
	while (!h->stop) {
		struct call c;
		long r;

		if ((w->calls & 63) == 0)
			arm_timer(w);
		c.index = w->calls;
		switch (next(&w->rng) % 16) {
		case 0:
			c.nr = UKL_NR_BASE + (long)(next(&w->rng) % (UKL_NR_COUNT + 2));
			break;
		default:
			c.nr = (long)(next(&w->rng) % NR_LIMIT);
		}
		for (int i = 0; i < 6; i++)
			c.arg[i] = argument(&w->rng);
		if (excluded(&c) || excluded_arguments(&c))
			continue;
		w->current = c;
		if (h->log_calls)
			describe(&c, "fuzz: worker");
		r = make_call(&c);
		if (r != -ENOSYS) {
			long slot = c.nr < NR_LIMIT ? c.nr : NR_LIMIT + (c.nr - UKL_NR_BASE);

			if (slot >= 0 && slot < NR_LIMIT + UKL_NR_COUNT)
				h->answered[slot] = 1;
		}
		w->ok += r >= 0;
		w->calls++;
	}
	return NULL;
}

/* A thread's scheduler state (R, S, D...), '?' where /proc hides it (a
 * UKL application is not dumpable, so its /proc files are root's). */
static char task_state(pid_t tid)
{
	char path[64], buf[256], *p;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] && p[2] ? p[2] : '?';
}

/* Worker i draws from its own stream of the seed; a spare waits. */
static int start_worker(unsigned long seed, int active)
{
	struct worker *w;
	int err;

	if (h->nworkers == MAX_WORKERS)
		return -1;
	w = &h->workers[h->nworkers];
	w->id = h->nworkers;
	w->rng = seed * 1000003 + (uint64_t)w->id;
	w->active = active;
	err = pthread_create(&w->thread, NULL, work, w);
	if (err) {
		out("fuzz: pthread_create failed: %s\n", strerror(err));
		return -1;
	}
	/* Published after the thread exists: the watchdog reads it. */
	h->nworkers++;
	return 0;
}

/* Let a waiting spare worker take over; 0 when none is left. */
static int release_spare(void)
{
	for (int i = 0; i < h->nworkers; i++) {
		if (!h->workers[i].active) {
			h->workers[i].active = 1;
			return 1;
		}
	}
	return 0;
}

static void setup_pools(void)
{
	int sv[2], p[2];

	h->nfds = 0;
	mkdir(FUZZ_DIR, 0777);
	if (chdir(FUZZ_DIR))
		out("fuzz: chdir %s: %s\n", FUZZ_DIR, strerror(errno));
	h->fds[h->nfds++] = -1;
	h->fds[h->nfds++] = 0;
	h->fds[h->nfds++] = open("/dev/null", O_RDWR);
	h->fds[h->nfds++] = open("/dev/zero", O_RDONLY);
	h->fds[h->nfds++] = open("f", O_RDWR | O_CREAT, 0600);
	h->fds[h->nfds++] = open(".", O_RDONLY | O_DIRECTORY);
	h->fds[h->nfds++] = open("/proc/self/maps", O_RDONLY);
	h->fds[h->nfds++] = open("/proc/self/mem", O_RDWR);
	if (!pipe(p)) {
		h->fds[h->nfds++] = p[0];
		h->fds[h->nfds++] = p[1];
	}
	if (!socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		h->fds[h->nfds++] = sv[0];
		h->fds[h->nfds++] = sv[1];
	}
	h->fds[h->nfds++] = socket(AF_INET, SOCK_STREAM, 0);
	h->fds[h->nfds++] = socket(AF_INET, SOCK_DGRAM, 0);
	h->fds[h->nfds++] = 100000;
}

/* The scratch area: random bytes the kernel reads as structures. */
static void setup_scratch(uint64_t seed)
{
	uint64_t s = seed ^ 0x5eed;
	uint64_t *p = mmap((void *)SCRATCH_ADDR, SCRATCH_PAGES * 4096UL,
			   PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

	if (p == MAP_FAILED) {
		out("fuzz: scratch mmap: %s\n", strerror(errno));
		_exit(2);
	}
	for (size_t i = 0; i < SCRATCH_PAGES * 4096UL / 8; i++)
		p[i] = next(&s) % 4 ? next(&s) : (next(&s) & 0xff);
	/* No int in it names a signal the fuzzer does not survive (a
	 * timer_create or mq_notify sigevent read from here). */
	for (uint32_t *q = (uint32_t *)p; q < (uint32_t *)(p + SCRATCH_PAGES * 512); q++)
		if (fatal_signal(*q))
			*q += 32;
}

/*
 * The ordinary process beside the application (the image's helper) writes
 * a rising count; it is alive if the count still rises. This is the
 * fuzzer's own view, for the reader: ukl/fuzz.py judges from the counts
 * the peer says on the console, since an application that fuzzes itself
 * may have lost what it needs to open the file.
 */
static long peer_count(void)
{
	char buf[32] = "";
	int fd = open("/tmp/peer.count", O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? atol(buf) : -1;
}

/* A line of /proc/meminfo or similar: the one starting with `key`. */
static void print_line_of(const char *path, const char *key)
{
	char line[256];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			out("fuzz: peer: %s %s", path, line);
	fclose(f);
}

/*
 * Why the ordinary process beside the fuzzer stopped counting: memory and
 * commit, room in /tmp, and the state of every process whose command line
 * mentions the count file (the peer's shell).
 */
static void diagnose_peer(void)
{
	struct statvfs tmp;
	struct dirent *e;
	DIR *proc;
	int fd = open("/tmp/peer.count", O_RDONLY);

	if (fd < 0)
		out("fuzz: peer: the fuzzer cannot open /tmp/peer.count: %s\n", strerror(errno));
	else
		close(fd);
	print_line_of("/proc/meminfo", "MemAvailable");
	print_line_of("/proc/meminfo", "Committed_AS");
	print_line_of("/proc/meminfo", "CommitLimit");
	if (!statvfs("/tmp", &tmp))
		out("fuzz: peer: /tmp %lu of %lu blocks free, %lu of %lu inodes\n",
		    (unsigned long)tmp.f_bavail, (unsigned long)tmp.f_blocks,
		    (unsigned long)tmp.f_favail, (unsigned long)tmp.f_files);
	proc = opendir("/proc");
	while (proc && (e = readdir(proc))) {
		char path[300], cmd[256] = "";
		ssize_t n;
		int fd;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		n = read(fd, cmd, sizeof(cmd) - 1);
		close(fd);
		for (ssize_t i = 0; i < n; i++)
			if (!cmd[i])
				cmd[i] = ' ';
		if (n <= 0 || !strstr(cmd, "peer.count"))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", e->d_name);
		print_line_of(path, "State");
		snprintf(path, sizeof(path), "/proc/%s/wchan", e->d_name);
		fd = open(path, O_RDONLY);
		if (fd >= 0) {
			n = read(fd, cmd, sizeof(cmd) - 1);
			close(fd);
			cmd[n > 0 ? n : 0] = '\0';
			out("fuzz: peer: pid %s waits in %s\n", e->d_name, cmd);
		}
	}
	if (proc)
		closedir(proc);
}

static int cpl(void)
{
	unsigned short cs;

	__asm__ volatile("mov %%cs, %0" : "=r"(cs));
	return cs & 3;
}

/* One fuzzing process: the workers for `seconds`, the watchdog here. */
static int fuzz_main(unsigned long seed, unsigned long seconds, int nthreads)
{
	struct sigaction timer = { .sa_handler = on_timer };
	struct sigaction fault = { .sa_sigaction = on_fault, .sa_flags = SA_SIGINFO };
	/* Room for the workers' stacks, not for a call that maps the
	 * machine's memory (the OOM killer would end the run). */
	struct rlimit as = { 256UL << 20, 256UL << 20 };
	unsigned long total = 0, last = 0;
	unsigned long idle[MAX_WORKERS] = { 0 }, seen[MAX_WORKERS] = { 0 };

	sigaction(SIGALRM, &timer, NULL);
	/* Every signal a call may send is ignored, real-time ones included
	 * (glibc refuses the two it keeps for itself). */
	for (int sig = 1; sig <= SIGRTMAX; sig++)
		if (sig != SIGALRM && sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_IGN);
	/* A call must not raise these in the fuzzer: findings. */
	sigaction(SIGSEGV, &fault, NULL);
	sigaction(SIGBUS, &fault, NULL);
	sigaction(SIGILL, &fault, NULL);
	sigaction(SIGFPE, &fault, NULL);
	sigaction(SIGTRAP, &fault, NULL);

	setup_scratch(seed);
	mkdir(FUZZ_DIR, 0777);
	if (chown(FUZZ_DIR, NOBODY, NOBODY))
		out("fuzz: chown %s: %s\n", FUZZ_DIR, strerror(errno));
	/* Root could end the machine with a call (reboot, /dev/mem): that
	 * is not a kernel finding. The fuzzer runs as nobody. */
	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY)) {
		out("fuzz: cannot drop to nobody: %s\n", strerror(errno));
		return 2;
	}
	setup_pools();

	h->nworkers = 0;
	for (int i = 0; i < nthreads + SPARE_WORKERS; i++)
		if (start_worker(seed, i < nthreads))
			return 2;
	if (setrlimit(RLIMIT_AS, &as))
		out("fuzz: setrlimit(RLIMIT_AS): %s\n", strerror(errno));
	for (unsigned long t = 0; t < seconds; t++) {
		int n = h->nworkers;

		sleep(1);
		h->elapsed++;
		total = 0;
		for (int i = 0; i < n; i++) {
			struct worker *w = &h->workers[i];
			unsigned long calls = w->calls;

			total += calls;
			if (!w->active)
				continue;
			idle[i] = calls == seen[i] ? idle[i] + 1 : 0;
			seen[i] = calls;
			/* Its timer may be gone (the calls reach timers too):
			 * interrupt a blocking call from here. */
			if (idle[i])
				pthread_kill(w->thread, SIGALRM);
			if (idle[i] == STALL_S) {
				char prefix[64];

				/* Blocked for good (a signal mask it was given,
				 * an uninterruptible wait): carry on without it. */
				snprintf(prefix, sizeof(prefix), "fuzz: stalled worker %d (%c)", i,
					 task_state(w->tid));
				describe(&w->current, prefix);
				h->stalled++;
				if (!release_spare() && start_worker(seed, 1))
					out("fuzz: no slot for another worker\n");
			}
		}
		if (t % 10 == 9 || total - last > 100000) {
			out("fuzz: progress %lu at %lu s\n", h->calls_before + total, h->elapsed);
			last = total;
		}
	}
	h->stop = 1;
	h->done = 1;
	/* Workers blocked in a call end with the process. */
	return 0;
}

static unsigned long counted(size_t field)
{
	unsigned long sum = 0;

	for (int i = 0; i < h->nworkers; i++)
		sum += *(volatile unsigned long *)((char *)&h->workers[i] + field);
	return sum;
}

/*
 * The harness, shared with the fuzzing processes, between two inaccessible
 * pages: a call that writes past a neighbouring mapping (a thread's stack)
 * gets EFAULT instead of reaching it.
 */
static struct harness *harness_mapping(void)
{
	size_t size = (sizeof(struct harness) + 4095) & ~4095UL;
	char *area = mmap(NULL, size + 2 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *mid;

	if (area == MAP_FAILED)
		return NULL;
	mid = mmap(area + 4096, size, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	return mid == MAP_FAILED ? NULL : mid;
}

static void report_calls(const char *format)
{
	for (int i = 0; i < h->nworkers; i++) {
		char prefix[64];

		snprintf(prefix, sizeof(prefix), format, i);
		describe(&h->workers[i].current, prefix);
	}
}

/*
 * The application process supervises: the fuzzing runs in a child, so
 * that whatever ends it is reported here with the call each worker was
 * making (the harness mapping is shared). A SIGKILL is taken for the calls'
 * own doing: a new child, with the next seed, takes over for the time
 * left. Any other end is a finding. Where
 * the kernel refuses fork (UKL_NSS), the application fuzzes itself.
 */
int main(int argc, char **argv)
{
	unsigned long seed, seconds;
	long peer_before, peer_after;
	int nthreads, distinct = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: fuzz SEED SECONDS THREADS [--log-calls]\n");
		return 2;
	}
	seed = strtoul(argv[1], NULL, 0);
	seconds = strtoul(argv[2], NULL, 0);
	nthreads = atoi(argv[3]);
	if (nthreads < 1 || nthreads > MAX_THREADS) {
		fprintf(stderr, "fuzz: THREADS must be 1-%d\n", MAX_THREADS);
		return 2;
	}
	h = harness_mapping();
	if (!h || dup2(1, OUT_FD) != OUT_FD)
		return 2;
	h->log_calls = argc > 4 && !strcmp(argv[4], "--log-calls");
	/* Only OUT_FD reaches the console: the calls get /dev/null. */
	for (int fd = 0; fd < 3; fd++) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, fd);
		if (null > 2)
			close(null);
	}
	out("fuzz: seed %lu seconds %lu threads %d cpl %d\n", seed, seconds, nthreads, cpl());
	/* The helper may not have written it yet. */
	for (int i = 0; i < 30 && peer_count() < 0; i++)
		sleep(1);
	peer_before = peer_count();

	for (unsigned long generation = 0; h->elapsed < seconds; generation++) {
		pid_t child;
		int status;

		h->done = 0;
		h->stop = 0;
		child = fork();
		if (child < 0) {
			out("fuzz: fork refused (%s): the application fuzzes itself\n",
			    strerror(errno));
			if (fuzz_main(seed, seconds, nthreads))
				return 2;
			h->calls_before += counted(offsetof(struct worker, calls));
			h->ok_before += counted(offsetof(struct worker, ok));
			break;
		}
		if (child == 0)
			_exit(fuzz_main(seed + generation, seconds - h->elapsed, nthreads));
		while (waitpid(child, &status, 0) < 0)
			if (errno != EINTR)
				return 2;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && h->done) {
			h->calls_before += counted(offsetof(struct worker, calls));
			h->ok_before += counted(offsetof(struct worker, ok));
			break;
		}
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
			out("fuzz: SIGKILL ended fuzzing process %lu after %lu s\n", generation,
			    h->elapsed);
			report_calls("fuzz: SIGKILL: worker %d was in");
			h->calls_before += counted(offsetof(struct worker, calls));
			h->ok_before += counted(offsetof(struct worker, ok));
			/*
			 * Each fuzzing process has its own copy of the
			 * application's static data (full fork), so the next
			 * one starts clean at CPL0 too.
			 */
			out("fuzz: another fuzzing process takes over\n");
			h->elapsed++;	/* no endless restarts */
			continue;
		}
		if (WIFSIGNALED(status))
			out("fuzz: signal %d ended the fuzzing process\n", WTERMSIG(status));
		else
			out("fuzz: the fuzzing process exited with status %d\n",
			    WEXITSTATUS(status));
		report_calls("fuzz: signal: worker %d was in");
		return 3;
	}
	for (int i = 0; i < NR_LIMIT + UKL_NR_COUNT; i++)
		distinct += h->answered[i];
	peer_after = peer_count();
	if (peer_before < 0 || peer_after <= peer_before)
		diagnose_peer();
	out("fuzz: done calls %lu distinct %d ok %lu stalled %lu peer-alive %s\n",
	    h->calls_before, distinct, h->ok_before, h->stalled,
	    peer_before >= 0 && peer_after > peer_before ? "yes" : "no");
	return 0;
}
