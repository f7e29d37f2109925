// SPDX-License-Identifier: GPL-2.0
/*
 * sroce rings: allocation, mapping into user space, release.
 */

#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "sroce.h"
#include "sroce_queue.h"

/* A ring never exceeds this many bytes (bounds every allocation). */
#define SROCE_QUEUE_MAX_BYTES	(64U << 20)

/**
 * sroce_queue_init - allocate a ring of at least @min_slots slots
 * @ibdev: the device, for the debug messages
 * @q: the ring
 * @min_slots: entries the caller must be able to hold
 * @slot_size: bytes per slot, rounded up to a power of two
 *
 * A ring of N slots holds N entries: indices are free running, so full and
 * empty are told apart by their difference, not by a spare slot.
 */
int sroce_queue_init(struct ib_device *ibdev, struct sroce_queue *q,
		     u32 min_slots, u32 slot_size)
{
	u64 bytes;

	memset(q, 0, sizeof(*q));
	if (!min_slots || !slot_size || min_slots > (1U << 24) ||
	    slot_size > (1U << 16)) {
		ibdev_dbg(ibdev, "ring: %u slots of %u bytes: need 1 to %u slots of 1 to %u bytes\n",
			  min_slots, slot_size, 1U << 24, 1U << 16);
		return -EINVAL;
	}
	q->num_slots = roundup_pow_of_two(min_slots);
	q->slot_shift = order_base_2(slot_size);
	bytes = SROCE_QUEUE_DATA_OFFSET +
		((u64)q->num_slots << q->slot_shift);
	if (bytes > SROCE_QUEUE_MAX_BYTES) {
		ibdev_dbg(ibdev, "ring: %u slots of %u bytes: %llu bytes > %u\n",
			  q->num_slots, 1U << q->slot_shift, bytes,
			  SROCE_QUEUE_MAX_BYTES);
		return -ENOMEM;
	}
	q->size = PAGE_ALIGN(bytes);
	/* Charged to the caller's memory cgroup (see SROCE_GFP_USER). */
	q->hdr = __vmalloc(q->size, SROCE_GFP_USER | __GFP_ZERO);
	if (!q->hdr) {
		/* __GFP_NOWARN: nothing else says why (a memory cgroup limit?). */
		ibdev_dbg(ibdev, "ring: cannot allocate %zu bytes (charged to the caller's memory cgroup)\n",
			  q->size);
		return -ENOMEM;
	}
	q->slots = (u8 *)q->hdr + SROCE_QUEUE_DATA_OFFSET;
	q->hdr->slot_shift = q->slot_shift;
	q->hdr->num_slots = q->num_slots;
	return 0;
}

/*
 * Pages mapped into a process hold their own references (vm_insert_page),
 * so the ring memory can be freed while a mapping still exists; the process
 * just keeps a detached copy. A ring that can be mapped belongs to its mmap
 * entry, though: an mmap() in progress holds the entry, not the ring, and
 * must not find the memory gone (sroce_mmap_free() frees it).
 */
void sroce_queue_cleanup(struct sroce_queue *q)
{
	if (q->mentry)
		rdma_user_mmap_entry_remove(&q->mentry->rdma);
	else
		vfree(q->hdr);
	q->mentry = NULL;
	q->hdr = NULL;
}

/**
 * sroce_queue_map - make the ring mappable by @uctx's process
 * @q: the ring
 * @uctx: the user context
 * @mi: filled with the mmap offset and size for the provider
 */
int sroce_queue_map(struct sroce_queue *q, struct ib_ucontext *uctx,
		    struct sroce_mmap_info *mi)
{
	struct sroce_mmap_entry *e;
	int err;

	e = kzalloc(sizeof(*e), SROCE_GFP_USER);
	if (!e)
		return -ENOMEM;
	e->addr = q->hdr;
	e->size = q->size;
	err = rdma_user_mmap_entry_insert(uctx, &e->rdma, q->size);
	if (err) {
		ibdev_dbg(uctx->device, "ring: no mmap offset for %zu bytes: %d\n",
			  q->size, err);
		kfree(e);
		return err;
	}
	q->mentry = e;
	mi->offset = rdma_user_mmap_get_offset(&e->rdma);
	mi->size = q->size;
	mi->reserved = 0;
	return 0;
}

int sroce_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *re;
	struct sroce_mmap_entry *e;
	unsigned long off;
	int err = 0;

	/* A private mapping would silently detach the process from the ring. */
	if (!(vma->vm_flags & VM_SHARED)) {
		ibdev_dbg(uctx->device, "mmap: offset 0x%lx: a ring must be mapped MAP_SHARED\n",
			  vma->vm_pgoff << PAGE_SHIFT);
		return -EINVAL;
	}
	re = rdma_user_mmap_entry_get(uctx, vma);
	if (!re) {
		ibdev_dbg(uctx->device, "mmap: no ring at offset 0x%lx with length %lu\n",
			  vma->vm_pgoff << PAGE_SHIFT,
			  vma->vm_end - vma->vm_start);
		return -EINVAL;
	}
	e = container_of(re, struct sroce_mmap_entry, rdma);
	/* The core matched the length to the entry's; checked again anyway. */
	if (vma->vm_end - vma->vm_start > e->size) {
		ibdev_dbg(uctx->device, "mmap: length %lu > ring size %zu\n",
			  vma->vm_end - vma->vm_start, e->size);
		err = -EINVAL;
		goto out;
	}
	/*
	 * The ring's own pages, one by one (remap_vmalloc_range() would do the
	 * same, but only for vmalloc_user() memory, which is not accounted).
	 */
	for (off = 0; off < vma->vm_end - vma->vm_start; off += PAGE_SIZE) {
		err = vm_insert_page(vma, vma->vm_start + off,
				     vmalloc_to_page((u8 *)e->addr + off));
		if (err) {
			ibdev_dbg(uctx->device, "mmap: inserting page %lu of the ring failed: %d\n",
				  off >> PAGE_SHIFT, err);
			goto out;
		}
	}
	sroce_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
out:
	rdma_user_mmap_entry_put(re);
	return err;
}

/* The last reference to a removed entry is gone: free the ring it owned. */
void sroce_mmap_free(struct rdma_user_mmap_entry *re)
{
	struct sroce_mmap_entry *e = container_of(re, struct sroce_mmap_entry,
						  rdma);

	vfree(e->addr);
	kfree(e);
}

/**
 * sroce_queue_post_recv - write kernel receive WRs into a receive ring
 * @q: a QP's RQ or an SRQ (not mapped: kernel consumers only)
 * @max_sge: SGEs a WQE may carry
 * @wr: the chain
 * @bad_wr: set to the first WR not posted
 *
 * The caller serialises producers. Return: 0, -ENOMEM (ring full) or
 * -EINVAL (too many SGEs).
 */
int sroce_queue_post_recv(struct sroce_queue *q, u32 max_sge,
			  const struct ib_recv_wr *wr,
			  const struct ib_recv_wr **bad_wr)
{
	for (; wr; wr = wr->next) {
		u32 prod = q->hdr->producer;
		struct sroce_recv_wqe *w;
		struct sroce_sge *sge;
		int err = 0;
		u32 i;

		if (prod - READ_ONCE(q->hdr->consumer) >= q->num_slots)
			err = -ENOMEM;
		else if (wr->num_sge > max_sge)
			err = -EINVAL;
		if (err) {
			*bad_wr = wr;
			return err;
		}
		w = sroce_queue_slot(q, prod);
		w->wr_id = wr->wr_id;
		w->num_sge = wr->num_sge;
		w->reserved = 0;
		sge = (void *)(w + 1);
		for (i = 0; i < wr->num_sge; i++) {
			sge[i].addr = wr->sg_list[i].addr;
			sge[i].length = wr->sg_list[i].length;
			sge[i].lkey = wr->sg_list[i].lkey;
		}
		/* Publish the WQE before a responder can see the index. */
		smp_store_release(&q->hdr->producer, prod + 1);
	}
	return 0;
}
