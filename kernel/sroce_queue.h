/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Rings shared with user space (SQ, RQ, SRQ, CQ) and their kernel twins.
 *
 * Memory is vmalloc()ed (header + slots), charged to the creator's memory
 * cgroup, and mapped into the process through an rdma_user_mmap_entry.
 * Kernel consumers get the same layout, unmapped, so there is one code path.
 *
 * The shared header is writable by the process at any time, so the kernel
 * keeps a private copy of the index it owns (@kidx) and only ever *reads*
 * the other side's index, validating it on every read: a producer index
 * more than num_slots ahead of the kernel's consumer, or a consumer index
 * that moved past the kernel's producer, is corruption and is reported as
 * such (the caller moves the QP or CQ to error); it never leads to an access
 * outside the ring.
 */
#ifndef SROCE_QUEUE_H
#define SROCE_QUEUE_H

#include <linux/types.h>
#include <rdma/ib_verbs.h>

#include "../include/sroce-abi.h"

struct sroce_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	void *addr;
	size_t size;
};

struct sroce_queue {
	struct sroce_queue_hdr *hdr;
	u8 *slots;
	u32 num_slots;		/* power of two */
	u32 slot_shift;		/* log2 of slot size */
	u32 kidx;		/* the index the kernel owns, private copy */
	size_t size;		/* bytes allocated (page multiple) */
	struct sroce_mmap_entry *mentry;	/* NULL when not mapped */
};

int sroce_queue_init(struct ib_device *ibdev, struct sroce_queue *q,
		     u32 min_slots, u32 slot_size);
void sroce_queue_cleanup(struct sroce_queue *q);
int sroce_queue_map(struct sroce_queue *q, struct ib_ucontext *uctx,
		    struct sroce_mmap_info *mi);
int sroce_queue_post_recv(struct sroce_queue *q, u32 max_sge,
			  const struct ib_recv_wr *wr,
			  const struct ib_recv_wr **bad_wr);

static inline void *sroce_queue_slot(const struct sroce_queue *q, u32 idx)
{
	return q->slots + ((size_t)(idx & (q->num_slots - 1)) << q->slot_shift);
}

static inline u32 sroce_queue_slot_size(const struct sroce_queue *q)
{
	return 1U << q->slot_shift;
}

/*
 * Consumer side (kernel consumes SQ/RQ/SRQ): number of entries the other
 * side has produced and the kernel has not consumed, or -EOVERFLOW if the
 * shared producer index is not plausible.
 */
static inline int sroce_queue_count_produced(struct sroce_queue *q)
{
	/* Acquire: the entries are read only after the index. */
	u32 prod = smp_load_acquire(&q->hdr->producer);
	u32 n = prod - q->kidx;

	if (n > q->num_slots)
		return -EOVERFLOW;
	return n;
}

/* Publish the kernel's consumer index (after the entries were copied). */
static inline void sroce_queue_publish_consumer(struct sroce_queue *q)
{
	/* Release: our reads of the slots happen before the producer reuses them. */
	smp_store_release(&q->hdr->consumer, q->kidx);
}

/*
 * Producer side (kernel produces CQEs): free slots, or -EOVERFLOW if the
 * shared consumer index is not plausible.
 */
static inline int sroce_queue_count_free(struct sroce_queue *q)
{
	/* Acquire: the consumer is done with the slots before we reuse them. */
	u32 cons = smp_load_acquire(&q->hdr->consumer);
	u32 used = q->kidx - cons;

	if (used > q->num_slots)
		return -EOVERFLOW;
	return q->num_slots - used;
}

static inline void sroce_queue_publish_producer(struct sroce_queue *q)
{
	/* Release: the entries are visible before the index that covers them. */
	smp_store_release(&q->hdr->producer, q->kidx);
}

#endif /* SROCE_QUEUE_H */
