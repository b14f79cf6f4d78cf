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
 * Usage: memclient HOST PORT THREADS REQUESTS
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

int main(int argc, char **argv)
{
	long threads;
	pthread_t *tids;
	double t0, t1, t2;

	if (argc != 5) {
		fprintf(stderr, "usage: memclient HOST PORT THREADS REQUESTS\n");
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
	pthread_barrier_init(&phase, NULL, threads + 1);
	for (long i = 0; i < threads; i++)
		if (pthread_create(&tids[i], NULL, client, (void *)i))
			die("pthread_create");
	pthread_barrier_wait(&phase);
	t0 = now();
	pthread_barrier_wait(&phase);
	t1 = now();
	pthread_barrier_wait(&phase);
	pthread_barrier_wait(&phase);
	t2 = now();
	for (long i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	printf("appbench,memcached,SET,%.0f\n", threads * requests / (t1 - t0));
	printf("appbench,memcached,GET,%.0f\n", threads * requests / (t2 - t1));
	return 0;
}
