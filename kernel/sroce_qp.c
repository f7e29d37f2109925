// SPDX-License-Identifier: GPL-2.0
/*
 * sroce queue pairs: creation and teardown. The state machine, attributes
 * and error flushing are sroce_qp_state.c's; the transport's parts of a QP
 * are owned by their files (see sroce_transport.h); the kernel-verbs post
 * paths are sroce_post.c's.
 */

#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce.h"
#include "sroce_ah.h"
#include "sroce_cq.h"
#include "sroce_param.h"
#include "sroce_mcast.h"
#include "sroce_qp.h"
#include "sroce_srq.h"
#include "sroce_trace.h"
#include "sroce_transport.h"
#include "proto/sroce_udp.h"

/* First QPN handed out; 0 and 1 are the special QPs of the IBTA. */
#define SROCE_QPN_MIN	16
#define SROCE_QPN_MAX	0xffffff

/*
 * The workqueues the requester and the READ streams run on (sroce_main.c
 * makes them), and a QP's pair of work items on them.
 */
struct workqueue_struct *sroce_wq;
struct workqueue_struct *sroce_pace_wq;

void sroce_qp_work_init(struct sroce_qp_work *w, work_func_t any,
			work_func_t pace)
{
	INIT_WORK(&w->any, any);
	INIT_WORK(&w->pace, pace);
}

/* Queue @w on the pacer's @cpu if @paced (and @cpu is online), else anywhere. */
void sroce_qp_work_queue(struct sroce_qp_work *w, bool paced, int cpu)
{
	if (paced && cpu_online(cpu))
		queue_work_on(cpu, sroce_pace_wq, &w->pace);
	else
		queue_work(sroce_wq, &w->any);
}

/*
 * Wait until neither of @w's items is queued or running. The caller has
 * made sure nothing new queues them (SROCE_QPF_DYING), but a run that
 * began before may have queued the other item: cancel the first again
 * after the second.
 */
void sroce_qp_work_cancel_sync(struct sroce_qp_work *w)
{
	cancel_work_sync(&w->any);
	cancel_work_sync(&w->pace);
	cancel_work_sync(&w->any);
}

struct sroce_qp *sroce_qp_get(struct sroce_dev *sdev, u32 qpn)
{
	struct sroce_qp *qp;

	rcu_read_lock();
	qp = xa_load(&sdev->qp_xa, qpn);
	if (qp && !refcount_inc_not_zero(&qp->ref))
		qp = NULL;
	rcu_read_unlock();
	return qp;
}

void sroce_qp_put(struct sroce_qp *qp)
{
	if (refcount_dec_and_test(&qp->ref))
		complete(&qp->released);
}

static u32 sroce_sq_slot_size(u32 max_sge, u32 max_inline)
{
	return SROCE_SEND_WQE_HDR_SIZE +
	       max_t(u32, max_sge * sizeof(struct sroce_sge), max_inline);
}

static u32 sroce_rq_slot_size(u32 max_sge)
{
	return sizeof(struct sroce_recv_wqe) +
	       max_sge * sizeof(struct sroce_sge);
}

static int sroce_qp_check_cap(struct ib_device *ibdev,
			      struct ib_qp_init_attr *init,
			      struct ib_udata *udata)
{
	struct ib_qp_cap *cap = &init->cap;

	if (cap->max_send_wr > SROCE_MAX_QP_WR) {
		ibdev_dbg(ibdev, "create_qp: max_send_wr %u > %u\n",
			  cap->max_send_wr, SROCE_MAX_QP_WR);
		return -EINVAL;
	}
	if (cap->max_recv_wr > SROCE_MAX_QP_WR) {
		ibdev_dbg(ibdev, "create_qp: max_recv_wr %u > %u\n",
			  cap->max_recv_wr, SROCE_MAX_QP_WR);
		return -EINVAL;
	}
	if (cap->max_send_sge > SROCE_MAX_SGE) {
		ibdev_dbg(ibdev, "create_qp: max_send_sge %u > %u\n",
			  cap->max_send_sge, SROCE_MAX_SGE);
		return -EINVAL;
	}
	if (cap->max_recv_sge > SROCE_MAX_SGE) {
		ibdev_dbg(ibdev, "create_qp: max_recv_sge %u > %u\n",
			  cap->max_recv_sge, SROCE_MAX_SGE);
		return -EINVAL;
	}
	if (cap->max_inline_data > SROCE_MAX_INLINE_DATA) {
		ibdev_dbg(ibdev, "create_qp: max_inline_data %u > %u\n",
			  cap->max_inline_data, SROCE_MAX_INLINE_DATA);
		return -EINVAL;
	}
	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
	case IB_QPT_XRC_INI:
		break;
	case IB_QPT_XRC_TGT:
		/* The core creates it for the XRC domain, never with udata. */
		if (udata || !init->xrcd) {
			ibdev_dbg(ibdev, "create_qp: an XRC target QP needs an XRC domain and no user data (xrcd %s, udata %s)\n",
				  init->xrcd ? "set" : "missing",
				  udata ? "given" : "none");
			return -EINVAL;
		}
		break;
	case IB_QPT_GSI:
		/* QP1 of port 1, for the kernel's MAD layer only. */
		if (udata || init->port_num != 1) {
			ibdev_dbg(ibdev, "create_qp: the GSI QP is the kernel's, on port 1 (port %u, udata %s)\n",
				  init->port_num, udata ? "given" : "none");
			return -EINVAL;
		}
		break;
	default:
		ibdev_dbg(ibdev, "create_qp: QP type %d not supported\n",
			  init->qp_type);
		return -EOPNOTSUPP;
	}
	if (init->create_flags) {
		ibdev_dbg(ibdev, "create_qp: create_flags 0x%x not supported\n",
			  init->create_flags);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* The send queue: the ring, its kernel shadow and per-WQE state. */
static int sroce_qp_init_sq(struct sroce_qp *qp, struct ib_qp_init_attr *init)
{
	bool ud = init->qp_type == IB_QPT_UD || init->qp_type == IB_QPT_GSI;
	int err;

	err = sroce_queue_init(&qp->sdev->ib_dev, &qp->sq,
			       max_t(u32, init->cap.max_send_wr, 1),
			       sroce_sq_slot_size(qp->max_send_sge,
						  qp->max_inline));
	if (err)
		return err;
	/* Charged to the creator like the ring; SROCE_QUEUE_MAX_BYTES bounds it. */
	qp->sq_shadow = __vmalloc((size_t)qp->sq.num_slots << qp->sq.slot_shift,
				  SROCE_GFP_USER);
	qp->wst = kvcalloc(qp->sq.num_slots, sizeof(*qp->wst), SROCE_GFP_USER);
	if (ud)
		qp->ud_dest = kvcalloc(qp->sq.num_slots, sizeof(*qp->ud_dest),
				       SROCE_GFP_USER);
	if (!qp->sq_shadow || !qp->wst || (ud && !qp->ud_dest)) {
		/* __GFP_NOWARN: nothing else says why (a memory cgroup limit?). */
		ibdev_dbg(&qp->sdev->ib_dev, "create_qp: cannot allocate the kernel's state for %u send queue slots (charged to the caller's memory cgroup)\n",
			  qp->sq.num_slots);
		return -ENOMEM;
	}
	return 0;
}

/* The transport's parts of a new QP (see sroce_transport.h). */
static void sroce_transport_init(struct sroce_qp *qp)
{
	sroce_cc_qp_init(qp);
	sroce_req_init(qp);
	sroce_comp_init(qp);
	sroce_resp_init(qp);
}

/* Back to RESET: forget all transport state. sq_lock and resp_lock held. */
void sroce_transport_reset(struct sroce_qp *qp)
{
	sroce_comp_reset(qp);
	sroce_req_reset(qp);
	sroce_sq_reset(qp);
	sroce_recv_reset(qp);
	sroce_resp_reset(qp);
	sroce_cc_qp_reset(qp);
}

/*
 * Stop every context that could run on this QP. SROCE_QPF_DYING is set
 * and the QP unreachable from the receive path, so nothing re-arms.
 */
static void sroce_transport_stop(struct sroce_qp *qp)
{
	spin_lock_bh(&qp->sq_lock);
	set_bit(SROCE_QPF_DYING, &qp->flags);
	spin_unlock_bh(&qp->sq_lock);
	sroce_cc_qp_stop(qp);
	sroce_comp_stop(qp);
	sroce_req_stop(qp);
	sroce_resp_stop(qp);
	/* The requester's last run may have armed a timer. */
	sroce_comp_stop(qp);
}

/* A new QP's fields from @init, before anything is allocated. */
static void sroce_qp_init_fields(struct sroce_qp *qp, struct sroce_dev *sdev,
				 const struct ib_qp_init_attr *init,
				 bool is_user)
{
	const struct ib_qp_cap *cap = &init->cap;

	qp->sdev = sdev;
	qp->is_user = is_user;
	refcount_set(&qp->ref, 1);
	init_completion(&qp->released);
	mutex_init(&qp->modify_lock);
	spin_lock_init(&qp->state_lock);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->post_lock);
	spin_lock_init(&qp->resp_lock);
	spin_lock_init(&qp->rq_post_lock);
	qp->state = IB_QPS_RESET;
	qp->scq = init->send_cq ? to_scq(init->send_cq) : NULL;
	qp->rcq = init->recv_cq ? to_scq(init->recv_cq) : NULL;
	qp->xrcd = init->xrcd;
	qp->max_send_sge = max_t(u32, cap->max_send_sge, 1);
	qp->max_recv_sge = max_t(u32, cap->max_recv_sge, 1);
	qp->max_inline = cap->max_inline_data;
	qp->mtu = 256;
	qp->sq_sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	seqlock_init(&qp->av.lock);
	sroce_transport_init(qp);
}

/* Free what sroce_qp_alloc_queues() allocated (any part of it). */
static void sroce_qp_free_queues(struct sroce_qp *qp)
{
	sroce_queue_cleanup(&qp->rq);
	kvfree(qp->ud_dest);
	qp->ud_dest = NULL;
	kvfree(qp->wst);
	qp->wst = NULL;
	vfree(qp->sq_shadow);
	qp->sq_shadow = NULL;
	sroce_queue_cleanup(&qp->sq);
}

/*
 * The QP's rings and what the kernel keeps beside them, and the capacities
 * they really have back in @init->cap. On failure the caller frees them
 * with sroce_qp_free_queues().
 */
static int sroce_qp_alloc_queues(struct sroce_qp *qp,
				 struct ib_qp_init_attr *init)
{
	struct ib_qp_cap *cap = &init->cap;
	int err;

	if (init->qp_type == IB_QPT_XRC_TGT) {
		/* It only responds: no send queue at all. */
		cap->max_send_wr = 0;
		cap->max_send_sge = 0;
		cap->max_inline_data = 0;
		qp->max_send_sge = 0;
		qp->max_inline = 0;
	} else {
		err = sroce_qp_init_sq(qp, init);
		if (err)
			return err;
	}
	qp->srq = to_ssrq(init->srq);
	if (qp->srq || !sroce_qp_has_rq(qp)) {
		/*
		 * Receives come from an SRQ (an XRC target's: the one each
		 * request names), or there are none (XRC initiator): a token
		 * RQ, never mapped.
		 */
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
		qp->max_recv_sge = qp->srq ? qp->srq->max_sge :
				   SROCE_MAX_SRQ_SGE;
	}
	err = sroce_queue_init(&qp->sdev->ib_dev, &qp->rq,
			       max_t(u32, cap->max_recv_wr, 1),
			       sroce_rq_slot_size(qp->max_recv_sge));
	if (err)
		return err;
	err = sroce_recv_alloc(qp);
	if (err)
		return err;

	/* What the queues really hold goes back to the caller. */
	cap->max_send_wr = qp->sq.num_slots;
	cap->max_recv_wr = sroce_qp_has_rq(qp) ? qp->rq.num_slots : 0;
	cap->max_send_sge = qp->max_send_sge;
	cap->max_recv_sge = sroce_qp_has_rq(qp) ? qp->max_recv_sge : 0;
	if (sroce_qp_has_sq(qp))
		qp->max_inline = sroce_queue_slot_size(&qp->sq) -
				 SROCE_SEND_WQE_HDR_SIZE;
	cap->max_inline_data = qp->max_inline;
	return 0;
}

/* The QP's number: 1 for GSI, else the next free one. Returns 0 or -errno. */
static int sroce_qp_alloc_qpn(struct sroce_dev *sdev, enum ib_qp_type type,
			      u32 *qpn)
{
	int err;

	if (type == IB_QPT_GSI) {
		*qpn = 1;
		err = xa_insert(&sdev->qp_xa, *qpn, NULL, GFP_KERNEL);
		if (err == -EBUSY)
			ibdev_dbg(&sdev->ib_dev, "create_qp: the GSI QP (QP1) already exists\n");
		return err;
	}
	err = xa_alloc_cyclic(&sdev->qp_xa, qpn, NULL,
			      XA_LIMIT(SROCE_QPN_MIN, SROCE_QPN_MAX),
			      &sdev->qp_next, GFP_KERNEL);
	if (err == -EBUSY)
		ibdev_dbg(&sdev->ib_dev, "create_qp: no free QP number in [%u, %u]\n",
			  SROCE_QPN_MIN, SROCE_QPN_MAX);
	return err < 0 ? err : 0;
}

int sroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_create_qp_resp resp = {};
	u32 qpn;
	int err;

	err = sroce_qp_check_cap(&sdev->ib_dev, init, udata);
	if (err)
		return err;
	if (udata && udata->outlen < sizeof(resp)) {
		ibdev_dbg(&sdev->ib_dev, "create_qp: response buffer of %zu bytes < %zu (provider older than the module?)\n",
			  udata->outlen, sizeof(resp));
		return -EINVAL;
	}
	if (atomic_inc_return(&sdev->num_qp) > SROCE_MAX_QP) {
		ibdev_dbg(&sdev->ib_dev, "create_qp: the device already has %u QPs\n",
			  SROCE_MAX_QP);
		err = -ENOMEM;
		goto err_count;
	}
	sroce_qp_init_fields(qp, sdev, init, !!udata);
	err = dst_cache_init(&qp->av.dst, GFP_KERNEL_ACCOUNT);
	if (err)
		goto err_count;
	err = sroce_qp_alloc_queues(qp, init);
	if (err)
		goto err_queues;
	if (udata) {
		err = sroce_queue_map(&qp->sq, sroce_uctx(udata), &resp.sq_mi);
		if (!err && sroce_qp_has_rq(qp))
			err = sroce_queue_map(&qp->rq, sroce_uctx(udata),
					      &resp.rq_mi);
		if (err)
			goto err_queues;
	}
	err = sroce_qp_alloc_qpn(sdev, init->qp_type, &qpn);
	if (err)
		goto err_queues;
	if (init->qp_type == IB_QPT_GSI)
		qp->attr.port_num = 1;
	ibqp->qp_num = qpn;

	if (udata) {
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_xa;
	}
	/* Visible to the receive path only once fully set up. */
	xa_store(&sdev->qp_xa, qpn, qp, GFP_KERNEL);
	return 0;

err_xa:
	xa_erase(&sdev->qp_xa, qpn);
err_queues:
	sroce_resp_free(qp);
	sroce_qp_free_queues(qp);
	dst_cache_destroy(&qp->av.dst);
err_count:
	atomic_dec(&sdev->num_qp);
	return err;
}

int sroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_dev *sdev = qp->sdev;

	/* Stop new packets from finding it, then everything that runs it. */
	set_bit(SROCE_QPF_DYING, &qp->flags);
	xa_erase(&sdev->qp_xa, ibqp->qp_num);
	sroce_mcast_detach_qp(qp);
	/*
	 * A receive path that found the QP before it was unpublished may
	 * still be about to take a reference: wait for it to either get one
	 * (drained below) or give up, before the core frees the QP. The
	 * grace period also covers everything the receive path does with
	 * the QP, which runs in softirq under the stack's rcu_read_lock():
	 * what it kicked or queued (requester work, a READ stream, the
	 * pacer) is queued by now, so sroce_transport_stop() cancels it, and
	 * nothing it starts later can see the QP without SROCE_QPF_DYING.
	 * Receive processing moved out of that section (to a work item, say)
	 * would have to be waited for here.
	 */
	synchronize_rcu();
	sroce_transport_stop(qp);
	sroce_qp_put(qp);
	wait_for_completion(&qp->released);
	sroce_resp_free(qp);
	dst_cache_destroy(&qp->av.dst);
	sroce_qp_free_queues(qp);
	mutex_destroy(&qp->modify_lock);
	atomic_dec(&sdev->num_qp);
	return 0;
}
