/*
 * Boot-test program for disks and shared folders (`ukl run --disk`, -v):
 * each argument is a step, done in order, each reported on one line:
 *   read:PATH         prints the file's contents
 *   write:PATH:TEXT   creates or truncates PATH with TEXT
 *   copy:SRC:DST      copies SRC to DST through a static buffer (in the
 *                     kernel image on UKL: a 9p transfer of more than 1 KiB
 *                     pins its pages), one read() and one write()
 *   childcopy:SRC:DST the same in a forked child; the parent then checks
 *                     that its own copy of the buffer did not change
 *   direct:PATH       O_DIRECT write, then read back, of a static buffer
 * A step that fails prints the error (errno's name and text) and the
 * program goes on; it exits with the number of failed steps.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Static, so that on UKL they are in the application's .bss. */
static char transfer[256 * 1024];
static char direct_buf[64 * 1024] __attribute__((aligned(4096)));

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

/* FNV-1a, to name a buffer's contents in one word. */
static uint32_t digest(const char *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ (unsigned char)*p++) * 16777619u;
	return h;
}

static int do_copy(const char *step, char *spec)
{
	char *dst = strchr(spec, ':');
	ssize_t n;
	int in, out;

	if (!dst) {
		printf("files_rw: %s: bad step\n", step);
		return 1;
	}
	*dst++ = '\0';
	in = open(spec, O_RDONLY);
	if (in < 0)
		return fail(step);
	n = read(in, transfer, sizeof(transfer));
	close(in);
	if (n < 0)
		return fail(step);
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0 || write(out, transfer, (size_t)n) != n || fsync(out))
		return fail(step);
	close(out);
	printf("files_rw: %s: %zd bytes, digest %08x\n", step, n, digest(transfer, (size_t)n));
	return 0;
}

static int do_childcopy(const char *step, char *spec)
{
	uint32_t before = digest(transfer, sizeof(transfer));
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return fail(step);
	if (pid == 0) {
		int failed = do_copy(step, spec);

		fflush(stdout);
		_exit(failed);
	}
	if (waitpid(pid, &status, 0) != pid)
		return fail(step);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		printf("files_rw: %s: the child failed\n", step);
		return 1;
	}
	if (digest(transfer, sizeof(transfer)) != before) {
		printf("files_rw: %s: the parent's buffer changed\n", step);
		return 1;
	}
	printf("files_rw: %s: the parent's buffer is its own\n", step);
	return 0;
}

static int do_direct(const char *step, const char *path)
{
	uint32_t written;
	ssize_t n;
	int fd;

	for (size_t i = 0; i < sizeof(direct_buf); i++)
		direct_buf[i] = (char)(i * 7 + 3);
	written = digest(direct_buf, sizeof(direct_buf));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	if (fd < 0)
		return fail(step);
	if (write(fd, direct_buf, sizeof(direct_buf)) != (ssize_t)sizeof(direct_buf))
		return fail(step);
	memset(direct_buf, 0, sizeof(direct_buf));
	n = pread(fd, direct_buf, sizeof(direct_buf), 0);
	close(fd);
	if (n != (ssize_t)sizeof(direct_buf))
		return n < 0 ? fail(step) : (printf("files_rw: %s: short read\n", step), 1);
	if (digest(direct_buf, sizeof(direct_buf)) != written) {
		printf("files_rw: %s: read back other bytes\n", step);
		return 1;
	}
	printf("files_rw: %s: %zu bytes written and read back\n", step, sizeof(direct_buf));
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
		else if (strncmp(spec, "copy:", 5) == 0)
			failed += do_copy(step, spec + 5);
		else if (strncmp(spec, "childcopy:", 10) == 0)
			failed += do_childcopy(step, spec + 10);
		else if (strncmp(spec, "direct:", 7) == 0)
			failed += do_direct(step, spec + 7);
		else
			printf("files_rw: %s: unknown step\n", step), failed++;
	}
	fflush(stdout);
	return failed;
}
