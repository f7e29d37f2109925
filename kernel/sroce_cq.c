// SPDX-License-Identifier: GPL-2.0
/*
 * sroce completion queues.
 */

#include <linux/slab.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce.h"
#include "sroce_cq.h"
#include "sroce_param.h"

static int sroce_cq_ring_init(struct ib_device *ibdev, struct sroce_queue *q,
			      int cqe, const char *op)
{
	if (cqe < 1 || cqe > SROCE_MAX_CQE) {
		ibdev_dbg(ibdev, "%s: cqe %d not in [1, %u]\n", op, cqe,
			  SROCE_MAX_CQE);
		return -EINVAL;
	}
	return sroce_queue_init(ibdev, q, cqe, sizeof(struct sroce_cqe));
}

int sroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct sroce_create_cq_arg *arg)
{
	struct ib_udata *ud = sroce_create_cq_udata(arg);
	struct sroce_dev *sdev = to_sdev(ibcq->device);
	struct sroce_cq *cq = to_scq(ibcq);
	struct sroce_create_cq_resp resp = {};
	int err;

	if (attr->flags) {
		ibdev_dbg(ibcq->device, "create_cq: flags 0x%x not supported\n",
			  attr->flags);
		return -EOPNOTSUPP;
	}
	if (ud && ud->outlen && ud->outlen < sizeof(resp)) {
		ibdev_dbg(ibcq->device, "create_cq: response buffer of %zu bytes < %zu (provider older than the module?)\n",
			  ud->outlen, sizeof(resp));
		return -EINVAL;
	}
	if (atomic_inc_return(&sdev->num_cq) > SROCE_MAX_CQ) {
		ibdev_dbg(ibcq->device, "create_cq: the device already has %u CQs\n",
			  SROCE_MAX_CQ);
		err = -ENOMEM;
		goto err_count;
	}

	spin_lock_init(&cq->lock);
	err = sroce_cq_ring_init(ibcq->device, &cq->q, attr->cqe, "create_cq");
	if (err)
		goto err_count;
	cq->is_user = !!ud;
	if (ud) {
		err = sroce_queue_map(&cq->q, sroce_uctx(ud), &resp.mi);
		if (err)
			goto err_ring;
		err = ib_copy_to_udata(ud, &resp, sizeof(resp));
		if (err)
			goto err_ring;
	}
	ibcq->cqe = cq->q.num_slots;
	return 0;

err_ring:
	sroce_queue_cleanup(&cq->q);
err_count:
	atomic_dec(&sdev->num_cq);
	return err;
}

int sroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct sroce_cq *cq = to_scq(ibcq);

	sroce_queue_cleanup(&cq->q);
	atomic_dec(&to_sdev(ibcq->device)->num_cq);
	return 0;
}

/*
 * Entries still waiting to be consumed move to the new ring in order. For a
 * user CQ the process must remap: it gets the new ring's mmap info and
 * moves its consumer index to 0, where the kernel placed the oldest entry.
 */
int sroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct sroce_cq *cq = to_scq(ibcq);
	struct sroce_resize_cq_resp resp = {};
	struct sroce_queue nq;
	unsigned long flags;
	u32 cons, n, i;
	int err;

	if (udata && udata->outlen < sizeof(resp)) {
		ibdev_dbg(ibcq->device, "resize_cq: response buffer of %zu bytes < %zu (provider older than the module?)\n",
			  udata->outlen, sizeof(resp));
		return -EINVAL;
	}
	err = sroce_cq_ring_init(ibcq->device, &nq, cqe, "resize_cq");
	if (err)
		return err;
	if (udata) {
		err = sroce_queue_map(&nq, sroce_uctx(udata), &resp.mi);
		if (err)
			goto err_free;
	}

	spin_lock_irqsave(&cq->lock, flags);
	cons = READ_ONCE(cq->q.hdr->consumer);
	n = cq->q.kidx - cons;
	if (n > cq->q.num_slots || n > nq.num_slots) {
		u32 prod = cq->q.kidx, slots = cq->q.num_slots;

		spin_unlock_irqrestore(&cq->lock, flags);
		err = n > slots ? -EIO : -EINVAL;
		if (err == -EIO)
			ibdev_dbg(ibcq->device, "resize_cq: the consumer index %u in the ring is corrupt (producer %u, %u slots)\n",
				  cons, prod, slots);
		else
			ibdev_dbg(ibcq->device, "resize_cq: %u completions not yet polled > %u, the new size\n",
				  n, nq.num_slots);
		goto err_free;
	}
	for (i = 0; i < n; i++)
		memcpy(sroce_queue_slot(&nq, i),
		       sroce_queue_slot(&cq->q, cons + i),
		       sizeof(struct sroce_cqe));
	nq.kidx = n;
	nq.hdr->producer = n;
	swap(cq->q, nq);
	ibcq->cqe = cq->q.num_slots;
	spin_unlock_irqrestore(&cq->lock, flags);

	if (udata) {
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err) {
			/* The resize happened; only the reply was lost. */
			sroce_queue_cleanup(&nq);
			return err;
		}
	}
	sroce_queue_cleanup(&nq);
	return 0;

err_free:
	sroce_queue_cleanup(&nq);
	return err;
}

/**
 * sroce_cq_post - add a completion
 * @cq: the CQ
 * @cqe: the entry
 * @qp: the QP it belongs to (kept for kernel consumers' ib_wc.qp)
 * @solicited: the completion satisfies a solicited-only arm
 *
 * Return: 0, or -ENOSPC when the CQ overflowed: the entry is lost, the CQ
 * is in error and IB_EVENT_CQ_ERR has been dispatched.
 */
int sroce_cq_post(struct sroce_cq *cq, const struct sroce_cqe *cqe,
		  struct ib_qp *qp, bool solicited)
{
	struct sroce_cqe *slot;
	unsigned long flags;
	bool notify = false;
	int room;

	spin_lock_irqsave(&cq->lock, flags);
	room = sroce_queue_count_free(&cq->q);
	if (room <= 0 || cq->overflowed) {
		bool first = !cq->overflowed;

		cq->overflowed = true;
		spin_unlock_irqrestore(&cq->lock, flags);
		if (first && cq->ibcq.event_handler) {
			struct ib_event ev = {
				.device = cq->ibcq.device,
				.element.cq = &cq->ibcq,
				.event = IB_EVENT_CQ_ERR,
			};

			cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
		}
		return -ENOSPC;
	}
	slot = sroce_queue_slot(&cq->q, cq->q.kidx);
	memcpy(slot, cqe, sizeof(*slot));
	if (!cq->is_user)
		memcpy(slot->reserved, &qp, sizeof(qp));
	cq->q.kidx++;
	sroce_queue_publish_producer(&cq->q);

	if (cq->notify & IB_CQ_NEXT_COMP ||
	    (cq->notify & IB_CQ_SOLICITED && solicited)) {
		cq->notify = 0;
		notify = true;
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (notify && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	return 0;
}

static void sroce_cqe_to_wc(const struct sroce_cqe *c, struct ib_wc *wc)
{
	struct ib_qp *qp;

	memcpy(&qp, c->reserved, sizeof(qp));
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = c->wr_id;
	wc->status = c->status;
	wc->opcode = c->opcode;
	wc->vendor_err = c->vendor_err;
	wc->byte_len = c->byte_len;
	wc->qp = qp;
	wc->src_qp = c->src_qp;
	wc->pkey_index = c->pkey_index;
	wc->slid = c->slid;
	wc->sl = c->sl;
	wc->dlid_path_bits = c->dlid_path_bits;
	wc->port_num = c->port_num;
	wc->network_hdr_type = c->network_hdr_type;
	wc->vlan_id = c->vlan_id;
	memcpy(wc->smac, c->smac, sizeof(c->smac));
	/* Kernel ib_wc flag bits differ from the ibv ones in the ring. */
	if (c->wc_flags & SROCE_WC_F_GRH)
		wc->wc_flags |= IB_WC_GRH;
	if (c->wc_flags & SROCE_WC_F_WITH_IMM) {
		wc->wc_flags |= IB_WC_WITH_IMM;
		wc->ex.imm_data = (__force __be32)c->imm_or_inv;
	}
	if (c->wc_flags & SROCE_WC_F_WITH_INV) {
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
		wc->ex.invalidate_rkey = c->imm_or_inv;
	}
	if (c->wc_flags & SROCE_WC_F_IP_CSUM_OK)
		wc->wc_flags |= IB_WC_IP_CSUM_OK;
	if (c->network_hdr_type)
		wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
}

/* Kernel consumers only; user CQs are polled in the provider. */
int sroce_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct sroce_cq *cq = to_scq(ibcq);
	unsigned long flags;
	int n = 0;
	u32 cons;

	spin_lock_irqsave(&cq->lock, flags);
	cons = cq->q.hdr->consumer;
	while (n < num && cons != cq->q.kidx) {
		sroce_cqe_to_wc(sroce_queue_slot(&cq->q, cons), &wc[n]);
		cons++;
		n++;
	}
	cq->q.hdr->consumer = cons;
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int sroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct sroce_cq *cq = to_scq(ibcq);
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = flags & IB_CQ_SOLICITED_MASK;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) &&
	    READ_ONCE(cq->q.hdr->consumer) != cq->q.kidx)
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}
