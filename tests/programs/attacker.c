/*
 * Boot-test program: an ordinary (CPL3) process that attacks the UKL
 * application beside it (guarded_app.c), as root, as root without
 * CAP_SYS_RAWIO and as uid 1000. For every identity and probe it prints
 *   attacker: WHO PROBE: refused (WHY)    or    attacker: WHO PROBE: ALLOWED ...
 * then "attacker: done, N allowed" and creates /tmp/attack.done.
 *
 * Probes: ptrace attach and seize; /proc/PID/mem read and write and
 * process_vm_readv/writev of the application's heap; a load of its static
 * data (kernel memory) and a system call given that address; starting the
 * application (plain, under PTRACE_TRACEME, and, where user namespaces
 * exist, from a chroot of the attacker's own in a new user namespace).
 * The same probes, as root and as uid 1000 (WHO child-root, child-uid1000),
 * then target a forked child of the application, which has its own copy of
 * the static data.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define TRIGGER "/UKL"
#define EVIL 0x0badbadbadL

static pid_t app;
static unsigned long static_addr, heap_addr;
static const char *who;
static int allowed;

static void refused(const char *probe, const char *why)
{
	printf("attacker: %s %s: refused (%s)\n", who, probe, why);
}

static void granted(const char *probe, const char *what)
{
	printf("attacker: %s %s: ALLOWED %s\n", who, probe, what);
	allowed++;
}

/*
 * A refusal by errno: only EPERM/EACCES (not EFAULT, ESRCH, ...) count.
 * ENOSYS: the kernel has no such call (CROSS_MEMORY_ATTACH off).
 */
static void by_errno(const char *probe, long ret, int err)
{
	if (ret >= 0)
		granted(probe, "(call succeeded)");
	else if (err == ENOSYS)
		printf("attacker: %s %s: unavailable (%s)\n", who, probe, strerror(err));
	else if (err == EPERM || err == EACCES)
		refused(probe, strerror(err));
	else
		granted(probe, strerror(err));
}

static void probe_ptrace(const char *probe, int request)
{
	long ret = ptrace(request, app, NULL, NULL);
	int err = errno;

	by_errno(probe, ret, err);
	if (ret == 0) {
		/* Let the application go on, whatever else happens. */
		waitpid(app, NULL, __WALL | WNOHANG);
		ptrace(PTRACE_DETACH, app, NULL, NULL);
	}
}

static void probe_proc_mem(void)
{
	char path[64];
	long word = EVIL;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", app);
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		by_errno("proc-mem-read", -1, errno);
	} else {
		by_errno("proc-mem-read", pread(fd, &word, sizeof(word), heap_addr) == 8 ? 0 : -1,
			 errno);
		close(fd);
	}
	word = EVIL;
	fd = open(path, O_RDWR);
	if (fd < 0) {
		by_errno("proc-mem-write", -1, errno);
	} else {
		by_errno("proc-mem-write", pwrite(fd, &word, sizeof(word), heap_addr) == 8 ? 0 : -1,
			 errno);
		close(fd);
	}
}

static void probe_vm(void)
{
	long word = EVIL;
	struct iovec local = { &word, sizeof(word) };
	struct iovec remote = { (void *)heap_addr, sizeof(word) };
	long ret;

	ret = process_vm_readv(app, &local, 1, &remote, 1, 0);
	by_errno("vm-readv", ret, errno);
	ret = process_vm_writev(app, &local, 1, &remote, 1, 0);
	by_errno("vm-writev", ret, errno);
}

/* Kernel memory from CPL3: a load must die of SIGSEGV, a system call fail. */
static void probe_kernel_memory(void)
{
	int status, fds[2];
	pid_t pid = fork();

	if (pid == 0) {
		printf("attacker: %s read %lx\n", who, *(volatile long *)static_addr);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
		refused("load-static", "SIGSEGV");
	else
		granted("load-static", "(no SIGSEGV)");
	if (pipe(fds) == 0) {
		long ret = write(fds[1], (void *)static_addr, 8);

		if (ret < 0 && errno == EFAULT)
			refused("syscall-static", "EFAULT");
		else
			granted("syscall-static", "(no EFAULT)");
		close(fds[0]);
		close(fds[1]);
	}
}

/* A child execs the trigger after @prepare; a start shows as status 99. */
static void probe_start(const char *probe, int (*prepare)(void))
{
	int status, pipefd[2];
	pid_t pid;
	int err = 0;

	if (pipe2(pipefd, O_CLOEXEC))
		return;
	pid = fork();
	if (pid == 0) {
		char name[64];
		char *argv[] = { TRIGGER, name, NULL };

		close(pipefd[0]);
		snprintf(name, sizeof(name), "probe-%s-%s", who, probe);
		err = prepare ? prepare() : 0;
		if (!err) {
			execv(TRIGGER, argv);
			err = errno;
		}
		if (write(pipefd[1], &err, sizeof(err)) != sizeof(err))
			_exit(2);
		_exit(1);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &err, sizeof(err)) != sizeof(err))
		err = 0;
	close(pipefd[0]);
	/* A traced child that did start stops at its exec: end it. */
	if (waitpid(pid, &status, 0) == pid && WIFSTOPPED(status)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	if (err == -1)
		printf("attacker: %s %s: unavailable (no user namespaces)\n", who, probe);
	else if (err)
		refused(probe, strerror(err));
	else
		granted(probe, "(the application started)");
}

static int traceme(void)
{
	return ptrace(PTRACE_TRACEME, 0, NULL, NULL) ? errno : 0;
}

/* A root of one's own: a user namespace, and a chroot holding a /UKL. */
static int userns_chroot(void)
{
	char dir[64];
	int fd;

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS))
		return -1;
	snprintf(dir, sizeof(dir), "/tmp/jail-%d", getpid());
	if (mkdir(dir, 0700) && errno != EEXIST)
		return errno;
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/UKL");
	fd = open(dir, O_CREAT | O_WRONLY, 0700);
	if (fd < 0)
		return errno;
	close(fd);
	*strrchr(dir, '/') = 0;
	return chroot(dir) || chdir("/") ? errno : 0;
}

static int drop_rawio(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return errno;
	data[0].effective &= ~(1u << CAP_SYS_RAWIO);
	data[0].permitted &= ~(1u << CAP_SYS_RAWIO);
	data[0].inheritable &= ~(1u << CAP_SYS_RAWIO);
	return syscall(SYS_capset, &hdr, data) ? errno : 0;
}

static void attack_as(const char *name)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		who = name;
		if (!strcmp(name, "root-without-rawio") && drop_rawio()) {
			printf("attacker: cannot drop CAP_SYS_RAWIO\n");
			_exit(100);
		}
		if (strstr(name, "uid1000") && (setgid(1000) || setuid(1000))) {
			printf("attacker: cannot become uid 1000\n");
			_exit(100);
		}
		probe_ptrace("ptrace-attach", PTRACE_ATTACH);
		probe_ptrace("ptrace-seize", PTRACE_SEIZE);
		probe_proc_mem();
		probe_vm();
		probe_kernel_memory();
		probe_start("start", NULL);
		probe_start("start-traced", traceme);
		if (strstr(name, "uid1000"))
			probe_start("start-userns-chroot", userns_chroot);
		fflush(stdout);
		_exit(allowed);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		allowed += 100;
	else
		allowed += WEXITSTATUS(status);
}

int main(void)
{
	FILE *info;
	pid_t child;

	for (int i = 0; i < 2400 && access("/tmp/guarded.info", F_OK); i++)
		usleep(100000);
	info = fopen("/tmp/guarded.info", "r");
	if (!info || fscanf(info, "%d %lx %lx %d", &app, &static_addr, &heap_addr,
			    &child) != 4) {
		printf("attacker: no /tmp/guarded.info\n");
		return 1;
	}
	fclose(info);
	printf("attacker: cpl=3, application pid %d\n", app);
	attack_as("root");
	attack_as("root-without-rawio");
	attack_as("uid1000");
	/* The application's forked child, with its own copy of the static data. */
	printf("attacker: the application's child, pid %d\n", child);
	app = child;
	attack_as("child-root");
	attack_as("child-uid1000");
	printf("attacker: done, %d allowed\n", allowed);
	fflush(stdout);
	close(open("/tmp/attack.done", O_CREAT | O_WRONLY, 0644));
	return 0;
}
