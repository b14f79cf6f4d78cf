// SPDX-License-Identifier: GPL-2.0
/*
 * Context switches for the test of `ukl profile`'s call stacks
 * (tests/bench/test_profile.py): two threads ping-pong one byte over two
 * pipes for PINGPONG_ROUNDS rounds, inside counting window 0. Each read()
 * blocks in the kernel's pipe_read until the other thread's write(), so
 * the CPU switches between the two threads' kernel stacks every round:
 * every stack through pipe_read or pipe_write must be its own thread's,
 * from ping_thread or pong_thread down. Then main writes CONSOLE_LINES
 * lines to the console, still in the window.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../guest/ukl_marks.h"

#define PINGPONG_ROUNDS 200
#define CONSOLE_LINES 20

static int to_pong[2], to_ping[2];

static void fail(const char *what)
{
	perror(what);
	exit(1);
}

__attribute__((noinline)) void *ping_thread(void *arg)
{
	char c = 'p';
	int i;

	for (i = 0; i < PINGPONG_ROUNDS; i++) {
		if (write(to_pong[1], &c, 1) != 1)
			fail("ping: write");
		if (read(to_ping[0], &c, 1) != 1)
			fail("ping: read");
	}
	return NULL;
}

__attribute__((noinline)) void *pong_thread(void *arg)
{
	char c;
	int i;

	for (i = 0; i < PINGPONG_ROUNDS; i++) {
		if (read(to_pong[0], &c, 1) != 1)
			fail("pong: read");
		if (write(to_ping[1], &c, 1) != 1)
			fail("pong: write");
	}
	return NULL;
}

int main(void)
{
	pthread_t ping, pong;
	int i;

	if (pipe(to_pong) || pipe(to_ping))
		fail("pipe");
	UKL_COUNT_BEGIN(0);
	if (pthread_create(&pong, NULL, pong_thread, NULL) ||
	    pthread_create(&ping, NULL, ping_thread, NULL))
		fail("pthread_create");
	if (pthread_join(ping, NULL) || pthread_join(pong, NULL))
		fail("pthread_join");
	/*
	 * Console output in the window: the serial port's interrupts arrive
	 * in the kernel's tty write, through an IRQ stub (irq_entries_start)
	 * and the common entry, and must leave no frame behind.
	 */
	for (i = 0; i < CONSOLE_LINES; i++)
		printf("profile_pingpong: %d rounds (%d)\n", PINGPONG_ROUNDS, i);
	fflush(stdout);
	UKL_COUNT_END(0);
	return 0;
}
