/*
 * Loads /ukl_nmi_nest.ko (tests/programs/ukl_nmi_nest): an NMI taken while
 * a page fault's frame is still on the stack the fault came in on, whose
 * handler faults too. Prints the module's own report from the kernel log,
 * then makes a few more system calls to show the machine still works.
 *
 * Prints "nmi_nest: ok" when the module loaded, else "nmi_nest: FAIL ...".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SYSLOG_ACTION_READ_ALL 3

static char log_buf[1 << 16];

static void print_module_report(void)
{
	int len = klogctl(SYSLOG_ACTION_READ_ALL, log_buf, sizeof(log_buf) - 1);
	char *line, *save;

	if (len < 0) {
		printf("nmi_nest: cannot read the kernel log: %s\n", strerror(errno));
		return;
	}
	log_buf[len] = '\0';
	for (line = strtok_r(log_buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strstr(line, "ukl_nmi_nest: "))
			printf("nmi_nest: kernel log: %s\n", strstr(line, "ukl_nmi_nest: "));
}

int main(void)
{
	int fd = open("/ukl_nmi_nest.ko", O_RDONLY | O_CLOEXEC), err = 0;
	long sum = 0;

	if (fd < 0) {
		printf("nmi_nest: FAIL no /ukl_nmi_nest.ko: %s\n", strerror(errno));
		return 1;
	}
	if (syscall(SYS_finit_module, fd, "", 0))
		err = errno;
	close(fd);
	print_module_report();
	for (int i = 0; i < 1000; i++)
		sum += getppid();
	if (err) {
		printf("nmi_nest: FAIL loading the module: %s\n", strerror(err));
		return 1;
	}
	printf("nmi_nest: ok (%ld)\n", sum);
	return 0;
}
