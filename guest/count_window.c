// SPDX-License-Identifier: GPL-2.0
/*
 * count_window PORT: opens and closes counting windows of the ukl_counts
 * QEMU plugin when a client outside the guest says so, for measurements
 * whose load comes from the host (`ukl bench-apps --client host`).
 *
 * It accepts connections on TCP PORT; each line is "begin N" or "end N"
 * (N: 0-3), answered with "ok N" once the marker ran. The markers count
 * the whole machine between them, whatever runs: the server, the network
 * stack, interrupts; and this program's own few system calls for the
 * exchange, a handful per window.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ukl_marks.h"

/* The markers' window numbers are immediates: one case per window. */
static int mark(int begin, int n)
{
	switch (n) {
	case 0: if (begin) UKL_COUNT_BEGIN(0); else UKL_COUNT_END(0); return 0;
	case 1: if (begin) UKL_COUNT_BEGIN(1); else UKL_COUNT_END(1); return 0;
	case 2: if (begin) UKL_COUNT_BEGIN(2); else UKL_COUNT_END(2); return 0;
	case 3: if (begin) UKL_COUNT_BEGIN(3); else UKL_COUNT_END(3); return 0;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	int one = 1, lfd;

	if (argc != 2) {
		fprintf(stderr, "usage: count_window PORT\n");
		return 2;
	}
	addr.sin_port = htons(atoi(argv[1]));
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) || listen(lfd, 4)) {
		perror("count_window: listen");
		return 1;
	}
	for (;;) {
		char line[64];
		FILE *in, *out;
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0)
			continue;
		in = fdopen(fd, "r");
		out = fdopen(dup(fd), "w");
		while (in && out && fgets(line, sizeof(line), in)) {
			int n = -1, begin = !strncmp(line, "begin ", 6);

			if (begin || !strncmp(line, "end ", 4))
				n = atoi(line + (begin ? 6 : 4));
			if (n < 0 || mark(begin, n)) {
				fprintf(out, "error %s", line);
			} else {
				fprintf(out, "ok %d\n", n);
			}
			fflush(out);
		}
		if (in)
			fclose(in);
		if (out)
			fclose(out);
	}
}
