/*
 * <ukl.h> - what a UKL application can ask of the kernel it is linked into.
 *
 * Installed in the UKL sysroot by `ukl toolchain build`; an application that
 * also builds elsewhere can test for it with __has_include(<ukl.h>).
 *
 * Two kinds of interface:
 *  - switches (bypass, run-to-completion): ukl_set_* are kernel functions,
 *    called directly; their names are among the few that ukl-cc lets cross
 *    between the application and the kernel (see ukl/toolchain/driver.py).
 *    The wrappers follow the C library convention (-1 and errno).  In the
 *    host build of a program (./configure probes, host-side tests) they
 *    fail with EOPNOTSUPP.
 *  - shortcuts (CONFIG_UKL_SHORTCUTS): system calls private to the UKL
 *    application, numbered from UKL_NR_BASE (arch/x86/include/asm/ukl.h in
 *    the kernel), made through the same entry point as every other call.
 *    They return a negative errno value themselves, without touching errno,
 *    so a caller can fall back cheaply: -ENOSYS from a kernel without the
 *    option (and on the host), -ENOTSOCK/-EOPNOTSUPP for a descriptor they
 *    do not handle.
 */
#ifndef _UKL_H
#define _UKL_H 1

#include <errno.h>
#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Kernel side: arch/x86/kernel/ukl.c. */
long ukl_set_bypass(int on);
long ukl_set_run_to_completion(int on);

/* A switch's kernel result (negative errno) in the C library convention. */
static inline int __ukl_switch_result(long ret)
{
	if (ret < 0) {
		errno = (int)-ret;
		return -1;
	}
	return (int)ret;
}

/*
 * Turn system call bypass (CONFIG_UKL_BYP) on (1) or off (0) for the calling
 * thread; threads it creates afterwards inherit the setting, exec clears it.
 * Returns the previous setting (0 or 1), or -1 with errno set: EOPNOTSUPP if
 * the kernel was built without UKL_BYP.
 */
static inline int ukl_bypass(int on)
{
	return __ukl_switch_result(ukl_set_bypass(on));
}

/*
 * Turn run-to-completion (CONFIG_UKL_RTC) on (1) or off (0) for the calling
 * thread: while on, it is not preempted in application code until it blocks
 * or yields, for at most ukl_rtc_max_us (kernel command line, default
 * 20000) per deferral.  New threads and exec start with it off.  Returns the
 * previous setting (0 or 1), or -1 with errno set: EOPNOTSUPP if the kernel
 * was built without UKL_RTC.
 */
static inline int ukl_run_to_completion(int on)
{
	return __ukl_switch_result(ukl_set_run_to_completion(on));
}

#define UKL_NR_BASE		0x20000000L
#define UKL_NR_TCP_SEND		(UKL_NR_BASE + 0)
#define UKL_NR_TCP_RECV		(UKL_NR_BASE + 1)
#define UKL_NR_PINNED_ALLOC	(UKL_NR_BASE + 2)

/*
 * A UKL system call with up to four arguments, as the C library makes one:
 * a call to the kernel's entry point with the syscall instruction's
 * registers.  UKL code is built without a red zone, so the call's push
 * below the stack pointer is safe.
 */
static inline long ukl_syscall4(long nr, long a, long b, long c, long d)
{
	register long r10 __asm__("r10") = d;
	long ret;

	__asm__ volatile("call ukl_entry_SYSCALL_64"
			 : "=a"(ret)
			 : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory", "cc");
	return ret;
}

/*
 * send(fd, buf, len, flags) on a TCP socket, straight into the kernel's TCP
 * layer.  Returns the bytes sent or a negative errno: -ENOTSOCK if fd is no
 * socket, -EOPNOTSUPP if it is not a plain TCP socket (UDP, unix, kTLS...).
 */
static inline ssize_t ukl_tcp_send(int fd, const void *buf, size_t len, int flags)
{
	return ukl_syscall4(UKL_NR_TCP_SEND, fd, (long)buf, (long)len, flags);
}

/* recv(fd, buf, len, flags) on a TCP socket; errors as ukl_tcp_send(). */
static inline ssize_t ukl_tcp_recv(int fd, void *buf, size_t len, int flags)
{
	return ukl_syscall4(UKL_NR_TCP_RECV, fd, (long)buf, (long)len, flags);
}

/*
 * A pinned, pre-faulted buffer of at least size bytes, zero-filled: kernel
 * memory mapped into the application, every page present from the start
 * (no page fault on first touch) and never swapped or migrated; counted as
 * the process's pinned memory (VmPin, limited by RLIMIT_MEMLOCK), not
 * inherited by fork().  Free it with munmap(p, size).
 * Returns NULL with errno set on failure (ENOSYS without UKL_SHORTCUTS).
 */
static inline void *ukl_pinned_alloc(size_t size)
{
	long ret = ukl_syscall4(UKL_NR_PINNED_ALLOC, (long)size, 0, 0, 0);

	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return NULL;
	}
	return (void *)ret;
}

#ifdef __cplusplus
}
#endif

#endif /* _UKL_H */
