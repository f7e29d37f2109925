// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Load a provider exactly as libibverbs does (RTLD_NOW), then exit.
#include <cstdio>
#include <dlfcn.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		(void)fprintf(stderr, "usage: %s PROVIDER.so\n", argv[0]);
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		(void)fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	(void)fprintf(stderr, "loaded %s\n", argv[1]);
	return dlclose(h) == 0 ? 0 : 1;
}
