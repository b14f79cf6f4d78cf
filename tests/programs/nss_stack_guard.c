/*
 * UKL_NSS: system calls run on the application's own stacks, so no thread
 * may take away the stack a call sleeps on (Documentation/x86/ukl.rst,
 * "System calls on the application's own stack"). The UKL application,
 * on the ukl-nss kernel:
 *
 *   nss_stack_guard [OP...]      (default: every OP)
 *
 * Each OP starts a reader thread on a stack of its own that blocks in
 * read() on a pipe, then tries from the main thread to unmap, protect,
 * discard or move that stack: every attempt must fail with EBUSY, while
 * the same change to the bottom of that stack, far below the call, must
 * work. Then it writes to the pipe: the read must return what was
 * written, with the reader's frame intact, and the whole stack may be
 * unmapped once the call is over.
 *
 *   munmap     munmap() of the stack and of one page below the call
 *   mprotect   PROT_NONE, PROT_READ and PROT_READ|PROT_WRITE (which keeps
 *              access, but clears each page table entry for a moment)
 *   madvise    MADV_DONTNEED, MADV_FREE, MADV_PAGEOUT, MADV_COLD (which
 *              clears entries for a moment too), and MADV_PAGEOUT through
 *              process_madvise() (MADV_NORMAL is allowed; MADV_FREE of
 *              the bottom page frees it at once)
 *   mremap     a move with MREMAP_FIXED, MREMAP_DONTUNMAP, a shrink
 *   mmap       mmap() with MAP_FIXED over the stack
 *   brk        a stack at the top of the heap, brk() below it
 *   file       a stack in a shared mapping of a memfd: truncating the
 *              file and punching a hole in it under the call (growing it
 *              and a hole far below are allowed)
 *   direct     a stack in a shared mapping of a file on the disk at
 *              /data (`ukl run --disk`): a direct-I/O write over the
 *              call's frames must leave their pages mapped and cached
 *              (the write goes through the page cache), one far below
 *              must drop the page it writes as usual (not in the
 *              default list: it needs the disk)
 *   self       a thread unmaps, protects and discards the stack under its
 *              own munmap(), mprotect() and madvise() (no reader)
 *   race       two threads loop reading a byte at a time, working a
 *              little between reads, while the main thread discards the
 *              unused part of their stacks below their frames before each
 *              byte it writes: refused while a read is in flight there,
 *              allowed between reads, when each call's entry must not
 *              run on pages discarded after its probe
 *
 * Before the kernel refused them, each first change took the frames of
 * the sleeping read (its wait-queue entry) away: an oops when the write
 * woke it. At the end one reader is left blocked: exit() must end it
 * cleanly. Prints "nss_stack_guard: ok OP" or "FAIL OP: why" per OP and
 * "nss_stack_guard: N failure(s)"; exits with 1 if any.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define PAGE		4096UL
#define STACK_LEN	(256 * 1024UL)
#define MSG		"sixteen bytes!!"	/* 16 with the NUL */

struct reader {
	int fds[2];
	char *stack;
	size_t len;
	pthread_t thread;
	volatile pid_t tid;
	volatile unsigned long sp;	/* about where read() was called */
};

static unsigned long page_of(unsigned long addr)
{
	return addr & ~(PAGE - 1);
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	volatile unsigned long canary[32];
	char buf[32];
	ssize_t n;
	int i;

	for (i = 0; i < 32; i++)
		canary[i] = (unsigned long)&canary[i] * 0x9e3779b97f4a7c15UL;
	memset(buf, 0, sizeof(buf));
	r->sp = (unsigned long)&n;
	r->tid = gettid();
	n = read(r->fds[0], buf, sizeof(buf));
	if (n != sizeof(MSG) || memcmp(buf, MSG, sizeof(MSG)))
		return "the blocked read did not return what was written";
	for (i = 0; i < 32; i++)
		if (canary[i] != (unsigned long)&canary[i] * 0x9e3779b97f4a7c15UL)
			return "the reader's frame changed under its read";
	return NULL;
}

/* The state letter of thread @tid in /proc, or 0. */
static char thread_state(pid_t tid)
{
	char path[64], line[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	p = fgets(line, sizeof(line), f);
	fclose(f);
	p = p ? strrchr(line, ')') : NULL;
	return p && p[1] == ' ' ? p[2] : 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Start a reader on @stack and wait until it sleeps in read(). */
static const char *start_reader(struct reader *r, char *stack, size_t len)
{
	pthread_attr_t attr;
	int i;

	memset(r, 0, sizeof(*r));
	r->stack = stack;
	r->len = len;
	if (pipe(r->fds))
		return "pipe";
	pthread_attr_init(&attr);
	if (pthread_attr_setstack(&attr, stack, len) ||
	    pthread_create(&r->thread, &attr, reader_main, r))
		return "pthread_create";
	pthread_attr_destroy(&attr);
	/* Under TCG a thread may take a while; sleeping twice in a row. */
	for (i = 0; i < 2000; i++) {
		if (r->tid && thread_state(r->tid) == 'S') {
			sleep_ms(20);
			if (thread_state(r->tid) == 'S')
				return NULL;
		}
		sleep_ms(5);
	}
	return "the reader never slept in read()";
}

/* Wake the reader and collect what it found. */
static const char *finish_reader(struct reader *r)
{
	void *why = "write";

	if (write(r->fds[1], MSG, sizeof(MSG)) == sizeof(MSG) &&
	    pthread_join(r->thread, &why))
		why = "pthread_join";
	close(r->fds[0]);
	close(r->fds[1]);
	return why;
}

static char *new_stack(void)
{
	char *p = mmap(NULL, STACK_LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int failures;
static char why_buf[256];

/* Record a failed expectation: @call returned @ret with errno @err. */
static const char *unexpected(const char *call, long ret, int err)
{
	snprintf(why_buf, sizeof(why_buf), "%s returned %ld (errno %d)", call, ret, err);
	return why_buf;
}

#define REFUSED(call) ({						\
	long __r;							\
	errno = 0;							\
	__r = (long)(call);						\
	__r == -1 && errno == EBUSY ? NULL : unexpected(#call, __r, errno); \
})
#define ALLOWED(call, want) ({						\
	long __r;							\
	errno = 0;							\
	__r = (long)(call);						\
	__r == (long)(want) ? NULL : unexpected(#call, __r, errno);	\
})
#define TRY(expr) do {							\
	const char *__why = (expr);					\
	if (__why)							\
		return __why;						\
} while (0)

/* The page that holds the reader's read() frames, just below its call. */
static char *below_call(struct reader *r)
{
	return (char *)(page_of(r->sp) - PAGE);
}

static const char *op_munmap(struct reader *r)
{
	TRY(REFUSED(munmap(r->stack, r->len)));
	TRY(REFUSED(munmap(below_call(r), PAGE)));
	TRY(ALLOWED(munmap(r->stack, PAGE), 0));
	return NULL;
}

static const char *op_mprotect(struct reader *r)
{
	TRY(REFUSED(mprotect(r->stack, r->len, PROT_NONE)));
	TRY(REFUSED(mprotect(below_call(r), PAGE, PROT_READ)));
	TRY(REFUSED(mprotect(r->stack, r->len, PROT_READ | PROT_WRITE)));
	TRY(ALLOWED(mprotect(r->stack, PAGE, PROT_NONE), 0));
	return NULL;
}

static const char *op_madvise(struct reader *r)
{
	struct iovec iov = { r->stack, r->len };
	int pidfd;

	TRY(REFUSED(madvise(r->stack, r->len, MADV_DONTNEED)));
	TRY(REFUSED(madvise(below_call(r), PAGE, MADV_DONTNEED)));
	TRY(REFUSED(madvise(r->stack, r->len, MADV_FREE)));
	TRY(REFUSED(madvise(r->stack, r->len, MADV_PAGEOUT)));
	TRY(REFUSED(madvise(r->stack, r->len, MADV_COLD)));
	pidfd = syscall(SYS_pidfd_open, getpid(), 0);
	if (pidfd < 0)
		return unexpected("pidfd_open", pidfd, errno);
	TRY(REFUSED(syscall(SYS_process_madvise, pidfd, &iov, 1, MADV_PAGEOUT, 0)));
	close(pidfd);
	TRY(ALLOWED(madvise(r->stack, r->len, MADV_NORMAL), 0));
	TRY(ALLOWED(madvise(r->stack, 4 * PAGE, MADV_DONTNEED), 0));
	/* Lazily freed pages would be unmapped by reclaim: freed at once. */
	r->stack[0] = 1;
	TRY(ALLOWED(madvise(r->stack, PAGE, MADV_FREE), 0));
	if (*(volatile char *)r->stack)
		return "MADV_FREE kept the application's page";
	return NULL;
}

static const char *op_mremap(struct reader *r)
{
	char *to = mmap(NULL, r->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (to == MAP_FAILED)
		return "mmap of a destination";
	TRY(REFUSED(mremap(r->stack, r->len, r->len, MREMAP_MAYMOVE | MREMAP_FIXED, to)));
	TRY(REFUSED(mremap(r->stack, r->len, r->len,
			   MREMAP_MAYMOVE | MREMAP_DONTUNMAP)));
	TRY(REFUSED(mremap(r->stack, r->len, r->len / 2, 0)));
	/* Over the stack: unmapping the destination is refused too. */
	TRY(REFUSED(mremap(to, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
			   below_call(r))));
	TRY(ALLOWED(mremap(r->stack, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, to), to));
	munmap(to, r->len);
	return NULL;
}

static const char *op_mmap(struct reader *r)
{
	int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;

	TRY(REFUSED(mmap(r->stack, r->len, prot, flags, -1, 0)));
	TRY(REFUSED(mmap(below_call(r), PAGE, prot, flags, -1, 0)));
	TRY(ALLOWED(mmap(r->stack, PAGE, prot, flags, -1, 0), r->stack));
	return NULL;
}

/*
 * A stack in a shared mapping of a file: truncating it or punching a hole
 * in it takes pages from the mapping as munmap() would.
 */
static const char *op_file(void)
{
	int flags = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
	int fd = memfd_create("nss-stack", 0);
	const char *why = NULL, *woken;
	char *stack;
	struct reader r;
	off_t below;

	if (fd < 0 || ftruncate(fd, STACK_LEN))
		return "memfd_create/ftruncate";
	stack = mmap(NULL, STACK_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (stack == MAP_FAILED)
		return "mmap of the file";
	why = start_reader(&r, stack, STACK_LEN);
	if (why)
		return why;
	below = below_call(&r) - stack;
	why = REFUSED(ftruncate(fd, 0));
	if (!why)
		why = REFUSED(ftruncate(fd, below));
	if (!why)
		why = REFUSED(fallocate(fd, flags, below, PAGE));
	if (!why)
		why = ALLOWED(fallocate(fd, flags, 0, PAGE), 0);
	if (!why)
		why = ALLOWED(ftruncate(fd, 2 * STACK_LEN), 0);
	woken = finish_reader(&r);
	if (!why)
		why = woken;
	/* The call is over: the file may shrink now. */
	if (!why)
		why = ALLOWED(ftruncate(fd, 0), 0);
	munmap(stack, STACK_LEN);
	close(fd);
	return why;
}

/* Whether each page of [@addr, @addr + @len) is in the page cache. */
static const char *resident(char *addr, size_t len, int want)
{
	unsigned char vec[4];
	size_t i;

	if (len > sizeof(vec) * PAGE || mincore(addr, len, vec))
		return "mincore";
	for (i = 0; i < len / PAGE; i++)
		if ((vec[i] & 1) != want)
			return want ? "a direct-I/O write took a page under the call away"
				    : "a direct-I/O write left its page cached";
	return NULL;
}

/*
 * A direct-I/O write of @len bytes at @off of the file (its current
 * contents, so nothing changes), through @dfd opened with O_DIRECT.
 */
static const char *direct_write(int dfd, char *stack, off_t off, size_t len)
{
	void *buf;
	ssize_t n;

	if (posix_memalign(&buf, PAGE, len))
		return "posix_memalign";
	memcpy(buf, stack + off, len);
	n = pwrite(dfd, buf, len, off);
	free(buf);
	return n == (ssize_t)len ? NULL : unexpected("pwrite(O_DIRECT)", n, errno);
}

/*
 * A stack in a shared mapping of a file on a disk: a direct-I/O write
 * invalidates the written range's cached pages in every mapping of the
 * file, as munmap() would.
 */
static const char *op_direct(void)
{
	static const char path[] = "/data/nss-stack-guard";
	const char *why = NULL, *woken;
	int fd, dfd;
	char *stack;
	struct reader r;
	off_t below;

	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || ftruncate(fd, STACK_LEN))
		return "cannot create the file (no disk at /data?)";
	stack = mmap(NULL, STACK_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	dfd = open(path, O_RDWR | O_DIRECT);
	if (stack == MAP_FAILED || dfd < 0)
		return "mmap, or open with O_DIRECT";
	memset(stack, 0x5a, STACK_LEN);
	why = start_reader(&r, stack, STACK_LEN);
	if (why)
		return why;
	below = below_call(&r) - stack;
	/* Far below the call: the page leaves the page cache, so the I/O was direct. */
	why = direct_write(dfd, stack, 0, PAGE);
	if (!why)
		why = resident(stack, PAGE, 0);
	/* Over the call's frames: they stay, and so does what the read sleeps on. */
	if (!why)
		why = direct_write(dfd, stack, below, 2 * PAGE);
	if (!why)
		why = resident(stack + below, 2 * PAGE, 1);
	woken = finish_reader(&r);
	if (!why)
		why = woken;
	munmap(stack, STACK_LEN);
	close(dfd);
	close(fd);
	unlink(path);
	return why;
}

typedef const char *(*op_fn)(struct reader *r);

/* One OP on a reader on a fresh mmap()ed stack. */
static const char *with_reader(op_fn fn)
{
	char *stack = new_stack();
	struct reader r;
	const char *why, *woken;

	if (!stack)
		return "mmap of a stack";
	why = start_reader(&r, stack, STACK_LEN);
	if (why)
		return why;
	why = fn(&r);
	woken = finish_reader(&r);
	if (why)
		return why;
	if (woken)
		return woken;
	/* The call is over: the stack may go now. */
	return ALLOWED(munmap(stack, STACK_LEN), 0);
}

/*
 * A stack at the top of the heap, with 64 KiB of heap above it: brk()
 * may take that back, but not the stack under the read.
 */
static const char *op_brk(void)
{
	size_t extra = 64 * 1024;
	char *old = sbrk(0), *base, *top;
	const char *why, *woken;
	struct reader r;

	base = (char *)((unsigned long)(old + PAGE - 1) & ~(PAGE - 1));
	top = base + STACK_LEN + extra;
	if (sbrk(top - old) == (void *)-1)
		return "sbrk";
	why = start_reader(&r, base, STACK_LEN);
	if (why)
		return why;
	if (sbrk(0) != top)
		why = "something else moved the break";
	if (!why && (brk(base + STACK_LEN) || sbrk(0) != base + STACK_LEN))
		why = "brk() could not take back the heap above the stack";
	/* glibc's brk() succeeds when the break stays where it was. */
	if (!why && (brk(base) || sbrk(0) != base + STACK_LEN))
		why = "brk() took the stack under the read";
	woken = finish_reader(&r);
	if (why)
		return why;
	if (woken)
		return woken;
	if (brk(old) || sbrk(0) != old)
		return "brk() could not take the stack back once the read was over";
	return NULL;
}

/*
 * A thread unmaps, protects and discards the pages its own call runs on,
 * from the page its caller's frame is in to the one below.
 */
static const char *self_checks(void)
{
	volatile char here = 0;
	char *p = (char *)(page_of((unsigned long)&here) - PAGE);

	TRY(REFUSED(munmap(p, 2 * PAGE)));
	TRY(REFUSED(mprotect(p, 2 * PAGE, PROT_NONE)));
	TRY(REFUSED(madvise(p, 2 * PAGE, MADV_DONTNEED)));
	return here ? "the frame changed" : NULL;
}

static void *self_main(void *arg)
{
	(void)arg;
	return (void *)self_checks();
}

static const char *op_self(void)
{
	char *stack = new_stack();
	pthread_attr_t attr;
	pthread_t t;
	void *why = "pthread";

	if (!stack)
		return "mmap of a stack";
	pthread_attr_init(&attr);
	if (!pthread_attr_setstack(&attr, stack, STACK_LEN) &&
	    !pthread_create(&t, &attr, self_main, NULL) && pthread_join(t, &why))
		why = "pthread_join";
	pthread_attr_destroy(&attr);
	if (why)
		return why;
	return ALLOWED(munmap(stack, STACK_LEN), 0);
}

#define RACE_THREADS	2
#define RACE_ROUNDS	400

struct racer {
	int fds[2];
	char *stack;
	volatile unsigned long sp;	/* a local of the loop: frames above */
	pthread_t thread;
};

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	volatile unsigned long canary = (unsigned long)&canary;
	volatile int spin;
	unsigned char byte;
	int i;

	r->sp = (unsigned long)&byte;
	for (i = 0; i < RACE_ROUNDS; i++) {
		if (read(r->fds[0], &byte, 1) != 1 || byte != (unsigned char)i)
			return "a read returned the wrong byte";
		if (canary != (unsigned long)&canary)
			return "the racer's frame changed";
		for (spin = 0; spin < 2000 * (i % 8); spin++)
			;
	}
	return NULL;
}

static const char *op_race(void)
{
	struct racer rs[RACE_THREADS];
	long refused = 0, allowed = 0;
	const char *why = NULL;
	pthread_attr_t attr;
	int i, t;

	for (t = 0; t < RACE_THREADS; t++) {
		rs[t].stack = new_stack();
		rs[t].sp = 0;
		if (!rs[t].stack || pipe(rs[t].fds))
			return "mmap or pipe";
		pthread_attr_init(&attr);
		if (pthread_attr_setstack(&attr, rs[t].stack, STACK_LEN) ||
		    pthread_create(&rs[t].thread, &attr, racer_main, &rs[t]))
			return "pthread_create";
		pthread_attr_destroy(&attr);
	}
	for (i = 0; i < RACE_ROUNDS && !why; i++) {
		for (t = 0; t < RACE_THREADS && !why; t++) {
			unsigned char byte = (unsigned char)i;
			unsigned long sp;
			char *below;

			while (!(sp = rs[t].sp))
				sched_yield();
			/* What lies 512 bytes below the loop's frame is unused. */
			below = (char *)page_of(sp - 512);
			if (!madvise(rs[t].stack, below - rs[t].stack, MADV_DONTNEED))
				allowed++;
			else if (errno == EBUSY)
				refused++;
			else
				why = unexpected("madvise below a racer", -1, errno);
			if (!why && write(rs[t].fds[1], &byte, 1) != 1)
				why = "write";
		}
	}
	for (t = 0; t < RACE_THREADS; t++) {
		void *found = "pthread_join";

		if (why)
			pthread_cancel(rs[t].thread);
		pthread_join(rs[t].thread, &found);
		if (!why && found)
			why = found;
		munmap(rs[t].stack, STACK_LEN);
		close(rs[t].fds[0]);
		close(rs[t].fds[1]);
	}
	printf("nss_stack_guard: race: %ld discards refused, %ld allowed\n", refused, allowed);
	if (!why && !refused)
		why = "no discard was refused";
	return why;
}

static int kernel_log_has(const char *what)
{
	static char log[1 << 17];
	int n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, log, sizeof(log) - 1);

	if (n < 0)
		return 0;
	log[n] = 0;
	return strstr(log, what) != NULL;
}

static const char *run(const char *op)
{
	if (!strcmp(op, "munmap"))
		return with_reader(op_munmap);
	if (!strcmp(op, "mprotect"))
		return with_reader(op_mprotect);
	if (!strcmp(op, "madvise"))
		return with_reader(op_madvise);
	if (!strcmp(op, "mremap"))
		return with_reader(op_mremap);
	if (!strcmp(op, "mmap"))
		return with_reader(op_mmap);
	if (!strcmp(op, "brk"))
		return op_brk();
	if (!strcmp(op, "file"))
		return op_file();
	if (!strcmp(op, "direct"))
		return op_direct();
	if (!strcmp(op, "self"))
		return op_self();
	if (!strcmp(op, "race"))
		return op_race();
	return "no such OP";
}

int main(int argc, char **argv)
{
	static const char *all[] = { "munmap", "mprotect", "madvise", "mremap", "mmap",
				     "brk", "file", "self", "race" };
	const char **ops = argc > 1 ? (const char **)argv + 1 : all;
	int n = argc > 1 ? argc - 1 : (int)(sizeof(all) / sizeof(all[0]));
	struct reader last;
	int i, requests = 0;
	char *stack;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* The heap exists before the brk OP moves the break (fopen() in it). */
	free(malloc(1));
	for (i = 0; i < n; i++) {
		const char *why = run(ops[i]);

		requests += strcmp(ops[i], "direct") != 0;
		if (why) {
			printf("nss_stack_guard: FAIL %s: %s\n", ops[i], why);
			failures++;
		} else {
			printf("nss_stack_guard: ok %s\n", ops[i]);
		}
	}
	/*
	 * The refusals of requests are logged; those of the kernel's own
	 * changes (direct's page cache invalidation) are not.
	 */
	if (requests && !kernel_log_has("UKL_NSS: change of")) {
		printf("nss_stack_guard: FAIL no kernel warning for a refused change\n");
		failures++;
	}
	/* exit() while a read sleeps on a thread's stack. */
	stack = new_stack();
	if (!stack || start_reader(&last, stack, STACK_LEN)) {
		printf("nss_stack_guard: FAIL no reader left blocked at exit\n");
		failures++;
	}
	printf("nss_stack_guard: %d failure(s)\n", failures);
	return failures ? 1 : 0;
}
