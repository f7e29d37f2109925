// SPDX-License-Identifier: GPL-2.0
/*
 * sroce memory regions: registration, key lookup, access checks, copies.
 */

#include <linux/highmem.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>

#include "sroce.h"
#include "sroce_mr.h"
#include "sroce_param.h"
#include "proto/sroce_range.h"

#define SROCE_MR_ACCESS_SUPPORTED (IB_ACCESS_LOCAL_WRITE | \
				   IB_ACCESS_REMOTE_WRITE | \
				   IB_ACCESS_REMOTE_READ | \
				   IB_ACCESS_REMOTE_ATOMIC | \
				   IB_ACCESS_MW_BIND | \
				   IB_ACCESS_RELAXED_ORDERING)

/*
 * Give @mr (an MR or a window's entry) a key: an index and a key byte. The
 * byte is random, so a key cannot be guessed from the keys a process sees
 * (indexes are handed out in order).
 */
int sroce_mr_add(struct sroce_dev *sdev, struct sroce_mr *mr)
{
	static struct lock_class_key sroce_mw_lock_key;
	u32 index;
	u8 key;
	int err;

	refcount_set(&mr->ref, 1);
	init_completion(&mr->released);
	spin_lock_init(&mr->lock);
	/*
	 * A window's lock is taken before the lock of the MR it is bound to
	 * (sroce_mw_bind(), sroce_mw_unbind()), never the other way round:
	 * a class of its own tells lockdep so (one class for both reported
	 * "possible recursive locking" on every bind to an MR).
	 */
	if (mr->type == SROCE_MR_MW)
		lockdep_set_class(&mr->lock, &sroce_mw_lock_key);
	err = xa_alloc_cyclic(&sdev->mr_xa, &index, mr,
			      XA_LIMIT(1, SROCE_MAX_MR), &sdev->mr_next, GFP_KERNEL);
	if (err == -EBUSY)
		ibdev_dbg(&sdev->ib_dev, "mr_add: the device already has %u MRs and memory windows\n",
			  SROCE_MAX_MR);
	if (err < 0)
		return err == -EBUSY ? -ENOMEM : err;
	key = get_random_u8();
	mr->ibmr.lkey = index << 8 | key;
	mr->ibmr.rkey = mr->ibmr.lkey;
	/* Published by xa_alloc above; readers also check @valid. */
	WRITE_ONCE(mr->key, mr->ibmr.lkey);
	return 0;
}

/**
 * sroce_mr_get - look up an MR by lkey or rkey and take a reference
 * @sdev: the device
 * @key: the key from a WQE or a packet (untrusted)
 *
 * Return: the MR or NULL. Release with sroce_mr_put().
 */
struct sroce_mr *sroce_mr_get(struct sroce_dev *sdev, u32 key)
{
	struct sroce_mr *mr;

	rcu_read_lock();
	mr = xa_load(&sdev->mr_xa, key >> 8);
	if (mr && (READ_ONCE(mr->key) != key || !READ_ONCE(mr->valid) ||
		   !refcount_inc_not_zero(&mr->ref)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

/* Look an MR up by index alone (REG_MR names its MR that way). */
struct sroce_mr *sroce_mr_get_index(struct sroce_dev *sdev, u32 index)
{
	struct sroce_mr *mr;

	rcu_read_lock();
	mr = xa_load(&sdev->mr_xa, index);
	if (mr && !refcount_inc_not_zero(&mr->ref))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

/**
 * sroce_mr_fast_reg - execute IB_WR_REG_MR: make @key valid on @mr
 * @mr: a fast-reg MR whose pages were set by ib_map_mr_sg()
 * @pd: the posting QP's PD
 * @key: the new key (same index, new low byte)
 * @access: IB_ACCESS_* for the registration
 *
 * Return: 0 or an ib_wc_status.
 */
int sroce_mr_fast_reg(struct sroce_mr *mr, struct ib_pd *pd, u32 key,
		      int access)
{
	if (mr->type != SROCE_MR_FAST || mr->ibmr.pd != pd ||
	    (key >> 8) != (mr->ibmr.lkey >> 8) || READ_ONCE(mr->valid) ||
	    (access & ~SROCE_MR_ACCESS_SUPPORTED))
		return IB_WC_LOC_QP_OP_ERR;
	mr->access = access | IB_ACCESS_LOCAL_WRITE;
	mr->iova = mr->ibmr.iova;
	mr->length = mr->ibmr.length;
	mr->first_offset = mr->iova & ((1ULL << mr->fpage_shift) - 1);
	WRITE_ONCE(mr->key, key);
	/* Everything above is visible before the key works. */
	smp_store_release(&mr->valid, true);
	return 0;
}

/**
 * sroce_mr_invalidate - LOCAL_INV or remote invalidation of @key
 * @sdev: the device
 * @pd: the PD the MR or window must belong to
 * @qpn: the QP that asks (a type 2 window is remotely invalidated only
 *	 through the QP it was bound through)
 * @key: the key to invalidate (untrusted)
 * @remote: SEND with Invalidate from the peer, not a local LOCAL_INV
 *
 * Return: 0, or -EINVAL if @key does not name a valid fast-reg MR or type 2
 * window of @pd.
 */
int sroce_mr_invalidate(struct sroce_dev *sdev, struct ib_pd *pd, u32 qpn,
			u32 key, bool remote)
{
	struct sroce_mr *mr = sroce_mr_get(sdev, key);
	int err = 0;

	if (!mr)
		return -EINVAL;
	if (mr->type == SROCE_MR_MW)
		err = sroce_mw_invalidate(mr, pd, qpn, remote);
	else if (mr->type != SROCE_MR_FAST || mr->ibmr.pd != pd)
		err = -EINVAL;
	else
		WRITE_ONCE(mr->valid, false);
	sroce_mr_put(mr);
	return err;
}

void sroce_mr_put(struct sroce_mr *mr)
{
	if (refcount_dec_and_test(&mr->ref))
		complete(&mr->released);
}

/*
 * sroce_mr_check - may @pd access [@va, @va + @len) of @mr with @access?
 *
 * Return: 0, -EACCES for a PD or permission mismatch, -ERANGE when the
 * range is not inside the MR.
 */
int sroce_mr_check(struct sroce_mr *mr, struct ib_pd *pd, u64 va, u64 len,
		   int access)
{
	if (mr->ibmr.pd != pd)
		return -EACCES;
	if ((READ_ONCE(mr->access) & access) != access)
		return -EACCES;
	if (mr->type == SROCE_MR_DMA)
		return 0;
	if (!sroce_range_within(mr->iova, mr->length, va, len))
		return -ERANGE;
	return 0;
}

/**
 * sroce_mr_get_remote - resolve an rkey for a remote access
 * @sdev: the device
 * @pd: the PD of the QP the request came in on
 * @qpn: that QP's number
 * @rkey: the R_Key from the packet (untrusted)
 * @va: first byte of the access
 * @len: bytes
 * @access: IB_ACCESS_REMOTE_* the access needs
 *
 * An rkey names an MR or a memory window. For a window, the window's PD,
 * QP (type 2), rights and bounds are checked, and the MR it is bound to is
 * returned: @va is an address in that MR, which contains the window.
 *
 * Return: an MR with a reference (sroce_mr_put()) or NULL.
 */
struct sroce_mr *sroce_mr_get_remote(struct sroce_dev *sdev, struct ib_pd *pd,
				     u32 qpn, u32 rkey, u64 va, u64 len,
				     int access)
{
	struct sroce_mr *mr = sroce_mr_get(sdev, rkey), *bound = NULL;
	unsigned long flags;

	if (!mr)
		return NULL;
	if (mr->type != SROCE_MR_MW) {
		if (!sroce_mr_check(mr, pd, va, len, access))
			return mr;
		sroce_mr_put(mr);
		return NULL;
	}
	spin_lock_irqsave(&mr->lock, flags);
	if (mr->valid && mr->key == rkey && mr->mw_mr &&
	    (mr->mw_type != IB_MW_TYPE_2 || mr->mw_qpn == qpn) &&
	    !sroce_mr_check(mr, pd, va, len, access)) {
		bound = mr->mw_mr;
		/* The window holds a reference: this one cannot be the last. */
		refcount_inc(&bound->ref);
	}
	spin_unlock_irqrestore(&mr->lock, flags);
	sroce_mr_put(mr);
	return bound;
}

/**
 * sroce_mr_copy - copy between a buffer and MR memory
 * @mr: a checked MR (sroce_mr_check() passed for this range)
 * @va: address in the MR's address space
 * @buf: kernel buffer
 * @len: bytes
 * @dir: SROCE_TO_MR or SROCE_FROM_MR
 */
int sroce_mr_copy(struct sroce_mr *mr, u64 va, void *buf, u32 len,
		  enum sroce_copy_dir dir)
{
	u64 pos;
	u8 *p = buf;

	if (!len)
		return 0;
	if (mr->type == SROCE_MR_DMA) {
		void *addr = (void *)(uintptr_t)va;

		if (dir == SROCE_TO_MR)
			memcpy(addr, buf, len);
		else
			memcpy(buf, addr, len);
		return 0;
	}
	if (mr->type == SROCE_MR_FAST) {
		u64 psize = 1ULL << mr->fpage_shift;

		pos = va - mr->iova + mr->first_offset;
		while (len) {
			u64 idx = pos >> mr->fpage_shift;
			u32 off = pos & (psize - 1);
			u32 n = min_t(u64, len, psize - off);
			void *addr;

			if (WARN_ON_ONCE(idx >= mr->nfpages))
				return -EFAULT;
			addr = (void *)(uintptr_t)(mr->fpages[idx] + off);
			if (dir == SROCE_TO_MR)
				memcpy(addr, p, n);
			else
				memcpy(p, addr, n);
			p += n;
			pos += n;
			len -= n;
		}
		return 0;
	}

	pos = va - mr->iova + mr->first_offset;
	while (len) {
		u32 idx = pos >> PAGE_SHIFT;
		u32 off = pos & ~PAGE_MASK;
		u32 n = min_t(u32, len, PAGE_SIZE - off);
		void *kaddr;

		if (WARN_ON_ONCE(idx >= mr->npages))
			return -EFAULT;
		kaddr = kmap_local_page(mr->pages[idx]);
		if (dir == SROCE_TO_MR)
			memcpy(kaddr + off, p, n);
		else
			memcpy(p, kaddr + off, n);
		kunmap_local(kaddr);
		p += n;
		pos += n;
		len -= n;
	}
	return 0;
}

/**
 * sroce_sge_copy - copy between a buffer and the memory an SGE list names
 * @sdev: the device whose lkeys the list uses
 * @pd: the PD every MR must belong to
 * @sge: the SGE list (a kernel copy; lengths and keys are untrusted)
 * @nsge: entries in @sge
 * @off: byte offset into the list where the copy starts
 * @buf: kernel buffer
 * @len: bytes to copy
 * @dir: SROCE_TO_MR or SROCE_FROM_MR
 * @access: IB_ACCESS_* every MR must grant
 * @copied: if not NULL, incremented by the bytes copied, also on failure
 *
 * Return: 0, IB_WC_LOC_PROT_ERR for a bad key, PD, access or range, or
 * IB_WC_LOC_LEN_ERR when the list is shorter than @off + @len.
 */
int sroce_sge_copy(struct sroce_dev *sdev, struct ib_pd *pd,
		   const struct sroce_sge *sge, u32 nsge, u32 off, void *buf,
		   u32 len, enum sroce_copy_dir dir, int access, u32 *copied)
{
	u8 *p = buf;
	u32 i;

	for (i = 0; i < nsge && len; i++) {
		struct sroce_mr *mr;
		u32 n;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - off);
		mr = sroce_mr_get(sdev, sge[i].lkey);
		if (!mr)
			return IB_WC_LOC_PROT_ERR;
		/* A window's key is an R_Key only. */
		if (mr->type == SROCE_MR_MW ||
		    sroce_mr_check(mr, pd, sge[i].addr + off, n, access)) {
			sroce_mr_put(mr);
			return IB_WC_LOC_PROT_ERR;
		}
		sroce_mr_copy(mr, sge[i].addr + off, p, n, dir);
		sroce_mr_put(mr);
		p += n;
		len -= n;
		if (copied)
			*copied += n;
		off = 0;
	}
	return len ? IB_WC_LOC_LEN_ERR : 0;
}

/*
 * Address of the naturally aligned u64 at @va for an atomic operation. The
 * caller checked alignment, so the operand never straddles a page. For a
 * user MR the page is returned in @pagep to be kunmap_local()ed.
 */
u64 *sroce_mr_atomic_ptr(struct sroce_mr *mr, u64 va, struct page **pagep)
{
	u64 pos;
	u32 idx;

	*pagep = NULL;
	if (mr->type == SROCE_MR_DMA)
		return (u64 *)(uintptr_t)va;
	if (mr->type == SROCE_MR_FAST) {
		pos = va - mr->iova + mr->first_offset;
		idx = pos >> mr->fpage_shift;
		if (WARN_ON_ONCE(idx >= mr->nfpages))
			return NULL;
		return (u64 *)(uintptr_t)(mr->fpages[idx] +
			(pos & ((1ULL << mr->fpage_shift) - 1)));
	}
	pos = va - mr->iova + mr->first_offset;
	idx = pos >> PAGE_SHIFT;
	if (WARN_ON_ONCE(idx >= mr->npages))
		return NULL;
	*pagep = mr->pages[idx];
	return kmap_local_page(*pagep) + (pos & ~PAGE_MASK);
}

struct ib_mr *sroce_get_dma_mr(struct ib_pd *pd, int access)
{
	struct sroce_dev *sdev = to_sdev(pd->device);
	struct sroce_mr *mr;
	int err;

	if (access & ~SROCE_MR_ACCESS_SUPPORTED) {
		ibdev_dbg(pd->device, "get_dma_mr: access flags 0x%x not supported\n",
			  access & ~SROCE_MR_ACCESS_SUPPORTED);
		return ERR_PTR(-EOPNOTSUPP);
	}
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->type = SROCE_MR_DMA;
	mr->valid = true;
	mr->access = access | IB_ACCESS_LOCAL_WRITE;
	mr->length = U64_MAX;
	mr->ibmr.pd = pd;
	err = sroce_mr_add(sdev, mr);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

struct ib_mr *sroce_alloc_mr(struct ib_pd *pd, enum ib_mr_type type,
			     u32 max_num_sg)
{
	struct sroce_dev *sdev = to_sdev(pd->device);
	struct sroce_mr *mr;
	int err;

	if (type != IB_MR_TYPE_MEM_REG) {
		ibdev_dbg(pd->device, "alloc_mr: MR type %d not supported, only IB_MR_TYPE_MEM_REG\n",
			  type);
		return ERR_PTR(-EINVAL);
	}
	if (!max_num_sg || max_num_sg > SROCE_MAX_FAST_REG_PAGES) {
		ibdev_dbg(pd->device, "alloc_mr: max_num_sg %u not in [1, %u]\n",
			  max_num_sg, SROCE_MAX_FAST_REG_PAGES);
		return ERR_PTR(-EINVAL);
	}
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->fpages = kcalloc(max_num_sg, sizeof(*mr->fpages), GFP_KERNEL);
	if (!mr->fpages) {
		err = -ENOMEM;
		goto err_free;
	}
	mr->type = SROCE_MR_FAST;
	mr->max_fpages = max_num_sg;
	mr->fpage_shift = PAGE_SHIFT;
	mr->ibmr.pd = pd;
	err = sroce_mr_add(sdev, mr);
	if (err)
		goto err_free;
	/* Not usable until an IB_WR_REG_MR makes a key valid. */
	return &mr->ibmr;

err_free:
	kfree(mr->fpages);
	kfree(mr);
	return ERR_PTR(err);
}

static int sroce_mr_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct sroce_mr *mr = to_smr(ibmr);

	if (mr->nfpages >= mr->max_fpages)
		return -ENOMEM;
	mr->fpages[mr->nfpages++] = addr;
	return 0;
}

int sroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct sroce_mr *mr = to_smr(ibmr);

	/* The page size is the caller's (ib_map_mr_sg sets it first). */
	if (!is_power_of_2(ibmr->page_size) || ibmr->page_size < SZ_4K) {
		ibdev_dbg(ibmr->device, "map_mr_sg: page size %u is not a power of 2 of at least 4096\n",
			  ibmr->page_size);
		return -EINVAL;
	}
	mr->fpage_shift = ilog2(ibmr->page_size);
	mr->nfpages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset,
			      sroce_mr_set_page);
}

static int sroce_mr_collect_pages(struct sroce_mr *mr)
{
	struct sg_page_iter piter;
	size_t n = ib_umem_num_pages(mr->umem);
	u32 i = 0;

	if (n > U32_MAX) {
		ibdev_dbg(mr->ibmr.pd->device, "reg_user_mr: %zu pages > %u\n",
			  n, U32_MAX);
		return -EINVAL;
	}
	mr->pages = kvmalloc_array(n, sizeof(*mr->pages), SROCE_GFP_USER);
	if (!mr->pages) {
		/* __GFP_NOWARN: nothing else says why (a memory cgroup limit?). */
		ibdev_dbg(mr->ibmr.pd->device, "reg_user_mr: cannot allocate the list of %zu pages (charged to the caller's memory cgroup)\n",
			  n);
		return -ENOMEM;
	}
	for_each_sgtable_page(&mr->umem->sgt_append.sgt, &piter, 0) {
		if (WARN_ON_ONCE(i >= n))
			break;
		mr->pages[i++] = sg_page_iter_page(&piter);
	}
	mr->npages = i;
	return 0;
}

struct ib_mr *sroce_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(pd->device);
	struct sroce_mr *mr;
	int err;

	if (access & ~SROCE_MR_ACCESS_SUPPORTED) {
		ibdev_dbg(pd->device, "reg_user_mr: access flags 0x%x not supported\n",
			  access & ~SROCE_MR_ACCESS_SUPPORTED);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!length || length > SROCE_MAX_MR_SIZE) {
		ibdev_dbg(pd->device, "reg_user_mr: length %llu not in [1, %llu]\n",
			  length, SROCE_MAX_MR_SIZE);
		return ERR_PTR(-EINVAL);
	}
	/* Same page offset, or the page arithmetic below would be wrong. */
	if ((start ^ iova) & ~PAGE_MASK) {
		ibdev_dbg(pd->device, "reg_user_mr: start 0x%llx and iova 0x%llx have different offsets in their page\n",
			  start, iova);
		return ERR_PTR(-EINVAL);
	}

	mr = kzalloc(sizeof(*mr), SROCE_GFP_USER);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->umem = ib_umem_get_va(pd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		/* -ENOMEM here is often RLIMIT_MEMLOCK (ulimit -l). */
		ibdev_dbg(pd->device, "reg_user_mr: pinning %llu bytes at 0x%llx failed: %d\n",
			  length, start, err);
		goto err_free;
	}
	mr->type = SROCE_MR_USER;
	mr->valid = true;
	mr->access = access;
	mr->iova = iova;
	mr->length = length;
	mr->first_offset = ib_umem_offset(mr->umem);
	mr->ibmr.pd = pd;
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;
	err = sroce_mr_collect_pages(mr);
	if (err)
		goto err_umem;
	err = sroce_mr_add(sdev, mr);
	if (err)
		goto err_pages;
	return &mr->ibmr;

err_pages:
	kvfree(mr->pages);
err_umem:
	ib_umem_release(mr->umem);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

/*
 * sroce_rereg_user_mr - ibv_rereg_mr()
 *
 * A new PD or new rights change the MR in place (the core switches
 * ibmr.pd; the data path reads @access once per check). A new translation,
 * or write rights on pages pinned read-only, means pinning again: a new MR
 * with new keys, which the core swaps in for this one and then deregisters
 * this one. IBTA: not while windows are bound.
 */
struct ib_mr *sroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *pd, struct ib_udata *udata)
{
	struct sroce_mr *mr = to_smr(ibmr);
	struct ib_mr *new_mr;
	unsigned long irqf;

	if (mr->type != SROCE_MR_USER) {
		ibdev_dbg(ibmr->device, "rereg_user_mr: MR 0x%x is not a user MR\n",
			  ibmr->lkey);
		return ERR_PTR(-EINVAL);
	}
	if ((flags & IB_MR_REREG_ACCESS) &&
	    (access & ~SROCE_MR_ACCESS_SUPPORTED)) {
		ibdev_dbg(ibmr->device, "rereg_user_mr: access flags 0x%x not supported\n",
			  access & ~SROCE_MR_ACCESS_SUPPORTED);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!(flags & IB_MR_REREG_ACCESS))
		access = mr->access;

	spin_lock_irqsave(&mr->lock, irqf);
	if (mr->num_mw) {
		u32 num_mw = mr->num_mw;

		spin_unlock_irqrestore(&mr->lock, irqf);
		ibdev_dbg(ibmr->device, "rereg_user_mr: MR 0x%x has %u memory windows bound to it\n",
			  ibmr->lkey, num_mw);
		return ERR_PTR(-EBUSY);
	}
	/*
	 * New rights on the same pages, unless they add writing to pages that
	 * were pinned for reading only (from 6.2 on ib_umem_get() pins a
	 * read-only MR without FOLL_WRITE: page cache pages of a file the
	 * process may not write). Those must be pinned again, for writing,
	 * which fails where the process may not write.
	 */
	if (!(flags & IB_MR_REREG_TRANS) &&
	    (mr->umem->writable || !ib_access_writable(access))) {
		WRITE_ONCE(mr->access, access);
		spin_unlock_irqrestore(&mr->lock, irqf);
		return NULL;
	}
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = mr->umem->address;
		length = mr->umem->length;
		iova = mr->iova;
	}
	/* No window may bind to the MR that is about to be replaced. */
	mr->dead = true;
	spin_unlock_irqrestore(&mr->lock, irqf);

	new_mr = sroce_reg_user_mr(pd, start, length, iova, access, udata);
	if (IS_ERR(new_mr)) {
		spin_lock_irqsave(&mr->lock, irqf);
		mr->dead = false;
		spin_unlock_irqrestore(&mr->lock, irqf);
	}
	return new_mr;
}

int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibmr->device);
	struct sroce_mr *mr = to_smr(ibmr);
	unsigned long flags;

	/* IBTA: an MR with windows bound to it cannot be deregistered. */
	spin_lock_irqsave(&mr->lock, flags);
	if (mr->num_mw) {
		u32 num_mw = mr->num_mw;

		spin_unlock_irqrestore(&mr->lock, flags);
		ibdev_dbg(ibmr->device, "dereg_mr: MR 0x%x has %u memory windows bound to it\n",
			  ibmr->lkey, num_mw);
		return -EBUSY;
	}
	mr->dead = true;
	spin_unlock_irqrestore(&mr->lock, flags);

	/* No new lookups, then wait for the data path to let go. */
	xa_erase(&sdev->mr_xa, ibmr->lkey >> 8);
	sroce_mr_put(mr);
	wait_for_completion(&mr->released);

	if (mr->umem) {
		kvfree(mr->pages);
		ib_umem_release(mr->umem);
	}
	kfree(mr->fpages);
	kfree_rcu(mr, rcu);
	return 0;
}
