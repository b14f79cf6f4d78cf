// SPDX-License-Identifier: GPL-2.0
/*
 * Native anchors for `ukl bench`: what a few operations cost on the build
 * host itself (its own kernel, its own CPU), in nanoseconds and TSC ticks,
 * so that a reader of the guest's instruction counts can see what removing
 * one round trip to the kernel is worth on real hardware.
 *
 *   call      a call of a function that only returns
 *   syscall   a null system call: syscall(-1), which fails with ENOSYS
 *   getppid   getppid()
 *   verw      VERW of the data segment selector (the MDS buffer clear)
 *
 * Each is run in batches of BATCH; the figure is the fastest batch of
 * ROUNDS, per operation. Output, one line each:
 *   anchor,NAME,NANOSECONDS,TICKS
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <sys/syscall.h>

#define BATCH 1000
#define ROUNDS 2000

static inline uint64_t tsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return (uint64_t)hi << 32 | lo;
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

__attribute__((noinline)) static void empty_function(void)
{
	__asm__ volatile("" : : : "memory");
}

static inline long raw_syscall0(long nr)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr) : "rcx", "r11", "memory");
	return ret;
}

static unsigned short data_selector;

static inline void verw(void)
{
	__asm__ volatile("verw %0" : : "m"(data_selector) : "cc");
}

#define ANCHOR(name, op)						\
	do {								\
		uint64_t best_ns = UINT64_MAX, best_ticks = UINT64_MAX;	\
		for (int r_ = 0; r_ < ROUNDS; r_++) {			\
			uint64_t n0_ = now_ns(), t0_ = tsc();		\
			for (int i_ = 0; i_ < BATCH; i_++)		\
				op;					\
			uint64_t t1_ = tsc(), n1_ = now_ns();		\
			if (n1_ - n0_ < best_ns)			\
				best_ns = n1_ - n0_;			\
			if (t1_ - t0_ < best_ticks)			\
				best_ticks = t1_ - t0_;			\
		}							\
		printf("anchor,%s,%.2f,%.1f\n", name,			\
		       (double)best_ns / BATCH, (double)best_ticks / BATCH); \
	} while (0)

int main(void)
{
	__asm__ volatile("mov %%ds, %0" : "=r"(data_selector));
	ANCHOR("call", empty_function());
	ANCHOR("syscall", raw_syscall0(-1));
	ANCHOR("getppid", raw_syscall0(SYS_getppid));
	ANCHOR("verw", verw());
	return 0;
}
