/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Memory regions.
 *
 * Keys: lkey == rkey == index << 8 | key, with index from the device's
 * xarray and an 8-bit key that changes every time an index is reused, so a
 * stale key fails the lookup. The data path looks keys up under RCU and
 * holds a reference while it copies; deregistration waits for those
 * references before the pages are unpinned.
 */
#ifndef SROCE_MR_H
#define SROCE_MR_H

#include <linux/completion.h>
#include <linux/refcount.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

enum sroce_mr_type {
	SROCE_MR_DMA,		/* kernel virtual addresses, all memory */
	SROCE_MR_USER,		/* pinned user pages */
	SROCE_MR_FAST,		/* kernel fast-registration (IB_WR_REG_MR) */
	SROCE_MR_MW,		/* a memory window (sroce_mw.c) */
};

/*
 * Keys. The key that finds an MR is @key, not ibmr.lkey: a fast-reg MR's
 * owner changes ibmr.lkey/rkey (ib_update_fast_reg_key) before it posts
 * the REG_MR that makes the new key valid, so the data path uses @key and
 * @valid, which only the requester (REG_MR, LOCAL_INV) and the responder
 * (remote invalidation) change.
 */
struct sroce_mr {
	struct ib_mr ibmr;
	enum sroce_mr_type type;
	u32 key;		/* the key that is valid now */
	bool valid;		/* fast-reg: registered and not invalidated */
	int access;		/* IB_ACCESS_* */
	/* fast-reg: page addresses (kernel virtual, virt DMA) */
	u64 *fpages;
	u32 max_fpages;
	u32 nfpages;
	u32 fpage_shift;
	u64 iova;
	u64 length;
	struct ib_umem *umem;
	struct page **pages;	/* pinned pages, in order */
	u32 npages;
	u32 first_offset;	/* offset of iova inside pages[0] */
	refcount_t ref;		/* 1 while registered + data-path users */
	struct completion released;
	struct rcu_head rcu;
	/*
	 * Memory windows. A window is an entry of this type in the same key
	 * table, so MR and MW keys never collide; @iova, @length and @access
	 * describe the window, @mw_mr is the MR it is bound to (holding a
	 * reference on it and counting in its @num_mw). @lock guards the
	 * binding and @dead; on an MR it guards @num_mw and @dead, so a bind
	 * and a deregistration cannot cross.
	 */
	spinlock_t lock;
	bool dead;		/* being freed: no new binding */
	u8 mw_type;		/* IB_MW_TYPE_1 or IB_MW_TYPE_2 */
	u32 mw_qpn;		/* type 2: the QP it was bound through */
	struct sroce_mr *mw_mr;
	u32 num_mw;		/* MR: windows bound to it */
};

static inline struct sroce_mr *to_smr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct sroce_mr, ibmr);
}

struct sroce_dev;

struct sroce_mr *sroce_mr_get(struct sroce_dev *sdev, u32 key);
void sroce_mr_put(struct sroce_mr *mr);
int sroce_mr_check(struct sroce_mr *mr, struct ib_pd *pd, u64 va, u64 len,
		   int access);

enum sroce_copy_dir {
	SROCE_TO_MR,
	SROCE_FROM_MR,
};

int sroce_mr_copy(struct sroce_mr *mr, u64 va, void *buf, u32 len,
		  enum sroce_copy_dir dir);
struct sroce_sge;
int sroce_sge_copy(struct sroce_dev *sdev, struct ib_pd *pd,
		   const struct sroce_sge *sge, u32 nsge, u32 off, void *buf,
		   u32 len, enum sroce_copy_dir dir, int access, u32 *copied);
u64 *sroce_mr_atomic_ptr(struct sroce_mr *mr, u64 va, struct page **pagep);

struct sroce_mr *sroce_mr_get_index(struct sroce_dev *sdev, u32 index);
int sroce_mr_fast_reg(struct sroce_mr *mr, struct ib_pd *pd, u32 key,
		      int access);
int sroce_mr_invalidate(struct sroce_dev *sdev, struct ib_pd *pd, u32 qpn,
			u32 key, bool remote);
int sroce_mr_add(struct sroce_dev *sdev, struct sroce_mr *mr);
struct sroce_mr *sroce_mr_get_remote(struct sroce_dev *sdev, struct ib_pd *pd,
				     u32 qpn, u32 rkey, u64 va, u64 len,
				     int access);

/* Memory windows (sroce_mw.c). */
struct sroce_mw {
	struct ib_mw ibmw;
	struct sroce_mr *ent;	/* its entry in the key table */
};

struct sroce_send_wqe;
int sroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int sroce_dealloc_mw(struct ib_mw *ibmw);
int sroce_mw_bind(struct sroce_dev *sdev, struct ib_pd *pd, u32 qpn,
		  const struct sroce_send_wqe *w);
int sroce_mw_invalidate(struct sroce_mr *ent, struct ib_pd *pd, u32 qpn,
			bool remote);

struct ib_mr *sroce_get_dma_mr(struct ib_pd *pd, int access);
struct ib_mr *sroce_alloc_mr(struct ib_pd *pd, enum ib_mr_type type,
			     u32 max_num_sg);
int sroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
struct ib_mr *sroce_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
struct ib_mr *sroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *pd, struct ib_udata *udata);
int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);

#endif /* SROCE_MR_H */
