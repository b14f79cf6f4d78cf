// SPDX-License-Identifier: GPL-2.0
/*
 * Known work for the test of `ukl profile` (tests/bench/test_profile.py):
 *
 *   f            written in assembly, so no compiler changes it: mov, then
 *                PROFILE_K iterations of dec; jnz, then ret: exactly
 *                2 * PROFILE_K + 2 instructions of its own per call (window 1)
 *   getppid_loop PROFILE_CALLS getppid() calls (window 0): on UKL a function
 *                call into the kernel's __x64_sys_getppid
 *
 * With the argument "series" (for `ukl profile --every --track`), instead:
 * SERIES_CALLS calls of f(SERIES_K) in window 1, then getppid_loop as above:
 * f is entered exactly SERIES_CALLS times and executes SERIES_CALLS *
 * (2 * SERIES_K + 2) instructions, across several intervals.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../guest/ukl_marks.h"

#define PROFILE_K 100000
#define PROFILE_CALLS 1000
#define SERIES_K 1000
#define SERIES_CALLS 3000

void f(long k);

__asm__(".text\n"
	".globl f\n"
	".type f, @function\n"
	"f:\n"
	"\tmov %rdi, %rcx\n"
	"1:\tdec %rcx\n"
	"\tjnz 1b\n"
	"\tret\n"
	".size f, .-f\n");

__attribute__((noinline)) void getppid_loop(int n)
{
	int i;

	UKL_COUNT_BEGIN(0);
	for (i = 0; i < n; i++)
		getppid();
	UKL_COUNT_END(0);
}

int main(int argc, char **argv)
{
	int i;

	if (argc > 1 && !strcmp(argv[1], "series")) {
		UKL_COUNT_BEGIN(1);
		for (i = 0; i < SERIES_CALLS; i++)
			f(SERIES_K);
		UKL_COUNT_END(1);
		getppid_loop(PROFILE_CALLS);
		printf("profile_loop: series done\n");
		return 0;
	}
	UKL_COUNT_BEGIN(1);
	f(PROFILE_K);
	UKL_COUNT_END(1);
	getppid_loop(PROFILE_CALLS);
	printf("profile_loop: done\n");
	return 0;
}
