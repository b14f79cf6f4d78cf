/*
 * The smallest UKL example: greet, say which privilege ring it runs in
 * (0 when linked into a UKL kernel, 3 as an ordinary process), show the
 * arguments, exit 0.
 */
#include <stdio.h>

static unsigned int ring(void)
{
	unsigned short cs;

	__asm__ volatile("mov %%cs, %0" : "=r"(cs));
	return cs & 3;
}

int main(int argc, char **argv)
{
	printf("Hello from UKL! (running in ring %u)\n", ring());
	for (int i = 1; i < argc; i++)
		printf("  argv[%d] = %s\n", i, argv[i]);
	return 0;
}
