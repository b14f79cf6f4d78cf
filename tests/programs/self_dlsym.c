/*
 * dlsym on the program's own symbols (tests/boot/test_self_dlsym.py).
 *
 * A dynamically linked executable built with -rdynamic finds its own
 * functions by name; lighttpd finds its built-in modules so. A UKL
 * application gets the same from the table ukl-cc adds to a program that
 * calls dlsym (ukl/toolchain/self_symbols.py): global functions and data,
 * not hidden or thread-local ones, by RTLD_DEFAULT and by dlopen(NULL)'s
 * handle; a name not there is an error dlerror() reports.
 */
#include <dlfcn.h>
#include <stdio.h>

int self_dlsym_answer(void)
{
	return 42;
}

int self_dlsym_value = 7;
__attribute__((visibility("hidden"))) int self_dlsym_hidden(void)
{
	return 2;
}

__thread int self_dlsym_tls = 3;

static const char *found(void *p)
{
	return p ? "found" : "none";
}

int main(void)
{
	void *self = dlopen(NULL, RTLD_NOW);
	int (*by_default)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "self_dlsym_answer");
	int (*by_handle)(void) = self ? (int (*)(void))dlsym(self, "self_dlsym_answer") : NULL;
	int *value = dlsym(RTLD_DEFAULT, "self_dlsym_value");
	void *missing = dlsym(RTLD_DEFAULT, "self_dlsym_missing");
	const char *error = dlerror();

	printf("self-dlsym: default=%d handle=%d value=%d missing=%s error=%s hidden=%s tls=%s "
	       "main=%s\n",
	       by_default ? by_default() : -1, by_handle ? by_handle() : -1, value ? *value : -1,
	       found(missing), error ? "yes" : "no",
	       found(dlsym(RTLD_DEFAULT, "self_dlsym_hidden")),
	       found(dlsym(RTLD_DEFAULT, "self_dlsym_tls")),
	       dlsym(RTLD_DEFAULT, "main") == (void *)main ? "same" : "other");
	/* Use them, so that no build drops them. */
	return self_dlsym_hidden() + self_dlsym_tls == 5 ? 0 : 1;
}
