/*
 * A small memcached load generator for `ukl bench-apps`: THREADS client
 * threads, each with its own TCP connection, send REQUESTS "set" then
 * REQUESTS "get" commands (text protocol, 32-byte values, one request in
 * flight per connection) and check every reply.
 *
 * It runs inside the guest, beside the server, so under QEMU -icount the
 * whole exchange is deterministic and guest time counts instructions: the
 * reported "requests per second" are requests per 10^9 guest instructions.
 *
 * Output: appbench,memcached,OP,REQUESTS_PER_SECOND   (OP: SET, GET)
 * Usage: memclient HOST PORT THREADS REQUESTS [CONTROL_PORT]
 *
 * With CONTROL_PORT it runs on the host instead (`ukl bench-apps --client
 * host`): around each phase it asks guest/count_window.c, on that port of
 * HOST, to open and close a counting window (0: SET, 1: GET).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in server;
static long requests;
static FILE *control_in, *control_out;
static pthread_barrier_t phase;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Read until the buffer ends with `end`; fail on anything unexpected. */
static void expect(int fd, const char *end, const char *prefix)
{
	char buf[512];
	size_t len = 0, endlen = strlen(end);

	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);

		if (n <= 0)
			die("read");
		len += n;
		buf[len] = 0;
		if (len >= endlen && !strcmp(buf + len - endlen, end))
			break;
		if (len == sizeof(buf) - 1) {
			fprintf(stderr, "memclient: reply too long\n");
			exit(1);
		}
	}
	if (strncmp(buf, prefix, strlen(prefix))) {
		fprintf(stderr, "memclient: unexpected reply: %s\n", buf);
		exit(1);
	}
}

static void send_all(int fd, const char *msg, size_t len)
{
	while (len) {
		ssize_t n = write(fd, msg, len);

		if (n <= 0)
			die("write");
		msg += n;
		len -= n;
	}
}

static void *client(void *arg)
{
	long id = (long)arg;
	char msg[256];
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&server, sizeof(server)))
		die("connect");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	pthread_barrier_wait(&phase);
	for (long i = 0; i < requests; i++) {
		int n = snprintf(msg, sizeof(msg),
				 "set key:%ld:%ld 0 0 32\r\n%032ld\r\n", id, i, i);

		send_all(fd, msg, n);
		expect(fd, "\r\n", "STORED");
	}
	pthread_barrier_wait(&phase);
	pthread_barrier_wait(&phase);
	for (long i = 0; i < requests; i++) {
		int n = snprintf(msg, sizeof(msg), "get key:%ld:%ld\r\n", id, i);

		send_all(fd, msg, n);
		expect(fd, "END\r\n", "VALUE");
	}
	pthread_barrier_wait(&phase);
	close(fd);
	return NULL;
}

/* Ask count_window to open or close a window, and wait until it has. */
static void control(const char *what, int window)
{
	char reply[64];

	if (!control_out)
		return;
	fprintf(control_out, "%s %d\n", what, window);
	fflush(control_out);
	if (!fgets(reply, sizeof(reply), control_in) || strncmp(reply, "ok ", 3)) {
		fprintf(stderr, "memclient: count_window: %s", reply);
		exit(1);
	}
}

static void connect_control(const char *port)
{
	struct sockaddr_in addr = server;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	addr.sin_port = htons(atoi(port));
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)))
		die("connect to count_window");
	control_in = fdopen(fd, "r");
	control_out = fdopen(dup(fd), "w");
	if (!control_in || !control_out)
		die("fdopen");
}

int main(int argc, char **argv)
{
	long threads;
	pthread_t *tids;
	double t0, t1, t2;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: memclient HOST PORT THREADS REQUESTS [CONTROL_PORT]\n");
		return 2;
	}
	server.sin_family = AF_INET;
	server.sin_port = htons(atoi(argv[2]));
	if (inet_pton(AF_INET, argv[1], &server.sin_addr) != 1)
		die("inet_pton");
	threads = atol(argv[3]);
	requests = atol(argv[4]);
	tids = calloc(threads, sizeof(*tids));
	if (threads < 1 || requests < 1 || !tids)
		return 2;
	if (argc == 6)
		connect_control(argv[5]);
	pthread_barrier_init(&phase, NULL, threads + 1);
	for (long i = 0; i < threads; i++)
		if (pthread_create(&tids[i], NULL, client, (void *)i))
			die("pthread_create");
	control("begin", 0);
	pthread_barrier_wait(&phase);
	t0 = now();
	pthread_barrier_wait(&phase);
	t1 = now();
	control("end", 0);
	control("begin", 1);
	pthread_barrier_wait(&phase);
	pthread_barrier_wait(&phase);
	t2 = now();
	control("end", 1);
	for (long i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	printf("appbench,memcached,SET,%.0f\n", threads * requests / (t1 - t0));
	printf("appbench,memcached,GET,%.0f\n", threads * requests / (t2 - t1));
	return 0;
}
