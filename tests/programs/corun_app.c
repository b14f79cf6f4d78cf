/*
 * Boot-test program: talks to an ordinary process running beside it (see
 * corun_peer.c) over a FIFO, a unix socket and TCP loopback, and waits for
 * a signal that process sends. Prints "corun_app: ok WHAT" per channel;
 * the exit status is the number of failures.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define TCP_PORT 7007
#define UNIX_PATH "/tmp/corun.sock"
#define FIFO_PATH "/tmp/corun.fifo"

static int failures;
static volatile sig_atomic_t got_usr1;

static void on_usr1(int sig) { got_usr1 = sig == SIGUSR1; }

static void check(const char *what, int ok)
{
	printf("corun_app: %s %s\n", ok ? "ok" : "FAIL", what);
	fflush(stdout);
	failures += !ok;
}

/* Read a line from a connection and send it back upper-cased. */
static int echo_upper(int listener, const char *expect)
{
	char buf[64] = { 0 };
	int fd = accept(listener, NULL, NULL);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0 || strcmp(buf, expect))
		return 0;
	for (ssize_t i = 0; i < n; i++)
		buf[i] = toupper((unsigned char)buf[i]);
	n = write(fd, buf, n) == n;
	close(fd);
	return n;
}

int main(void)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(TCP_PORT) };
	struct sockaddr_un un = { .sun_family = AF_UNIX, .sun_path = UNIX_PATH };
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigset_t usr1, unblocked;
	char buf[64] = { 0 };
	int one = 1, tcp, usock, fifo;
	FILE *pidfile;
	unsigned short cs;

	__asm__ volatile("mov %%cs, %0" : "=r"(cs));
	printf("corun_app: cpl=%u pid=%d\n", cs & 3, getpid());
	sigaction(SIGUSR1, &sa, NULL);
	/*
	 * Keep SIGUSR1 blocked until sigsuspend() so it cannot arrive between
	 * a test of got_usr1 and the wait (a lost wake-up that pause() had).
	 */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &unblocked);

	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	tcp = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(tcp, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	usock = socket(AF_UNIX, SOCK_STREAM, 0);
	unlink(UNIX_PATH);
	if (bind(tcp, (struct sockaddr *)&in, sizeof(in)) || listen(tcp, 1) ||
	    bind(usock, (struct sockaddr *)&un, sizeof(un)) || listen(usock, 1) ||
	    mkfifo(FIFO_PATH, 0600)) {
		perror("corun_app: setup");
		return 100;
	}
	pidfile = fopen("/tmp/corun.pid", "w");
	fprintf(pidfile, "%d\n", getpid());
	fclose(pidfile);
	/* The peer's shell waits for this file: from here on we run together. */
	close(open("/tmp/corun.ready", O_CREAT | O_WRONLY, 0600));

	fifo = open(FIFO_PATH, O_RDONLY);
	check("fifo from the peer", fifo >= 0 && read(fifo, buf, sizeof(buf) - 1) > 0 &&
	      !strcmp(buf, "fifo-hello"));
	check("unix socket echo", echo_upper(usock, "unix-hello"));
	check("tcp loopback echo", echo_upper(tcp, "tcp-hello"));

	/* SIGALRM's default action ends the program if the signal never comes. */
	alarm(20);
	while (!got_usr1)
		sigsuspend(&unblocked);
	check("SIGUSR1 from the peer", got_usr1);
	printf("corun_app: %d failure(s)\n", failures);
	return failures;
}
