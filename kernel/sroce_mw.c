// SPDX-License-Identifier: GPL-2.0
/*
 * sroce memory windows (IBTA 10.6.7): type 1, bound with ibv_bind_mw(), and
 * type 2B, bound with a BIND_MW work request and tied to the QP that bound
 * it. A window is an entry of the MR key table (struct sroce_mr of type
 * SROCE_MR_MW), so its R_Key is looked up exactly like an MR's; the entry
 * lives in its own allocation, freed after an RCU grace period like an MR,
 * because the core frees struct ib_mw as soon as dealloc_mw returns.
 *
 * Binding, invalidation and deallocation change a window under its lock;
 * the responder resolves a window to its MR under the same lock
 * (sroce_mr_get_remote()).
 */

#include <linux/slab.h>

#include "sroce.h"
#include "sroce_mr.h"
#include "proto/sroce_range.h"

#define SROCE_MW_ACCESS (IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_ATOMIC)

static struct sroce_mw *to_smw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct sroce_mw, ibmw);
}

int sroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibmw->device);
	struct sroce_mw *mw = to_smw(ibmw);
	struct sroce_mr *ent;
	int err;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2) {
		ibdev_dbg(ibmw->device, "alloc_mw: window type %d not supported\n",
			  ibmw->type);
		return -EINVAL;
	}
	ent = kzalloc(sizeof(*ent), SROCE_GFP_USER);
	if (!ent)
		return -ENOMEM;
	ent->type = SROCE_MR_MW;
	ent->mw_type = ibmw->type;
	ent->ibmr.pd = ibmw->pd;
	/* Not valid until bound (type 1) or in the free state (type 2). */
	err = sroce_mr_add(sdev, ent);
	if (err) {
		kfree(ent);
		return err;
	}
	ibmw->rkey = ent->ibmr.rkey;
	mw->ent = ent;
	return 0;
}

/* Drop @ent's binding. Called with ent->lock held. */
static void sroce_mw_unbind(struct sroce_mr *ent)
{
	struct sroce_mr *mr = ent->mw_mr;

	WRITE_ONCE(ent->valid, false);
	if (!mr)
		return;
	ent->mw_mr = NULL;
	spin_lock(&mr->lock);
	mr->num_mw--;
	spin_unlock(&mr->lock);
	sroce_mr_put(mr);
}

int sroce_dealloc_mw(struct ib_mw *ibmw)
{
	struct sroce_dev *sdev = to_sdev(ibmw->device);
	struct sroce_mr *ent = to_smw(ibmw)->ent;
	unsigned long flags;

	xa_erase(&sdev->mr_xa, ent->ibmr.rkey >> 8);
	spin_lock_irqsave(&ent->lock, flags);
	ent->dead = true;
	sroce_mw_unbind(ent);
	spin_unlock_irqrestore(&ent->lock, flags);
	sroce_mr_put(ent);
	wait_for_completion(&ent->released);
	kfree_rcu(ent, rcu);
	return 0;
}

/* May @ent be bound to [@addr, @addr + @len) of @mr with @access? */
static bool sroce_mw_bind_ok(const struct sroce_mr *ent,
			     const struct sroce_mr *mr, struct ib_pd *pd,
			     u64 addr, u64 len, int access)
{
	if (mr->type != SROCE_MR_USER && mr->type != SROCE_MR_FAST)
		return false;
	/* C10-72, C10-73 */
	if (mr->ibmr.pd != pd || !(mr->access & IB_ACCESS_MW_BIND))
		return false;
	/* C10-74: remote writes through the window write the MR. */
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IB_ACCESS_LOCAL_WRITE))
		return false;
	/* C10-75 */
	return sroce_range_within(mr->iova, mr->length, addr, len);
}

/**
 * sroce_mw_bind - execute a BIND_MW work request (type 1 or type 2)
 * @sdev: the device
 * @pd: the posting QP's PD
 * @qpn: the posting QP's number
 * @w: the WQE (a kernel copy; every field untrusted). imm_or_inv is the
 *     window's new R_Key, whose index names the window; rkey is the lkey of
 *     the MR; remote_addr and compare_add the window's start and length;
 *     swap the IB_ACCESS_REMOTE_* rights.
 *
 * Return: 0 or IB_WC_MW_BIND_ERR.
 */
int sroce_mw_bind(struct sroce_dev *sdev, struct ib_pd *pd, u32 qpn,
		  const struct sroce_send_wqe *w)
{
	u32 new_key = w->imm_or_inv;
	u64 addr = w->remote_addr, len = w->compare_add;
	struct sroce_mr *ent, *mr = NULL;
	unsigned long flags;
	int access;

	if (w->swap & ~(u64)(SROCE_MW_ACCESS | IB_ACCESS_LOCAL_WRITE))
		return IB_WC_MW_BIND_ERR;	/* no zero-based windows */
	access = w->swap & SROCE_MW_ACCESS;
	ent = sroce_mr_get_index(sdev, new_key >> 8);
	if (!ent)
		return IB_WC_MW_BIND_ERR;
	if (ent->type != SROCE_MR_MW || ent->ibmr.pd != pd)
		goto err_ent;
	/* o10-37.2.40: a type 2 window is bound to a non-empty range. */
	if (ent->mw_type == IB_MW_TYPE_2 && !len)
		goto err_ent;
	if (len) {
		mr = sroce_mr_get(sdev, w->rkey);
		if (!mr)
			goto err_ent;
		if (!sroce_mw_bind_ok(ent, mr, pd, addr, len, access))
			goto err_mr;
	}

	spin_lock_irqsave(&ent->lock, flags);
	/* o10-37.2.30: only a free type 2 window can be bound. */
	if (ent->dead || (ent->mw_type == IB_MW_TYPE_2 && ent->valid))
		goto err_unlock;
	if (mr) {
		spin_lock(&mr->lock);
		if (mr->dead) {
			spin_unlock(&mr->lock);
			goto err_unlock;
		}
		mr->num_mw++;
		spin_unlock(&mr->lock);
	}
	/* Type 1 may be rebound (or unbound, length 0) while bound. */
	sroce_mw_unbind(ent);
	ent->mw_mr = mr;		/* the lookup's reference is the binding's */
	ent->iova = addr;
	ent->length = len;
	ent->access = access;
	ent->mw_qpn = qpn;
	WRITE_ONCE(ent->key, new_key);
	WRITE_ONCE(ent->valid, !!mr);
	spin_unlock_irqrestore(&ent->lock, flags);
	sroce_mr_put(ent);
	return 0;

err_unlock:
	spin_unlock_irqrestore(&ent->lock, flags);
err_mr:
	if (mr)
		sroce_mr_put(mr);
err_ent:
	sroce_mr_put(ent);
	return IB_WC_MW_BIND_ERR;
}

/**
 * sroce_mw_invalidate - LOCAL_INV or SEND with Invalidate of a window
 * @ent: the window's entry, found by its current key (with a reference)
 * @pd: the PD of the QP that asks
 * @qpn: that QP
 * @remote: asked by the peer (SEND with Invalidate)
 *
 * Return: 0 or -EINVAL.
 */
int sroce_mw_invalidate(struct sroce_mr *ent, struct ib_pd *pd, u32 qpn,
			bool remote)
{
	unsigned long flags;
	int err = 0;

	/* o10-37.2.26: type 1 windows are not invalidated, only rebound. */
	if (ent->mw_type != IB_MW_TYPE_2 || ent->ibmr.pd != pd)
		return -EINVAL;
	spin_lock_irqsave(&ent->lock, flags);
	if (!ent->valid || (remote && ent->mw_qpn != qpn))
		err = -EINVAL;
	else
		sroce_mw_unbind(ent);
	spin_unlock_irqrestore(&ent->lock, flags);
	return err;
}
