/* The smallest UKL example: greet, show the arguments, exit 0. */
#include <stdio.h>

int main(int argc, char **argv)
{
	printf("Hello from UKL!\n");
	for (int i = 1; i < argc; i++)
		printf("  argv[%d] = %s\n", i, argv[i]);
	return 0;
}
