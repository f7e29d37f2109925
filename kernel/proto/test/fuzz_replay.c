// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Runs the fuzz target without libFuzzer: every file in the given corpus
 * directories (or files), every prefix of it, and every single-bit flip of
 * it. Lets the normal test suite (gcc, ASan/UBSan) exercise the target.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sroce_proto.h"

int LLVMFuzzerTestOneInput(const u8 *data, size_t size);

static unsigned long runs;

static void run(const u8 *d, size_t n)
{
	/* Exact-size heap copy so ASan sees any read past the end. */
	u8 *p = malloc(n ? n : 1);

	if (!p)
		abort();
	memcpy(p, d, n);
	LLVMFuzzerTestOneInput(p, n);
	free(p);
	runs++;
}

static int one_file(const char *path)
{
	static u8 buf[1 << 16];
	size_t n, i;
	FILE *f = fopen(path, "rb");

	if (!f) {
		perror(path);
		return 1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	for (i = 0; i <= n; i++)
		run(buf, i);
	for (i = 0; i < n * 8; i++) {
		buf[i / 8] ^= (u8)(1u << (i % 8));
		run(buf, n);
		buf[i / 8] ^= (u8)(1u << (i % 8));
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long files = 0;
	int i, err = 0;

	for (i = 1; i < argc; i++) {
		struct stat st;
		struct dirent *de;
		DIR *dir;
		char path[4096];

		if (stat(argv[i], &st)) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			err |= one_file(argv[i]);
			files++;
			continue;
		}
		dir = opendir(argv[i]);
		if (!dir) {
			perror(argv[i]);
			return 1;
		}
		while ((de = readdir(dir))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i],
				 de->d_name);
			err |= one_file(path);
			files++;
		}
		closedir(dir);
	}
	printf("fuzz_replay: %lu files, %lu runs\n", files, runs);
	return err || !files;
}
