/*
 * A plain static getppid loop, built with the host's gcc and glibc, not
 * with anything of ours: an independent yardstick for `ukl bench`'s stock
 * getppid figure under the same QEMU mode (-icount shift=0,sleep=off, where
 * an rdtsc delta is a count of guest instructions).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <x86intrin.h>

#define WARMUP 1000
#define ITERATIONS 10000

static int by_value(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a;
	unsigned long long y = *(const unsigned long long *)b;

	return (x > y) - (x < y);
}

int main(void)
{
	static unsigned long long delta[ITERATIONS];

	for (int i = 0; i < WARMUP; i++)
		getppid();
	for (int i = 0; i < ITERATIONS; i++) {
		unsigned long long start = __rdtsc();

		getppid();
		delta[i] = __rdtsc() - start;
	}
	qsort(delta, ITERATIONS, sizeof(delta[0]), by_value);
	printf("plain-getppid min=%llu median=%llu\n", delta[0], delta[ITERATIONS / 2]);
	return 0;
}
