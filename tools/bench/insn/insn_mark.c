// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * insn_mark TAG - run the marker instruction of `make bench-insn` once.
 *
 * Builds "nopl 0x5ec0TTTT(%rax,%rax,1); ret" (TTTT = TAG, 0-65535) in a fresh
 * executable page and calls it. On a CPU it does nothing; under QEMU with
 * build/bench/sroce_insn.so loaded, the plugin writes one line with TAG and
 * the instructions executed so far (tools/bench/insn/sroce_insn.c).
 * Static, so that each mark costs the same few instructions (no dynamic
 * loader work varying with the library search).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
	unsigned char code[9] = { 0x0f, 0x1f, 0x84, 0x00, 0, 0, 0xc0, 0x5e, 0xc3 };
	unsigned long tag;
	char *end;
	void *page;

	if (argc != 2) {
		fprintf(stderr, "usage: insn_mark TAG (0-65535)\n");
		return 2;
	}
	tag = strtoul(argv[1], &end, 10);
	if (*argv[1] == '\0' || *end != '\0' || tag > 0xffff) {
		fprintf(stderr, "insn_mark: bad tag %s\n", argv[1]);
		return 2;
	}
	code[4] = tag & 0xff;
	code[5] = tag >> 8;
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED) {
		perror("insn_mark: mmap");
		return 1;
	}
	memcpy(page, code, sizeof(code));
	__builtin___clear_cache((char *)page, (char *)page + sizeof(code));
	((void (*)(void))page)();
	return 0;
}
