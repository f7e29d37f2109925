/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * sroce kernel <-> user ABI.
 *
 * This is the only header shared by sroce.ko and libsroce-rdmav34.so. It is
 * included by kernel C and by user C++20, so it uses only the uapi fixed-width
 * types and plain structs. Every struct here has an explicit size, no implicit
 * padding, and 64-bit fields on 8-byte boundaries; both sides assert the sizes.
 *
 * Bump SROCE_UVERBS_ABI_VERSION on any incompatible change. The provider only
 * binds to devices whose uverbs ABI version is exactly this one.
 */
#ifndef SROCE_ABI_H
#define SROCE_ABI_H

#include <linux/types.h>

#define SROCE_UVERBS_ABI_VERSION	1

/*
 * Driver id reported to libibverbs through RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID.
 * sroce has no upstream enum rdma_driver_id value, so it uses a private
 * number far above the upstream enum; the kernel passes it through unchecked
 * and libibverbs matches it numerically (VERBS_MATCH_DRIVER_ID).
 */
#define SROCE_DRIVER_ID			0x5352

/* "rdma link add NAME type sroce netdev DEV" */
#define SROCE_LINK_TYPE			"sroce"

/* IANA RoCEv2 UDP destination port. */
#define SROCE_ROCEV2_UDP_PORT		4791

/* Vendor id reported in device attributes (none assigned; like rxe). */
#define SROCE_VENDOR_ID			0xFFFFFF
#define SROCE_VENDOR_PART_ID		0x5352

/*
 * Response to alloc_ucontext (the provider's ibv_cmd_get_context driver
 * data). The kernel tells the provider the ring geometry it uses so the
 * provider never guesses.
 */
struct sroce_alloc_ucontext_resp {
	__u32 abi_version;	/* == SROCE_UVERBS_ABI_VERSION */
	__u32 flags;		/* SROCE_UCTX_F_* */
	__u32 max_inline_data;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 reserved;
};

/*
 * Where a kernel-owned queue is mapped: mmap(cmd_fd, offset, size).
 * The offset is an rdma_user_mmap_entry cookie; size covers header + slots.
 */
struct sroce_mmap_info {
	__aligned_u64 offset;
	__u32 size;
	__u32 reserved;
};

/*
 * Header of every mmapped ring (SQ, RQ, SRQ, CQ). Producer and consumer
 * indices sit on their own cache lines. Indices are free-running u32
 * counters; slot = index & (num_slots - 1). The kernel never trusts the
 * user-owned index: it keeps a private copy of the index it owns and
 * validates the other one on every read (distance <= num_slots).
 *
 * The slot array starts at SROCE_QUEUE_DATA_OFFSET from the header.
 */
struct sroce_queue_hdr {
	__u32 slot_shift;	/* log2 of the slot size in bytes */
	__u32 num_slots;	/* power of two */
	__u32 flags;
	__u32 reserved0[13];
	__u32 producer;
	__u32 reserved1[15];
	__u32 consumer;
	__u32 reserved2[15];
	__u32 notify;		/* CQ: armed flags (SROCE_CQ_NOTIFY_*) */
	__u32 reserved3[15];
};

#define SROCE_QUEUE_DATA_OFFSET		256

struct sroce_create_cq_resp {
	struct sroce_mmap_info mi;
};

struct sroce_resize_cq_resp {
	struct sroce_mmap_info mi;
};

struct sroce_create_qp_resp {
	struct sroce_mmap_info sq_mi;
	struct sroce_mmap_info rq_mi;	/* size 0 when the QP uses an SRQ */
};

struct sroce_create_srq_resp {
	struct sroce_mmap_info mi;
	__u32 srq_num;
	__u32 reserved;
};

#endif /* SROCE_ABI_H */
