// SPDX-License-Identifier: GPL-2.0
/*
 * netbench: the server and the load generator of `ukl bench-net`.
 *
 *   netbench server CTL_PORT TCP_PORT UDP_PORT
 *   netbench client HOST CTL_PORT TCP_PORT UDP_PORT MARKS BUDGET PROTOS SIZES INFLIGHT
 *
 * The server is the measured program (linked into the kernel on a UKL
 * flavour). One thread, one poll loop, so that it runs the same on every
 * kernel and under icount makes no scheduling choices of its own:
 *   TCP_PORT  a sink: reads each connection to its end, then answers with
 *             the number of bytes it read (8 bytes) and closes it;
 *   UDP_PORT  an echo: sends every datagram back to its sender;
 *   CTL_PORT  control lines: "ping" (is it up), "begin" and "end" (open and
 *             close counting window 0 of the ukl_counts plugin; "end" also
 *             flushes it, so each measurement is a row of its own), "quit"
 *             (exit 0, which ends the guest). Each is answered "ok".
 *
 * The client runs the sweep: for each protocol, in-flight level and
 * message size, one measurement of about BUDGET bytes. TCP: INFLIGHT
 * connections stream messages of SIZE bytes to the sink at once. UDP:
 * INFLIGHT sockets each keep one datagram of SIZE bytes (at most 65507,
 * UDP's limit) in flight and send the next when its echo is back. MARKS is
 * "local" when the client runs in the guest (it marks the window itself,
 * so the window holds both ends) or "remote" when it runs on the host (it
 * asks the server to mark, so the window holds only what the guest ran).
 * One line per measurement on stdout:
 *   netbench,PROTO,INFLIGHT,SIZE,MESSAGES,BYTES,RETRANSMITS
 * BYTES: the payload that crossed from client to server (an echo's reply
 * is not counted again). A datagram whose echo does not come back within
 * RESEND_MS is sent again (RETRANSMITS): loopback does not lose them, QEMU's
 * user network may.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ukl_marks.h"

#define MAX_CONNS 64
#define MAX_INFLIGHT 32
#define MAX_MSG 65536
#define UDP_MAX 65507
#define SOCKBUF (8 << 20)
#define RESEND_MS 500
#define MIN_MESSAGES 2

static char buf[MAX_MSG];

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* Large socket buffers: 32 in-flight 64 KiB datagrams must fit the
 * server's one UDP socket, or loopback drops them (root may exceed
 * rmem_max with the FORCE options; without root the plain ones cap). */
static void big_buffers(int fd)
{
	int size = SOCKBUF;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

static int listening(int type, int port)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, fd = socket(AF_INET, type, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&addr, sizeof(addr)))
		die("netbench: bind");
	if (type == SOCK_STREAM && listen(fd, MAX_CONNS))
		die("netbench: listen");
	if (type == SOCK_DGRAM)
		big_buffers(fd);
	return fd;
}

static void write_all(int fd, const void *p, size_t len)
{
	const char *c = p;

	while (len) {
		ssize_t n = write(fd, c, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("netbench: write");
		c += n;
		len -= n;
	}
}

/* ---- server ---- */

enum kind { CTL, SINK };

struct conn {
	int fd;
	enum kind kind;
	uint64_t bytes;
	char line[64];
	size_t len;
};

static struct conn conns[MAX_CONNS];
static int nconns;

static void drop(int i)
{
	close(conns[i].fd);
	conns[i] = conns[--nconns];
}

/* A control line; returns 1 on "quit". */
static int control(struct conn *c, const char *line)
{
	if (!strcmp(line, "begin")) {
		UKL_COUNT_BEGIN(0);
	} else if (!strcmp(line, "end")) {
		UKL_COUNT_END(0);
		UKL_COUNT_FLUSH(0);
	} else if (strcmp(line, "ping") && strcmp(line, "quit")) {
		write_all(c->fd, "error\n", 6);
		return 0;
	}
	write_all(c->fd, "ok\n", 3);
	return !strcmp(line, "quit");
}

/* Read what a connection sent; returns 1 on "quit", -1 when it is gone. */
static int serve(struct conn *c)
{
	ssize_t n;

	if (c->kind == SINK) {
		n = read(c->fd, buf, sizeof(buf));
		if (n > 0) {
			c->bytes += n;
			return 0;
		}
		if (n == 0)
			write_all(c->fd, &c->bytes, sizeof(c->bytes));
		return -1;
	}
	n = read(c->fd, c->line + c->len, sizeof(c->line) - 1 - c->len);
	if (n <= 0)
		return -1;
	c->len += n;
	for (;;) {
		char *nl = memchr(c->line, '\n', c->len);
		size_t used;

		if (!nl) {
			if (c->len == sizeof(c->line) - 1)
				return -1;
			return 0;
		}
		*nl = 0;
		if (control(c, c->line))
			return 1;
		used = nl + 1 - c->line;
		memmove(c->line, nl + 1, c->len - used);
		c->len -= used;
	}
}

static int server(int ctl_port, int tcp_port, int udp_port)
{
	int ctl = listening(SOCK_STREAM, ctl_port);
	int sink = listening(SOCK_STREAM, tcp_port);
	int udp = listening(SOCK_DGRAM, udp_port);
	struct pollfd pfd[MAX_CONNS + 3];

	printf("netbench: server on ports %d (control), %d (TCP sink), %d (UDP echo)\n",
	       ctl_port, tcp_port, udp_port);
	fflush(stdout);
	for (;;) {
		int n = 0, i;

		pfd[n++] = (struct pollfd){ .fd = ctl, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = sink, .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = udp, .events = POLLIN };
		for (i = 0; i < nconns; i++)
			pfd[n++] = (struct pollfd){ .fd = conns[i].fd, .events = POLLIN };
		if (poll(pfd, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("netbench: poll");
		}
		for (i = 0; i < 2; i++) {
			int fd;

			if (!(pfd[i].revents & POLLIN))
				continue;
			fd = accept(pfd[i].fd, NULL, NULL);
			if (fd < 0)
				continue;
			if (nconns == MAX_CONNS) {
				close(fd);
				continue;
			}
			conns[nconns++] = (struct conn){ .fd = fd, .kind = i ? SINK : CTL };
		}
		if (pfd[2].revents & POLLIN) {
			struct sockaddr_in from;
			socklen_t len = sizeof(from);
			ssize_t got = recvfrom(udp, buf, sizeof(buf), 0,
					       (struct sockaddr *)&from, &len);

			if (got >= 0)
				sendto(udp, buf, got, 0, (struct sockaddr *)&from, len);
		}
		/* Back to front: drop() moves the last connection into slot i. */
		for (i = n - 1; i >= 3; i--) {
			int r;

			if (!pfd[i].revents)
				continue;
			r = serve(&conns[i - 3]);
			if (r > 0)
				return 0;
			if (r < 0)
				drop(i - 3);
		}
	}
}

/* ---- client ---- */

static struct sockaddr_in target;
static FILE *ctl_in, *ctl_out;
static int remote_marks;

static int connect_to(int type, int port)
{
	struct sockaddr_in addr = target;
	int fd = socket(AF_INET, type, 0);

	addr.sin_port = htons(port);
	if (fd < 0)
		die("netbench: socket");
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		close(fd);
		return -1;
	}
	return fd;
}

static void say(const char *what)
{
	char reply[64];

	fprintf(ctl_out, "%s\n", what);
	fflush(ctl_out);
	if (!fgets(reply, sizeof(reply), ctl_in) || strcmp(reply, "ok\n")) {
		fprintf(stderr, "netbench: the server answered %s to %s\n", reply, what);
		exit(1);
	}
}

/* The server is up once it answers a ping (through QEMU's port forward a
 * connection succeeds before anything listens in the guest). */
static void connect_control(int port)
{
	for (int tries = 0; tries < 600; tries++) {
		int fd = connect_to(SOCK_STREAM, port);

		if (fd >= 0) {
			ctl_in = fdopen(fd, "r");
			ctl_out = fdopen(dup(fd), "w");
			if (!ctl_in || !ctl_out)
				die("netbench: fdopen");
			fprintf(ctl_out, "ping\n");
			fflush(ctl_out);
			if (fgets(buf, 64, ctl_in) && !strcmp(buf, "ok\n"))
				return;
			fclose(ctl_in);
			fclose(ctl_out);
		}
		usleep(100000);
	}
	fprintf(stderr, "netbench: no server on port %d\n", port);
	exit(1);
}

static void begin(void)
{
	if (remote_marks)
		say("begin");
	else
		UKL_COUNT_BEGIN(0);
}

static void end(void)
{
	if (remote_marks) {
		say("end");
	} else {
		UKL_COUNT_END(0);
		UKL_COUNT_FLUSH(0);
	}
}

static void nonblocking(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* INFLIGHT connections, each streaming MESSAGES messages of SIZE bytes. */
__attribute__((noinline)) static void tcp_sink(int port, int inflight, long size, long messages)
{
	int fds[MAX_INFLIGHT], one = 1, active = inflight;
	long left[MAX_INFLIGHT], off[MAX_INFLIGHT];
	int got[MAX_INFLIGHT];
	uint64_t counted[MAX_INFLIGHT];
	struct pollfd pfd[MAX_INFLIGHT];
	if (inflight < 1 || inflight > MAX_INFLIGHT)
		exit(2);

	for (int i = 0; i < inflight; i++) {
		fds[i] = connect_to(SOCK_STREAM, port);
		if (fds[i] < 0)
			die("netbench: connect to the TCP sink");
		setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		nonblocking(fds[i]);
		left[i] = messages;
		off[i] = 0;
		got[i] = 0;
		counted[i] = 0;
	}
	begin();
	while (active) {
		for (int i = 0; i < inflight; i++)
			pfd[i] = (struct pollfd){ .fd = fds[i],
				.events = left[i] ? POLLOUT : got[i] < 8 ? POLLIN : 0 };
		if (poll(pfd, (unsigned int)inflight, -1) < 0 && errno != EINTR)
			die("netbench: poll");
		for (int i = 0; i < inflight; i++) {
			ssize_t n;

			/* A finished connection still reports the server's close. */
			if (!pfd[i].revents || got[i] == 8)
				continue;
			if (left[i]) {
				n = write(fds[i], buf + off[i], size - off[i]);
				if (n < 0 && errno != EAGAIN && errno != EINTR)
					die("netbench: send");
				if (n > 0 && (off[i] += n) == size) {
					off[i] = 0;
					if (!--left[i])
						shutdown(fds[i], SHUT_WR);
				}
				continue;
			}
			n = read(fds[i], (char *)&counted[i] + got[i], 8 - got[i]);
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				die("netbench: the sink's count");
			if (n > 0 && (got[i] += n) == 8)
				active--;
		}
	}
	end();
	for (int i = 0; i < inflight; i++) {
		if (counted[i] != (uint64_t)(size * messages)) {
			fprintf(stderr, "netbench: the sink read %llu bytes of %ld\n",
				(unsigned long long)counted[i], size * messages);
			exit(1);
		}
		close(fds[i]);
	}
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void send_datagram(int fd, long seq, long size)
{
	memcpy(buf, &seq, sizeof(seq));
	if (send(fd, buf, size, 0) != size && errno != EAGAIN && errno != ENOBUFS)
		die("netbench: sendto");
}

/* INFLIGHT sockets, each with one datagram out until MESSAGES came back.
 * Each datagram carries its sequence number: the echo of a datagram sent
 * twice is taken once. Returns the datagrams sent again. */
__attribute__((noinline)) static long udp_echo(int port, int inflight, long size, long messages)
{
	int fds[MAX_INFLIGHT], active = inflight;
	long done[MAX_INFLIGHT], seq = 0, sent[MAX_INFLIGHT], resent = 0, last = 0;
	struct pollfd pfd[MAX_INFLIGHT];
	static char reply[MAX_MSG];
	if (inflight < 1 || inflight > MAX_INFLIGHT)
		exit(2);

	for (int i = 0; i < inflight; i++) {
		fds[i] = connect_to(SOCK_DGRAM, port);
		if (fds[i] < 0)
			die("netbench: connect to the UDP echo");
		big_buffers(fds[i]);
		nonblocking(fds[i]);
		done[i] = 0;
	}
	begin();
	for (int i = 0; i < inflight; i++) {
		sent[i] = seq++;
		send_datagram(fds[i], sent[i], size);
	}
	last = now_ms();
	while (active) {
		int ready;

		for (int i = 0; i < inflight; i++)
			pfd[i] = (struct pollfd){ .fd = fds[i],
				.events = done[i] < messages ? POLLIN : 0 };
		ready = poll(pfd, (unsigned int)inflight, RESEND_MS);
		if (ready < 0 && errno != EINTR)
			die("netbench: poll");
		if (ready <= 0 && now_ms() - last >= RESEND_MS) {
			for (int i = 0; i < inflight; i++) {
				if (done[i] < messages) {
					send_datagram(fds[i], sent[i], size);
					resent++;
				}
			}
			last = now_ms();
			continue;
		}
		for (int i = 0; i < inflight; i++) {
			long echoed;
			ssize_t n;

			if (!(pfd[i].revents & POLLIN))
				continue;
			n = recv(fds[i], reply, sizeof(reply), 0);
			if (n < 0 && errno != EAGAIN && errno != EINTR && errno != ECONNREFUSED)
				die("netbench: recv");
			if (n != size)
				continue;
			memcpy(&echoed, reply, sizeof(echoed));
			if (echoed != sent[i])
				continue;
			last = now_ms();
			if (++done[i] == messages) {
				active--;
				continue;
			}
			sent[i] = seq++;
			send_datagram(fds[i], sent[i], size);
		}
	}
	end();
	for (int i = 0; i < inflight; i++)
		close(fds[i]);
	return resent;
}

static int parse_list(char *text, long *out, int max)
{
	char *save;
	int n = 0;

	for (char *tok = strtok_r(text, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (n < max)
			out[n++] = atol(tok);
	return n;
}

static int client(char **argv)
{
	int ctl_port = atoi(argv[1]), tcp_port = atoi(argv[2]), udp_port = atoi(argv[3]);
	long budget = atol(argv[5]), sizes[16], inflights[16];
	int nsizes = parse_list(argv[7], sizes, 16), ninflight = parse_list(argv[8], inflights, 16);
	char *protos = argv[6], *save;

	if (inet_pton(AF_INET, argv[0], &target.sin_addr) != 1)
		die("netbench: address");
	target.sin_family = AF_INET;
	remote_marks = !strcmp(argv[4], "remote");
	memset(buf, 'x', sizeof(buf));
	connect_control(ctl_port);
	for (char *proto = strtok_r(protos, ",", &save); proto;
	     proto = strtok_r(NULL, ",", &save)) {
		int udp = !strcmp(proto, "udp");

		if (!udp && strcmp(proto, "tcp")) {
			fprintf(stderr, "netbench: unknown protocol %s\n", proto);
			return 2;
		}
		for (int f = 0; f < ninflight; f++) {
			for (int s = 0; s < nsizes; s++) {
				long size = udp && sizes[s] > UDP_MAX ? UDP_MAX : sizes[s];
				int inflight = inflights[f];
				long messages = budget / (size * inflight), resent = 0;

				if (size < 16 || size > MAX_MSG || inflight < 1 ||
				    inflight > MAX_INFLIGHT) {
					fprintf(stderr, "netbench: bad size or in-flight level\n");
					return 2;
				}
				if (messages < MIN_MESSAGES)
					messages = MIN_MESSAGES;
				if (udp)
					resent = udp_echo(udp_port, inflight, size, messages);
				else
					tcp_sink(tcp_port, inflight, size, messages);
				printf("netbench,%s,%d,%ld,%ld,%ld,%ld\n", proto, inflight, size,
				       messages * inflight, size * messages * inflight, resent);
				fflush(stdout);
			}
		}
	}
	say("quit");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	if (argc == 11 && !strcmp(argv[1], "client"))
		return client(argv + 2);
	fprintf(stderr, "usage: netbench server CTL_PORT TCP_PORT UDP_PORT\n"
		"       netbench client HOST CTL_PORT TCP_PORT UDP_PORT local|remote BUDGET "
		"PROTOS SIZES INFLIGHT\n");
	return 2;
}
