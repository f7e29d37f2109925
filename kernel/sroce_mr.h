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
};

struct sroce_mr {
	struct ib_mr ibmr;
	enum sroce_mr_type type;
	int access;		/* IB_ACCESS_* */
	u64 iova;
	u64 length;
	struct ib_umem *umem;
	struct page **pages;	/* pinned pages, in order */
	u32 npages;
	u32 first_offset;	/* offset of iova inside pages[0] */
	refcount_t ref;		/* 1 while registered + data-path users */
	struct completion released;
	struct rcu_head rcu;
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

struct ib_mr *sroce_get_dma_mr(struct ib_pd *pd, int access);
struct ib_mr *sroce_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);

#endif /* SROCE_MR_H */
