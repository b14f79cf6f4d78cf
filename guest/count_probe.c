// SPDX-License-Identifier: GPL-2.0
/*
 * Instructions whose counts are known, in counting windows, for the test of
 * the ukl_counts plugin (tests/bench/test_counts.py). Every window runs its
 * body PROBE_N times; the test checks each count exactly.
 *
 *   0  a loop of 2 * PROBE_N + 1 instructions (mov; dec, jnz ...)
 *   1  PROBE_N system calls syscall(-1) (ENOSYS), one a pass (rows 1.0, 1.0.med)
 *   2  PROBE_N CPUID
 *   3  PROBE_N LFENCE and PROBE_N MFENCE
 *   4  PROBE_N VERW
 *   5  PROBE_N indirect calls of a function that only returns
 *   6  flushed twice: 3 passes of one CPUID (row 6.0), then 5 (row 6.1)
 *   7  PROBE_FORKS passes of fork and wait (rows 7.0, 7.0.med)
 *
 * --bypass turns UKL_BYP system call bypass on first (UKL toolchain only).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#if __has_include(<ukl.h>)
#include <ukl.h>
#endif

#include "ukl_marks.h"

#define PROBE_N 1000
#define PROBE_FORKS 20

void probe_ret(void);
__asm__(".text\n.globl probe_ret\n.type probe_ret, @function\nprobe_ret:\n\tret\n"
	".size probe_ret, .-probe_ret\n");

int main(int argc, char **argv)
{
	void (*volatile target)(void) = probe_ret;
	unsigned short selector;
	int i;

	if (argc > 1 && !strcmp(argv[1], "--bypass")) {
#if __has_include(<ukl.h>)
		if (ukl_bypass(1) < 0) {
			perror("count_probe: ukl_bypass");
			return 1;
		}
#else
		fprintf(stderr, "count_probe: --bypass needs the UKL toolchain\n");
		return 2;
#endif
	}

	UKL_COUNT_BEGIN(0);
	__asm__ volatile("mov %0, %%ecx\n1:\tdec %%ecx\n\tjnz 1b" : : "i"(PROBE_N) : "ecx");
	UKL_COUNT_END(0);

	for (i = 0; i < PROBE_N; i++) {
		UKL_COUNT_BEGIN(1);
		syscall(-1);
		UKL_COUNT_END(1);
	}
	UKL_COUNT_FLUSH(1);

	UKL_COUNT_BEGIN(2);
	for (i = 0; i < PROBE_N; i++) {
		unsigned int a = 0, b, c = 0, d;

		__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	}
	UKL_COUNT_END(2);

	UKL_COUNT_BEGIN(3);
	for (i = 0; i < PROBE_N; i++)
		__asm__ volatile("lfence\n\tmfence" : : : "memory");
	UKL_COUNT_END(3);

	/* VERW of the data segment: what the kernel's MDS clearing runs. */
	__asm__ volatile("mov %%ds, %0" : "=r"(selector));
	UKL_COUNT_BEGIN(4);
	for (i = 0; i < PROBE_N; i++)
		__asm__ volatile("verw %0" : : "m"(selector) : "cc");
	UKL_COUNT_END(4);

	UKL_COUNT_BEGIN(5);
	for (i = 0; i < PROBE_N; i++)
		target();
	UKL_COUNT_END(5);

	for (int flush = 0; flush < 2; flush++) {
		for (i = 0; i < (flush ? 5 : 3); i++) {
			unsigned int a = 0, b, c = 0, d;

			UKL_COUNT_BEGIN(6);
			__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
			UKL_COUNT_END(6);
		}
		UKL_COUNT_FLUSH(6);
	}

	/* A fork child's first return to user mode runs no user block. */
	for (i = 0; i < PROBE_FORKS; i++) {
		pid_t pid;

		UKL_COUNT_BEGIN(7);
		pid = fork();
		if (pid == 0)
			_exit(0);
		waitpid(pid, NULL, 0);
		UKL_COUNT_END(7);
	}
	UKL_COUNT_FLUSH(7);

	printf("count_probe: done\n");
	return 0;
}
