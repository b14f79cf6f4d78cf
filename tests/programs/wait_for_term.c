/*
 * Boot-test program for background instances (`ukl run -d`, `ukl stop`):
 * prints a line, then waits for SIGTERM and exits with status 7 once it
 * comes, so the test sees that the signal reached the program (not just
 * that QEMU ended). With an argument "ignore" it ignores SIGTERM instead.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t got_term;

static void on_term(int sig)
{
	(void)sig;
	got_term = 1;
}

int main(int argc, char **argv)
{
	unsigned short cs;

	__asm__ volatile("mov %%cs, %0" : "=r"(cs));
	if (argc > 1 && strcmp(argv[1], "ignore") == 0)
		signal(SIGTERM, SIG_IGN);
	else
		signal(SIGTERM, on_term);
	printf("wait_for_term: cpl=%u waiting\n", cs & 3);
	fflush(stdout);
	while (!got_term)
		pause();
	printf("wait_for_term: got SIGTERM\n");
	fflush(stdout);
	return 7;
}
