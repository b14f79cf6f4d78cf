/*
 * Boot-test program for `ukl run -e NAME=VALUE -- ARGS`: prints its
 * privilege level and a checksum of what it received, so that the test
 * can compare with what it sent without printing 64 KiB on the console.
 *
 *   args: the count, the bytes, and FNV-1a (64 bits) over every argument
 *         after argv[0], each followed by a NUL byte, in order;
 *   env:  the same over the entries whose names start with UKLT_, summed
 *         per entry, because the order of the environment is not the
 *         order of the -e options.
 */
#include <stdio.h>
#include <string.h>

extern char **environ;

static unsigned long long fnv1a(unsigned long long h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define FNV_OFFSET 0xcbf29ce484222325ULL

int main(int argc, char **argv)
{
	unsigned long long args_hash = FNV_OFFSET, env_sum = 0;
	unsigned long args_bytes = 0, env_bytes = 0, env_count = 0;
	unsigned short cs;

	__asm__ volatile("mov %%cs, %0" : "=r"(cs));
	for (int i = 1; i < argc; i++) {
		size_t n = strlen(argv[i]) + 1;

		args_hash = fnv1a(args_hash, argv[i], n);
		args_bytes += n;
	}
	for (char **e = environ; *e; e++) {
		size_t n = strlen(*e) + 1;

		if (strncmp(*e, "UKLT_", 5))
			continue;
		env_sum += fnv1a(FNV_OFFSET, *e, n);
		env_bytes += n;
		env_count++;
	}
	printf("args_env_sum: cpl=%u args=%d bytes=%lu fnv=%016llx\n", cs & 3, argc - 1,
	       args_bytes, args_hash);
	printf("args_env_sum: env=%lu bytes=%lu sum=%016llx\n", env_count, env_bytes, env_sum);
	return 0;
}
