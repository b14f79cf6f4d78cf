/*
 * <ukl.h> - what a UKL application can ask of the kernel it is linked into.
 *
 * Installed in the UKL sysroot by `ukl toolchain build`; an application that
 * also builds elsewhere can test for it with __has_include(<ukl.h>).
 *
 * The ukl_set_* functions are kernel functions, called directly: their names
 * are among the few that ukl-cc lets cross between the application and the
 * kernel (see ukl/toolchain/driver.py).  They return a negative errno value
 * on failure; the wrappers below follow the C library convention instead.
 * In the host build of a program (./configure probes, host-side tests) they
 * fail with EOPNOTSUPP.
 */
#ifndef _UKL_H
#define _UKL_H 1

#include <errno.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Kernel side: arch/x86/kernel/ukl.c. */
long ukl_set_bypass(int on);

/*
 * Turn system call bypass (CONFIG_UKL_BYP) on (1) or off (0) for the calling
 * thread; threads it creates afterwards inherit the setting, exec clears it.
 * Returns the previous setting (0 or 1), or -1 with errno set: EOPNOTSUPP if
 * the kernel was built without UKL_BYP.
 */
static inline int ukl_bypass(int on)
{
	long ret = ukl_set_bypass(on);

	if (ret < 0) {
		errno = (int)-ret;
		return -1;
	}
	return (int)ret;
}

#ifdef __cplusplus
}
#endif

#endif /* _UKL_H */
