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
	__u32 polling;		/* SQ: the requester will look (below) */
	__u32 reserved0[12];
	__u32 producer;
	__u32 reserved1[15];
	__u32 consumer;
	__u32 reserved2[15];
	__u32 notify;		/* CQ: armed flags (SROCE_CQ_NOTIFY_*) */
	__u32 reserved3[15];
};

#define SROCE_QUEUE_DATA_OFFSET		256

/*
 * sroce_queue_hdr.flags, written by the kernel. SROCE_QUEUE_F_QP_ERR is set
 * on a QP's SQ and RQ when the QP enters the error state. post_recv never
 * enters the kernel, so a receive posted after that would never be flushed:
 * the provider publishes the producer index, issues a full barrier, reads
 * this flag, and if it is set rings the send doorbell, on which the kernel
 * flushes both queues. The kernel sets the flag, issues a full barrier,
 * then flushes, so one side always sees the other.
 */
#define SROCE_QUEUE_F_QP_ERR		(1U << 0)

/*
 * sroce_queue_hdr.polling of a send queue, written by the kernel only:
 * nonzero while its requester runs, is queued to run, or (RC, XRC) waits
 * to send a WQE it fetched (then what ends the wait runs it), and so will
 * read the producer index again without a doorbell. The provider publishes the
 * producer index, issues a full barrier, and leaves the doorbell out when
 * this is nonzero and SROCE_QUEUE_F_QP_ERR is not set. A requester that
 * stops otherwise clears it, issues a full barrier, and reads the producer
 * index once more, so one side always sees the other. A kernel that
 * predates it leaves it 0: a doorbell for every post, as before. Nothing
 * the kernel does depends on its value.
 */

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

/*
 * Response to create_ah (user address handles, for UD). The provider puts
 * ah_num into the "ah" field of every UD send WQE; the kernel looks it up in
 * its own table (and checks it belongs to the QP's PD) when it fetches the
 * WQE, so a stale or forged number only fails that WQE.
 */
struct sroce_create_ah_resp {
	__u32 ah_num;			/* never 0 */
	__u32 reserved;
};

struct sroce_create_srq_resp {
	struct sroce_mmap_info mi;
	__u32 srq_num;
	__u32 reserved;
};

/*
 * Driver data of modify_srq (ibv_cmd_modify_srq's command tail). For a resize
 * (IBV_SRQ_MAX_WR) the kernel moves the posted WQEs to a new ring and writes
 * its struct sroce_mmap_info to the user address mi_addr; the provider maps
 * the new ring and unmaps the old one. mi_addr may be 0 when max_wr is not
 * being changed.
 */
struct sroce_modify_srq_cmd {
	__aligned_u64 mi_addr;
};

/*
 * Data-path formats in the mmapped rings.
 *
 * The send queue is produced by user space and consumed by the kernel, which
 * copies each WQE into kernel memory before it looks at any field and treats
 * every field as untrusted. Same for the receive and shared receive queues.
 * The completion queue is produced by the kernel and consumed by user space.
 */

/* Work request opcodes: the values of enum ib_uverbs_wr_opcode / ibv_wr_opcode. */
enum sroce_wr_opcode {
	SROCE_WR_RDMA_WRITE		= 0,
	SROCE_WR_RDMA_WRITE_WITH_IMM	= 1,
	SROCE_WR_SEND			= 2,
	SROCE_WR_SEND_WITH_IMM		= 3,
	SROCE_WR_RDMA_READ		= 4,
	SROCE_WR_ATOMIC_CMP_AND_SWP	= 5,
	SROCE_WR_ATOMIC_FETCH_AND_ADD	= 6,
	SROCE_WR_LOCAL_INV		= 7,
	SROCE_WR_BIND_MW		= 8,
	SROCE_WR_SEND_WITH_INV		= 9,
	/*
	 * IBTA 1.5 ATOMIC_WRITE (RC, XRC): rkey/remote_addr as for RDMA
	 * WRITE; the 8-byte value is in compare_add, copied byte for byte from
	 * the user's buffer (send it unswapped); no SGEs, no inline data.
	 */
	SROCE_WR_ATOMIC_WRITE		= 15,
	/* Kernel consumers only (IB_WR_REG_MR); never valid in a user ring. */
	SROCE_WR_REG_MR			= 0x20,
};

/*
 * The work request opcode table, as a bit per opcode (SROCE_WR_BIT): which
 * QP types may post each opcode, and what it is. The provider checks a
 * work request against it when it is posted (EINVAL), the kernel when it
 * fetches a WQE from the ring (the WQE completes in error) and on its own
 * post path; both derive every opcode rule from here.
 */
#define SROCE_WR_BIT(op)		(1ULL << (op))
/* UD (and GSI): SENDs, one packet each. */
#define SROCE_WR_UD_OPS		(SROCE_WR_BIT(SROCE_WR_SEND) |		\
				 SROCE_WR_BIT(SROCE_WR_SEND_WITH_IMM))
/* UC: SENDs and WRITEs (no opcode carries an invalidate), local operations. */
#define SROCE_WR_UC_OPS		(SROCE_WR_UD_OPS |				\
				 SROCE_WR_BIT(SROCE_WR_RDMA_WRITE) |		\
				 SROCE_WR_BIT(SROCE_WR_RDMA_WRITE_WITH_IMM) |	\
				 SROCE_WR_LOCAL_OPS)
/* RC and XRC initiators: all of them. */
#define SROCE_WR_RC_OPS		(SROCE_WR_UC_OPS |				\
				 SROCE_WR_BIT(SROCE_WR_SEND_WITH_INV) |	\
				 SROCE_WR_RD_ATOMIC_OPS |			\
				 SROCE_WR_BIT(SROCE_WR_ATOMIC_WRITE))
/* Executed where they are posted, without a packet. */
#define SROCE_WR_LOCAL_OPS	(SROCE_WR_BIT(SROCE_WR_LOCAL_INV) |		\
				 SROCE_WR_BIT(SROCE_WR_BIND_MW) |		\
				 SROCE_WR_BIT(SROCE_WR_REG_MR))
/* Only in the kernel's own rings (a user ring names no MR by index). */
#define SROCE_WR_KERNEL_OPS	SROCE_WR_BIT(SROCE_WR_REG_MR)
/* Atomics: 8 bytes at an 8-byte aligned remote address, the original back. */
#define SROCE_WR_ATOMIC_OPS	(SROCE_WR_BIT(SROCE_WR_ATOMIC_CMP_AND_SWP) |	\
				 SROCE_WR_BIT(SROCE_WR_ATOMIC_FETCH_AND_ADD))
/* Complete with their response, and count against max_rd_atomic. */
#define SROCE_WR_RD_ATOMIC_OPS	(SROCE_WR_BIT(SROCE_WR_RDMA_READ) |		\
				 SROCE_WR_ATOMIC_OPS)
/* Their local data may be inline (SROCE_SEND_INLINE). */
#define SROCE_WR_INLINE_OPS	(SROCE_WR_UD_OPS |				\
				 SROCE_WR_BIT(SROCE_WR_SEND_WITH_INV) |	\
				 SROCE_WR_BIT(SROCE_WR_RDMA_WRITE) |		\
				 SROCE_WR_BIT(SROCE_WR_RDMA_WRITE_WITH_IMM))

/* Is @op one of @ops (an opcode from the ring: any value)? */
static inline int sroce_wr_in(__u32 op, __u64 ops)
{
	return op < 64 && ((ops >> op) & 1);
}

/* Send flags: the values of IBV_SEND_* (and IB_SEND_*). */
#define SROCE_SEND_FENCE		(1U << 0)
#define SROCE_SEND_SIGNALED		(1U << 1)
#define SROCE_SEND_SOLICITED		(1U << 2)
#define SROCE_SEND_INLINE		(1U << 3)

struct sroce_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/*
 * Send WQE: a 64-byte header followed, in the same slot, by num_sge
 * struct sroce_sge or, with SROCE_SEND_INLINE, inline_len bytes of data.
 */
struct sroce_send_wqe {
	__aligned_u64 wr_id;
	__u8 opcode;			/* enum sroce_wr_opcode */
	__u8 flags;			/* SROCE_SEND_* */
	__u16 num_sge;
	__u32 inline_len;
	__u32 imm_or_inv;		/* immediate (network order) or rkey to invalidate */
	__u32 rkey;
	__aligned_u64 remote_addr;
	__aligned_u64 compare_add;	/* atomics: compare (CAS) or add (FAA) */
	__aligned_u64 swap;		/* atomics: swap (CAS) */
	__u32 ah;			/* UD: sroce_create_ah_resp.ah_num */
	__u32 remote_qpn;		/* UD; XRC_SEND: the remote XRC SRQ number */
	__u32 remote_qkey;		/* UD */
	__u32 reserved;
};

#define SROCE_SEND_WQE_HDR_SIZE		64

/* Receive WQE: a 16-byte header followed by num_sge struct sroce_sge. */
struct sroce_recv_wqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
};

/* Completion flags: the values of IBV_WC_* (not IB_WC_*, which differ). */
#define SROCE_WC_F_GRH			(1U << 0)
#define SROCE_WC_F_WITH_IMM		(1U << 1)
#define SROCE_WC_F_IP_CSUM_OK		(1U << 2)
#define SROCE_WC_F_WITH_INV		(1U << 3)

/*
 * A UD receive's sl: what the packet was, as ConnectX reports it for RoCE
 * (which has no SL): RoCEv2 (in UDP), and its IP version.
 */
#define SROCE_WC_SL_ROCEV2		0x8
#define SROCE_WC_SL_IPV6		0x1
#define SROCE_WC_SL_IPV4		0x2

/* IBV_WC_ATOMIC_WRITE: a completion opcode the 6.1 kernel has no name for. */
#define SROCE_WC_ATOMIC_WRITE		9

/*
 * Completion entry. status and opcode use the ibv_wc_status / ibv_wc_opcode
 * numbering (which equals the kernel's ib_wc_status / ib_wc_opcode).
 */
struct sroce_cqe {
	__aligned_u64 wr_id;
	__u32 status;
	__u32 opcode;
	__u32 vendor_err;
	__u32 byte_len;
	__u32 imm_or_inv;		/* immediate (network order) or invalidated rkey */
	__u32 qp_num;
	__u32 src_qp;
	__u32 wc_flags;			/* SROCE_WC_F_* */
	__u16 pkey_index;
	__u16 slid;
	__u8 sl;
	__u8 dlid_path_bits;
	__u8 port_num;
	__u8 network_hdr_type;
	__u8 smac[6];
	__u16 vlan_id;
	__u32 reserved[2];
};

/* CQ notify word in struct sroce_queue_hdr (reserved for a syscall-free arm). */
#define SROCE_CQ_NOTIFY_NEXT		(1U << 0)
#define SROCE_CQ_NOTIFY_SOLICITED	(1U << 1)

#endif /* SROCE_ABI_H */
