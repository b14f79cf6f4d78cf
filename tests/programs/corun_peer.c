/*
 * The ordinary process of the co-running test: a normal static program
 * (CPL3) that talks to corun_app over a FIFO, a unix socket and TCP
 * loopback, then signals it.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int exchange(int fd, const struct sockaddr *addr, socklen_t len,
		    const char *msg, const char *want)
{
	char buf[64] = { 0 };

	if (fd < 0 || connect(fd, addr, len) ||
	    write(fd, msg, strlen(msg)) != (ssize_t)strlen(msg) ||
	    read(fd, buf, sizeof(buf) - 1) <= 0)
		return 0;
	close(fd);
	printf("corun_peer: sent %s, got %s\n", msg, buf);
	return !strcmp(buf, want);
}

int main(void)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(7007) };
	struct sockaddr_un un = { .sun_family = AF_UNIX, .sun_path = "/tmp/corun.sock" };
	unsigned short cs;
	int pid = 0, fifo, ok = 1;
	FILE *f;

	__asm__ volatile("mov %%cs, %0" : "=r"(cs));
	printf("corun_peer: cpl=%u pid=%d\n", cs & 3, getpid());
	fifo = open("/tmp/corun.fifo", O_WRONLY);
	ok &= fifo >= 0 && write(fifo, "fifo-hello", 10) == 10;
	close(fifo);
	ok &= exchange(socket(AF_UNIX, SOCK_STREAM, 0), (struct sockaddr *)&un,
		       sizeof(un), "unix-hello", "UNIX-HELLO");
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok &= exchange(socket(AF_INET, SOCK_STREAM, 0), (struct sockaddr *)&in,
		       sizeof(in), "tcp-hello", "TCP-HELLO");
	f = fopen("/tmp/corun.pid", "r");
	ok &= f && fscanf(f, "%d", &pid) == 1 && kill(pid, SIGUSR1) == 0;
	printf("corun_peer: %s\n", ok ? "done" : "FAILED");
	return !ok;
}
