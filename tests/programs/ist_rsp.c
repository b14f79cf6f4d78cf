/*
 * An ordinary, unprivileged process that points its stack pointer at an
 * address it is given (a UKL IST stack of the CPU it runs on) and spins
 * there, so that the NMIs that CPU takes interrupt it with that stack
 * pointer. Built by the host's gcc (-static): it must not be the UKL
 * application, which runs at CPL0.
 *
 *   ist_rsp CPU ADDRESS     (ADDRESS in hex)
 *
 * Drops to uid/gid 65534, pins itself to CPU, writes "ist_rsp: spinning"
 * and never returns; its parent kills it.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned long sp;
	cpu_set_t set;

	if (argc != 3)
		return 2;
	sp = strtoul(argv[2], NULL, 16);
	CPU_ZERO(&set);
	CPU_SET(atoi(argv[1]), &set);
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534) ||
	    sched_setaffinity(0, sizeof(set), &set)) {
		perror("ist_rsp");
		return 1;
	}
	printf("ist_rsp: spinning on cpu %s with sp %lx\n", argv[1], sp);
	fflush(stdout);
	asm volatile("mov %0, %%rsp\n1: jmp 1b" : : "r" (sp));
	return 0;
}
