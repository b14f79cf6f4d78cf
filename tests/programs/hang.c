/* Boot-test program: never exits, so the runner's timeout must fire. */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	printf("hang: sleeping forever\n");
	fflush(stdout);
	for (;;)
		pause();
}
