// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sroce_insn.so - a QEMU TCG plugin for `make bench-insn`: counts the guest
 * instructions executed, kernel and user space apart, and prints the running
 * totals whenever the guest executes a marker instruction.
 *
 *   qemu-system-x86_64 ... -plugin file=build/bench/sroce_insn.so,arg=out=FILE
 *
 * Counting: every translated block gets an execution callback whose user
 * data is the block's instruction count and whether it is kernel code
 * (starts at or above 0xffff800000000000, the x86-64 kernel half). The
 * callback adds it to the counter of the vCPU that runs the block; each
 * counter has one writer, its own vCPU thread (MTTCG runs vCPUs in parallel,
 * so one shared counter would lose updates). A block left early (a fault
 * part-way) is still counted whole: a small, steady overcount. TCG runs each
 * iteration of a rep-prefixed string instruction as a block of its own, so
 * "rep movsb" counts once per byte moved.
 *
 * Marks: the 8-byte NOP "nopl 0x5ec0TTTT(%rax,%rax,1)" (0f 1f 84 00 and the
 * displacement, little-endian) is a NOP on every x86-64 CPU; TTTT is a 16-bit
 * tag chosen by the guest (tools/bench/insn/insn_mark.c). When one is
 * translated, it gets an instruction callback that writes
 *
 *   mark SEQ TAG VCPU KERNEL USER
 *
 * SEQ counting marks from 0, KERNEL and USER the sums over all vCPUs at that
 * moment. The other vCPUs' counters are read without a lock (aligned 64-bit
 * loads are atomic on x86-64 hosts): a block they are running right then is
 * in the sum or not, a few instructions either way. At exit "total KERNEL
 * USER" follows.
 *
 * Arguments: out=FILE writes the lines to FILE (else QEMU's log, stderr
 * unless -D is given).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qemu_plugin_api.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define KERNEL_START	0xffff800000000000ULL
#define TB_KERNEL	((uintptr_t)1 << 63)
#define MARK_MAGIC	0x5ec0U

/* One cache line per vCPU: no false sharing between the vCPU threads. */
struct vcpu_count {
	uint64_t kernel;
	uint64_t user;
} __attribute__((aligned(64)));

static struct vcpu_count *counts;
static unsigned int n_vcpus;
static uint64_t n_marks;
static uint64_t lost;	/* blocks run by a vCPU index beyond n_vcpus */
static int out_fd = -1;

static void emit(const char *line, size_t len)
{
	if (out_fd < 0) {
		qemu_plugin_outs(line);
		return;
	}
	/* One write per line, O_APPEND: lines from two vCPUs never interleave. */
	if (write(out_fd, line, len) != (ssize_t)len)
		qemu_plugin_outs("sroce_insn: short write to the output file\n");
}

static void sum(uint64_t *kernel, uint64_t *user)
{
	unsigned int i;

	*kernel = 0;
	*user = 0;
	for (i = 0; i < n_vcpus; i++) {
		*kernel += __atomic_load_n(&counts[i].kernel, __ATOMIC_RELAXED);
		*user += __atomic_load_n(&counts[i].user, __ATOMIC_RELAXED);
	}
}

static void tb_exec(unsigned int vcpu, void *udata)
{
	uintptr_t v = (uintptr_t)udata;
	uint64_t *c;

	if (vcpu >= n_vcpus) {
		__atomic_fetch_add(&lost, 1, __ATOMIC_RELAXED);
		return;
	}
	c = v & TB_KERNEL ? &counts[vcpu].kernel : &counts[vcpu].user;
	/* Only this vCPU's thread writes it; the store is for the readers. */
	__atomic_store_n(c, *c + (v & ~TB_KERNEL), __ATOMIC_RELAXED);
}

static void mark_exec(unsigned int vcpu, void *udata)
{
	uint64_t kernel, user, seq;
	char line[128];
	int len;

	sum(&kernel, &user);
	seq = __atomic_fetch_add(&n_marks, 1, __ATOMIC_RELAXED);
	len = snprintf(line, sizeof(line), "mark %llu %u %u %llu %llu\n",
		       (unsigned long long)seq, (unsigned int)(uintptr_t)udata,
		       vcpu, (unsigned long long)kernel,
		       (unsigned long long)user);
	if (len > 0 && (size_t)len < sizeof(line))
		emit(line, len);
}

/* The tag if INSN is a marker, else -1. */
static int marker_tag(const struct qemu_plugin_insn *insn)
{
	static const unsigned char nopl[4] = { 0x0f, 0x1f, 0x84, 0x00 };
	const unsigned char *p;

	if (qemu_plugin_insn_size(insn) != 8)
		return -1;
	p = qemu_plugin_insn_data(insn);
	if (memcmp(p, nopl, sizeof(nopl)) || (p[6] | p[7] << 8) != MARK_MAGIC)
		return -1;
	return p[4] | p[5] << 8;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	uintptr_t v = n;
	int tag;

	if (qemu_plugin_tb_vaddr(tb) >= KERNEL_START)
		v |= TB_KERNEL;
	qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS,
					     (void *)v);
	if (v & TB_KERNEL)
		return;
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);

		tag = marker_tag(insn);
		if (tag >= 0)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, mark_exec,
							       QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)tag);
	}
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	uint64_t kernel, user;
	char line[128];
	int len;

	sum(&kernel, &user);
	len = snprintf(line, sizeof(line), "total %llu %llu lost %llu\n",
		       (unsigned long long)kernel, (unsigned long long)user,
		       (unsigned long long)__atomic_load_n(&lost, __ATOMIC_RELAXED));
	if (len > 0 && (size_t)len < sizeof(line))
		emit(line, len);
	if (out_fd >= 0)
		close(out_fd);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	char line[160];
	int i, len;

	if (!info->system_emulation || info->system.max_vcpus < 1) {
		qemu_plugin_outs("sroce_insn: system emulation only\n");
		return -1;
	}
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			out_fd = open(argv[i] + 4,
				      O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
				      0644);
			if (out_fd < 0) {
				perror(argv[i] + 4);
				return -1;
			}
		} else {
			fprintf(stderr, "sroce_insn: unknown argument %s\n", argv[i]);
			return -1;
		}
	}
	n_vcpus = info->system.max_vcpus;
	counts = aligned_alloc(64, n_vcpus * sizeof(*counts));
	if (!counts)
		return -1;
	memset(counts, 0, n_vcpus * sizeof(*counts));
	len = snprintf(line, sizeof(line), "# sroce_insn: %s, %u vCPUs\n",
		       info->target_name, n_vcpus);
	if (len > 0 && (size_t)len < sizeof(line))
		emit(line, len);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
