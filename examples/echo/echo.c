/*
 * A small TCP echo server: the minimal networking example. Serves one
 * connection at a time on the port given (default 7), echoing what it
 * receives; a connection that sends "quit" ends the server with status 0.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static unsigned int ring(void)
{
	unsigned short cs;

	__asm__ volatile("mov %%cs, %0" : "=r"(cs));
	return cs & 3;
}

/* Echo one connection; return 1 if the client asked us to stop. */
static int serve(int fd)
{
	char buf[4096];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (n >= 4 && !memcmp(buf, "quit", 4))
			return 1;
		if (write(fd, buf, n) != n)
			break;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int port = argc > 1 ? atoi(argv[1]) : 7, one = 1, stop = 0;
	struct sockaddr_in addr = { .sin_family = AF_INET,
				    .sin_addr.s_addr = htonl(INADDR_ANY),
				    .sin_port = htons(port) };
	int s = socket(AF_INET, SOCK_STREAM, 0);

	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (s < 0 || bind(s, (struct sockaddr *)&addr, sizeof(addr)) || listen(s, 8)) {
		perror("echo: socket");
		return 1;
	}
	printf("echo: listening on port %d (ring %u)\n", port, ring());
	fflush(stdout);
	while (!stop) {
		int fd = accept(s, NULL, NULL);

		if (fd < 0) {
			perror("echo: accept");
			return 1;
		}
		stop = serve(fd);
		close(fd);
	}
	printf("echo: done\n");
	return 0;
}
