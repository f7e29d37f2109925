// SPDX-License-Identifier: GPL-2.0
/*
 * sroce shared receive queues: create/modify/query/destroy, resize, the
 * limit event, kernel post_srq_recv, and taking WQEs for the responders.
 */

#include <linux/slab.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce.h"
#include "sroce_param.h"
#include "sroce_srq.h"
#include "proto/sroce_hdr.h"

static u32 sroce_srq_slot_size(u32 max_sge)
{
	return sizeof(struct sroce_recv_wqe) +
	       max_sge * sizeof(struct sroce_sge);
}

/**
 * sroce_srq_take - move the next WQE of @srq into a QP's @rwqe buffer
 * @srq: the SRQ
 * @rwqe: the QP's buffer, slot-sized for the SRQ (max_sge SGEs)
 *
 * Any context. Return: 1 if a WQE was taken, 0 if the SRQ is empty, -EIO if
 * the ring or the WQE is corrupt.
 */
int sroce_srq_take(struct sroce_srq *srq, void *rwqe)
{
	struct sroce_recv_wqe *rw = rwqe;
	const struct sroce_recv_wqe *src;
	bool fire = false;
	unsigned long flags;
	int n, ret = 1;

	spin_lock_irqsave(&srq->lock, flags);
	n = sroce_queue_count_produced(&srq->q);
	if (n <= 0) {
		ret = n < 0 ? -EIO : 0;
		goto out;
	}
	src = sroce_queue_slot(&srq->q, srq->q.kidx);
	memcpy(rw, src, sizeof(*rw));
	if (rw->num_sge > srq->max_sge) {
		ret = -EIO;
		goto out;
	}
	memcpy(rw + 1, src + 1, rw->num_sge * sizeof(struct sroce_sge));
	srq->q.kidx++;
	sroce_queue_publish_consumer(&srq->q);
	/* IBTA: the event fires once when fewer than srq_limit remain. */
	if (srq->limit && n - 1 < srq->limit) {
		srq->limit = 0;
		fire = true;
	}
out:
	spin_unlock_irqrestore(&srq->lock, flags);
	if (fire && srq->ibsrq.event_handler) {
		struct ib_event ev = {
			.device = srq->ibsrq.device,
			.element.srq = &srq->ibsrq,
			.event = IB_EVENT_SRQ_LIMIT_REACHED,
		};

		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
	return ret;
}

/**
 * sroce_xsrq_get - look up an XRC SRQ by number and take a reference
 * @sdev: the device
 * @srqn: the number from an XRCETH (untrusted)
 *
 * Return: the SRQ or NULL. Release with sroce_srq_put().
 */
struct sroce_srq *sroce_xsrq_get(struct sroce_dev *sdev, u32 srqn)
{
	struct sroce_srq *srq;

	rcu_read_lock();
	srq = xa_load(&sdev->srq_xa, srqn);
	if (srq && !refcount_inc_not_zero(&srq->ref))
		srq = NULL;
	rcu_read_unlock();
	return srq;
}

void sroce_srq_put(struct sroce_srq *srq)
{
	if (refcount_dec_and_test(&srq->ref))
		complete(&srq->released);
}

/* Can an SRQ be made as @init asks (@resp_len: the response's size)? */
static int sroce_srq_check_init(struct ib_device *ibdev,
				const struct ib_srq_init_attr *init,
				const struct ib_udata *udata, size_t resp_len)
{
	const struct ib_srq_attr *attr = &init->attr;
	bool xrc = init->srq_type == IB_SRQT_XRC;

	if (init->srq_type != IB_SRQT_BASIC && !xrc) {
		ibdev_dbg(ibdev, "create_srq: SRQ type %d not supported\n",
			  init->srq_type);
		return -EOPNOTSUPP;
	}
	if (xrc && (!init->ext.cq || !init->ext.xrc.xrcd)) {
		ibdev_dbg(ibdev, "create_srq: an XRC SRQ needs a CQ and an XRC domain (cq %s, xrcd %s)\n",
			  init->ext.cq ? "set" : "missing",
			  init->ext.xrc.xrcd ? "set" : "missing");
		return -EINVAL;
	}
	if (!attr->max_wr || attr->max_wr > SROCE_MAX_SRQ_WR) {
		ibdev_dbg(ibdev, "create_srq: max_wr %u not in [1, %u]\n",
			  attr->max_wr, SROCE_MAX_SRQ_WR);
		return -EINVAL;
	}
	if (attr->max_sge > SROCE_MAX_SRQ_SGE) {
		ibdev_dbg(ibdev, "create_srq: max_sge %u > %u\n",
			  attr->max_sge, SROCE_MAX_SRQ_SGE);
		return -EINVAL;
	}
	if (udata && udata->outlen < resp_len) {
		ibdev_dbg(ibdev, "create_srq: response buffer of %zu bytes < %zu (provider older than the module?)\n",
			  udata->outlen, resp_len);
		return -EINVAL;
	}
	return 0;
}

int sroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibsrq->device);
	struct sroce_srq *srq = to_ssrq(ibsrq);
	struct sroce_create_srq_resp resp = {};
	struct ib_srq_attr *attr = &init->attr;
	bool xrc = init->srq_type == IB_SRQT_XRC;
	int err;

	err = sroce_srq_check_init(ibsrq->device, init, udata, sizeof(resp));
	if (err)
		return err;
	if (atomic_inc_return(&sdev->num_srq) > SROCE_MAX_SRQ) {
		ibdev_dbg(ibsrq->device, "create_srq: the device already has %u SRQs\n",
			  SROCE_MAX_SRQ);
		err = -ENOMEM;
		goto err_count;
	}
	spin_lock_init(&srq->lock);
	spin_lock_init(&srq->post_lock);
	refcount_set(&srq->ref, 1);
	init_completion(&srq->released);
	srq->max_sge = max_t(u32, attr->max_sge, 1);
	srq->is_user = !!udata;
	err = sroce_queue_init(ibsrq->device, &srq->q, attr->max_wr,
			       sroce_srq_slot_size(srq->max_sge));
	if (err)
		goto err_count;
	attr->max_wr = srq->q.num_slots;
	attr->max_sge = srq->max_sge;
	/* Irrelevant at creation per the verbs spec; honoured like rxe. */
	if (attr->srq_limit && attr->srq_limit <= srq->q.num_slots)
		srq->limit = attr->srq_limit;
	if (xrc) {
		/* A number now; visible to responders once set up. */
		err = xa_alloc_cyclic(&sdev->srq_xa, &srq->srqn, NULL,
				      XA_LIMIT(1, SROCE_QPN_MASK),
				      &sdev->srq_next, GFP_KERNEL);
		if (err == -EBUSY)
			ibdev_dbg(ibsrq->device, "create_srq: no free XRC SRQ number\n");
		if (err < 0)
			goto err_queue;
		ibsrq->ext.xrc.srq_num = srq->srqn;
	}
	if (udata) {
		err = sroce_queue_map(&srq->q, sroce_uctx(udata), &resp.mi);
		if (err)
			goto err_xa;
		resp.srq_num = srq->srqn;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_xa;
	}
	if (xrc)
		xa_store(&sdev->srq_xa, srq->srqn, srq, GFP_KERNEL);
	return 0;

err_xa:
	if (xrc)
		xa_erase(&sdev->srq_xa, srq->srqn);
err_queue:
	sroce_queue_cleanup(&srq->q);
err_count:
	atomic_dec(&sdev->num_srq);
	return err;
}

/* Move the posted WQEs to a ring of @max_wr slots. */
static int sroce_srq_resize(struct sroce_srq *srq, u32 max_wr,
			    struct ib_udata *udata)
{
	struct ib_device *ibdev = srq->ibsrq.device;
	struct sroce_modify_srq_cmd cmd = {};
	struct sroce_mmap_info mi = {};
	struct sroce_queue nq;
	unsigned long flags;
	u32 i, n, slot;
	int err;

	if (!max_wr || max_wr > SROCE_MAX_SRQ_WR) {
		ibdev_dbg(ibdev, "modify_srq: max_wr %u not in [1, %u]\n",
			  max_wr, SROCE_MAX_SRQ_WR);
		return -EINVAL;
	}
	if (udata) {
		err = ib_copy_from_udata(&cmd, udata,
					 min(udata->inlen, sizeof(cmd)));
		if (err)
			return err;
		if (!cmd.mi_addr) {
			ibdev_dbg(ibdev, "modify_srq: resizing a user SRQ needs the address for the new ring's mmap info (provider older than the module?)\n");
			return -EINVAL;
		}
	}
	err = sroce_queue_init(ibdev, &nq, max_wr,
			       sroce_queue_slot_size(&srq->q));
	if (err)
		return err;
	if (udata) {
		err = sroce_queue_map(&nq, sroce_uctx(udata), &mi);
		if (err)
			goto out;
		/*
		 * Tell user space where the new ring is before switching to
		 * it: a resize whose reply is lost would leave the provider
		 * posting into the old ring.
		 */
		if (copy_to_user(u64_to_user_ptr(cmd.mi_addr), &mi,
				 sizeof(mi))) {
			err = -EFAULT;
			goto out;
		}
	}

	/* Kernel producers and the consumers both stay out meanwhile. */
	spin_lock_irqsave(&srq->post_lock, flags);
	spin_lock(&srq->lock);
	n = sroce_queue_count_produced(&srq->q);
	if ((int)n < 0 || n > nq.num_slots) {
		spin_unlock(&srq->lock);
		spin_unlock_irqrestore(&srq->post_lock, flags);
		err = (int)n < 0 ? -EIO : -EINVAL;
		if (err == -EIO)
			ibdev_dbg(ibdev, "modify_srq: the producer index in the ring is corrupt\n");
		else
			ibdev_dbg(ibdev, "modify_srq: %u WQEs posted > max_wr %u, the new size\n",
				  n, nq.num_slots);
		goto out;
	}
	slot = sroce_queue_slot_size(&srq->q);
	for (i = 0; i < n; i++)
		memcpy(sroce_queue_slot(&nq, i),
		       sroce_queue_slot(&srq->q, srq->q.kidx + i), slot);
	nq.kidx = 0;
	nq.hdr->producer = n;
	nq.hdr->consumer = 0;
	swap(srq->q, nq);
	spin_unlock(&srq->lock);
	spin_unlock_irqrestore(&srq->post_lock, flags);
out:
	sroce_queue_cleanup(&nq);
	return err;
}

int sroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);
	unsigned long flags;
	int err;

	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT)) {
		ibdev_dbg(ibsrq->device, "modify_srq: attr_mask 0x%x: only IB_SRQ_MAX_WR and IB_SRQ_LIMIT can change\n",
			  mask);
		return -EINVAL;
	}
	if (mask & IB_SRQ_MAX_WR) {
		err = sroce_srq_resize(srq, attr->max_wr, udata);
		if (err)
			return err;
	}
	if (mask & IB_SRQ_LIMIT) {
		if (attr->srq_limit > srq->q.num_slots) {
			ibdev_dbg(ibsrq->device, "modify_srq: srq_limit %u > %u, the SRQ's size\n",
				  attr->srq_limit, srq->q.num_slots);
			return -EINVAL;
		}
		spin_lock_irqsave(&srq->lock, flags);
		srq->limit = attr->srq_limit;
		spin_unlock_irqrestore(&srq->lock, flags);
	}
	return 0;
}

int sroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);

	attr->max_wr = srq->q.num_slots;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = READ_ONCE(srq->limit);
	return 0;
}

int sroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);

	/*
	 * The core refuses while QPs are attached (usecnt). XRC target QPs
	 * are not attached: they find the SRQ by number, per packet, so
	 * unpublish it and wait for the ones using it now.
	 */
	if (srq->srqn) {
		xa_erase(&to_sdev(ibsrq->device)->srq_xa, srq->srqn);
		/*
		 * A lookup that found it just before may not have taken its
		 * reference yet (sroce_xsrq_get() under RCU): the core frees
		 * the SRQ when this returns.
		 */
		synchronize_rcu();
	}
	sroce_srq_put(srq);
	wait_for_completion(&srq->released);
	sroce_queue_cleanup(&srq->q);
	atomic_dec(&to_sdev(ibsrq->device)->num_srq);
	return 0;
}

int sroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);
	unsigned long flags;
	int err = 0;

	if (srq->is_user) {
		*bad_wr = wr;
		return -EOPNOTSUPP;
	}
	spin_lock_irqsave(&srq->post_lock, flags);
	err = sroce_queue_post_recv(&srq->q, srq->max_sge, wr, bad_wr);
	spin_unlock_irqrestore(&srq->post_lock, flags);
	return err;
}
