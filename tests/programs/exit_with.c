/*
 * Boot-test program: prints its privilege level, the CPUs online and its
 * arguments, then exits with the status given as its first argument
 * (default 0).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned short cs;

	__asm__ volatile("mov %%cs, %0" : "=r"(cs));
	printf("exit_with: cpl=%u cpus=%ld argc=%d\n", cs & 3,
	       sysconf(_SC_NPROCESSORS_ONLN), argc);
	for (int i = 1; i < argc; i++)
		printf("exit_with: argv[%d]=<%s>\n", i, argv[i]);
	fflush(stdout);
	return argc > 1 ? atoi(argv[1]) : 0;
}
