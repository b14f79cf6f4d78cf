/*
 * Boot-test program for disks and shared folders (`ukl run --disk`, -v):
 * each argument is a step, done in order, each reported on one line:
 *   read:PATH         prints the file's contents
 *   write:PATH:TEXT   creates or truncates PATH with TEXT
 * A step that fails prints the error (errno's name and text) and the
 * program goes on; it exits with the number of failed steps.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *step)
{
	printf("files_rw: %s: failed: %s (errno %d)\n", step, strerror(errno), errno);
	return 1;
}

static int do_read(const char *step, const char *path)
{
	char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return fail(step);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return fail(step);
	buf[n] = '\0';
	printf("files_rw: %s: <%s>\n", step, buf);
	return 0;
}

static int do_write(const char *step, char *spec)
{
	char *text = strchr(spec, ':');
	int fd;

	if (!text) {
		printf("files_rw: %s: bad step\n", step);
		return 1;
	}
	*text++ = '\0';
	fd = open(spec, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) || fsync(fd))
		return fail(step);
	close(fd);
	printf("files_rw: %s: ok\n", step);
	return 0;
}

int main(int argc, char **argv)
{
	int failed = 0;

	for (int i = 1; i < argc; i++) {
		char step[512], spec[512];

		snprintf(step, sizeof(step), "%s", argv[i]);
		snprintf(spec, sizeof(spec), "%s", argv[i]);
		if (strncmp(spec, "read:", 5) == 0)
			failed += do_read(step, spec + 5);
		else if (strncmp(spec, "write:", 6) == 0)
			failed += do_write(step, spec + 6);
		else
			printf("files_rw: %s: unknown step\n", step), failed++;
	}
	fflush(stdout);
	return failed;
}
