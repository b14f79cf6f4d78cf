// SPDX-License-Identifier: GPL-2.0
/*
 * ukl-runas UID GID [--keep-rawio] PROGRAM [ARG...]
 *
 * Init (root) starts an image's program through this when the recipe names
 * a user ([run] user): servers such as PostgreSQL refuse to run as root.
 * All user and group ids become UID and GID and supplementary groups are
 * dropped. With --keep-rawio the new user keeps CAP_SYS_RAWIO, and only
 * that capability, across the exec: a UKL kernel starts the application
 * linked into it only for a caller with CAP_SYS_RAWIO, so without it the
 * exec of the trigger path fails with EPERM. The capability is raised as
 * an ambient capability, the only kind an exec of an ordinary file keeps
 * for a non-root user. The kernel clears the inheritable and ambient sets
 * once it has started the application, so the programs it runs inherit
 * nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "ukl-runas: %s: %s\n", what, strerror(errno));
	exit(127);
}

static unsigned long parse_id(const char *text)
{
	char *end;
	unsigned long id;

	errno = 0;
	id = strtoul(text, &end, 10);
	if (errno || !*text || *end || id >= 0xffffffffUL) {
		fprintf(stderr, "ukl-runas: '%s' is not a numeric id\n", text);
		exit(127);
	}
	return id;
}

/* Set the permitted, effective and inheritable sets to `caps` (low word). */
static void set_caps(unsigned int caps)
{
	struct __user_cap_header_struct head = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2] = {
		{ .effective = caps, .permitted = caps, .inheritable = caps },
	};

	if (syscall(SYS_capset, &head, data))
		die("capset");
}

int main(int argc, char **argv)
{
	unsigned int keep = 0;
	unsigned long uid, gid;
	int first = 3;

	if (argc < 4) {
		fprintf(stderr, "usage: ukl-runas UID GID [--keep-rawio] PROGRAM [ARG...]\n");
		return 127;
	}
	uid = parse_id(argv[1]);
	gid = parse_id(argv[2]);
	/* Root would keep every capability: use no ukl-runas for it. */
	if (!uid || !gid) {
		fprintf(stderr, "ukl-runas: refusing user or group 0\n");
		return 127;
	}
	if (!strcmp(argv[3], "--keep-rawio")) {
		keep = 1U << CAP_SYS_RAWIO;
		first = 4;
		if (argc < 5) {
			fprintf(stderr, "ukl-runas: no program given\n");
			return 127;
		}
	}

	/* Keep the permitted set through the change of user ids below. */
	if (keep && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0))
		die("PR_SET_KEEPCAPS");
	if (setgroups(0, NULL))
		die("setgroups");
	if (setresgid(gid, gid, gid))
		die("setresgid");
	if (setresuid(uid, uid, uid))
		die("setresuid");
	if (keep) {
		/* Ambient needs the capability permitted and inheritable. */
		set_caps(keep);
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_RAWIO, 0, 0))
			die("PR_CAP_AMBIENT_RAISE");
	}
	execv(argv[first], &argv[first]);
	fprintf(stderr, "ukl-runas: exec %s: %s\n", argv[first], strerror(errno));
	return 127;
}
