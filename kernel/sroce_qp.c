// SPDX-License-Identifier: GPL-2.0
/*
 * sroce queue pairs: creation, the state machine, attributes, teardown and
 * error flushing. The transport's parts of a QP are owned by their files
 * (see sroce_transport.h); the kernel-verbs post paths are sroce_post.c's.
 */

#include <linux/slab.h>
#include <linux/vmalloc.h>
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
static void sroce_transport_reset(struct sroce_qp *qp)
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
	kfree(qp->resp.rwqe);
	qp->resp.rwqe = NULL;
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
	qp->resp.rwqe = kmalloc(sroce_queue_slot_size(&qp->rq), SROCE_GFP_USER);
	if (!qp->resp.rwqe)
		return -ENOMEM;

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
	sroce_qp_free_queues(qp);
	dst_cache_destroy(&qp->av.dst);
err_count:
	atomic_dec(&sdev->num_qp);
	return err;
}

/* Resolve the AH attributes given at RTR into IP addresses and ports. */
static int sroce_qp_set_av(struct sroce_qp *qp, struct rdma_ah_attr *ah)
{
	struct sroce_path path;
	int err = sroce_path_from_ah_attr(qp->ibqp.device, &path, ah);

	if (err)
		return err;
	/* Packets in flight (SQD->SQD) see the old path or the new one. */
	write_seqlock_bh(&qp->av.lock);
	qp->av.p = path;
	dst_cache_reset(&qp->av.dst);
	write_sequnlock_bh(&qp->av.lock);
	return 0;
}

static void sroce_qp_set_sport(struct sroce_qp *qp)
{
	write_seqlock_bh(&qp->av.lock);
	qp->av.sport = sroce_udp_sport_for_qp(qp->av.p.flow_label,
					      qp->ibqp.qp_num,
					      qp->attr.dest_qp_num);
	write_sequnlock_bh(&qp->av.lock);
}

static int sroce_qp_check_attr(struct sroce_qp *qp, struct ib_qp_attr *attr,
			       int mask)
{
	struct ib_device *ibdev = qp->ibqp.device;
	u32 qpn = qp->ibqp.qp_num;

	if ((mask & IB_QP_PORT) && attr->port_num != 1) {
		ibdev_dbg(ibdev, "modify_qp: QP %u: port_num %u, the device has port 1 only\n",
			  qpn, attr->port_num);
		return -EINVAL;
	}
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index) {
		ibdev_dbg(ibdev, "modify_qp: QP %u: pkey_index %u, the P_Key table has one entry (index 0)\n",
			  qpn, attr->pkey_index);
		return -EINVAL;
	}
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > SROCE_MAX_QP_RD_ATOM) {
		ibdev_dbg(ibdev, "modify_qp: QP %u: max_rd_atomic %u > %u\n",
			  qpn, attr->max_rd_atomic, SROCE_MAX_QP_RD_ATOM);
		return -EINVAL;
	}
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > SROCE_MAX_QP_RD_ATOM) {
		ibdev_dbg(ibdev, "modify_qp: QP %u: max_dest_rd_atomic %u > %u\n",
			  qpn, attr->max_dest_rd_atomic, SROCE_MAX_QP_RD_ATOM);
		return -EINVAL;
	}
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096)) {
		ibdev_dbg(ibdev, "modify_qp: QP %u: path_mtu %d is not an IB MTU (%d to %d)\n",
			  qpn, attr->path_mtu, IB_MTU_256, IB_MTU_4096);
		return -EINVAL;
	}
	/*
	 * sroce sends with DF set: a path MTU the netdev cannot carry would
	 * drop every full-size packet until the retry limit.
	 */
	if (mask & IB_QP_PATH_MTU) {
		unsigned int ndev_mtu = READ_ONCE(qp->sdev->ndev->mtu);
		u32 max = sroce_ib_mtu_bytes(sroce_ib_mtu_for_netdev(ndev_mtu));

		if (ib_mtu_enum_to_int(attr->path_mtu) > max) {
			ibdev_dbg(ibdev, "modify_qp: QP %u: path MTU %d bytes > %u, the largest %s (MTU %u) carries\n",
				  qpn, ib_mtu_enum_to_int(attr->path_mtu), max,
				  qp->sdev->ndev->name, ndev_mtu);
			return -EINVAL;
		}
	}
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31) {
		ibdev_dbg(ibdev, "modify_qp: QP %u: timeout %u > 31\n",
			  qpn, attr->timeout);
		return -EINVAL;
	}
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7) {
		ibdev_dbg(ibdev, "modify_qp: QP %u: retry_cnt %u > 7\n",
			  qpn, attr->retry_cnt);
		return -EINVAL;
	}
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7) {
		ibdev_dbg(ibdev, "modify_qp: QP %u: rnr_retry %u > 7\n",
			  qpn, attr->rnr_retry);
		return -EINVAL;
	}
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31) {
		ibdev_dbg(ibdev, "modify_qp: QP %u: min_rnr_timer %u > 31\n",
			  qpn, attr->min_rnr_timer);
		return -EINVAL;
	}
	if (mask & IB_QP_CAP) {
		ibdev_dbg(ibdev, "modify_qp: QP %u: resizing a QP (IB_QP_CAP) is not supported\n",
			  qpn);
		return -EOPNOTSUPP;
	}
	if (mask & IB_QP_ALT_PATH) {
		ibdev_dbg(ibdev, "modify_qp: QP %u: alternate paths (IB_QP_ALT_PATH) are not supported\n",
			  qpn);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* Dispatch an affiliated async event (SROCE_NO_EVENT: none). */
static void sroce_qp_event(struct sroce_qp *qp, enum ib_event_type event)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = event,
	};

	if (event != SROCE_NO_EVENT && qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/*
 * Tell the process the QP is in error before flushing (see
 * SROCE_QUEUE_F_QP_ERR): flag, full barrier, then the caller flushes.
 */
static void sroce_qp_mark_error(struct sroce_qp *qp, bool err)
{
	u32 f = err ? SROCE_QUEUE_F_QP_ERR : 0;

	if (qp->sq.hdr)
		WRITE_ONCE(qp->sq.hdr->flags, f);
	WRITE_ONCE(qp->rq.hdr->flags, f);
	/* Pairs with the provider's fence between producer store and flag load. */
	smp_mb();
}

/*
 * Store modify_qp's attributes: the QP's own and those each transport
 * part keeps. sq_lock and resp_lock held.
 */
static void sroce_qp_apply_attr(struct sroce_qp *qp,
				const struct ib_qp_attr *attr, int mask)
{
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_PKEY_INDEX)
		qp->attr.pkey_index = attr->pkey_index;
	if (mask & IB_QP_PORT)
		qp->attr.port_num = attr->port_num;
	if (mask & IB_QP_PATH_MTU) {
		qp->attr.path_mtu = attr->path_mtu;
		qp->mtu = ib_mtu_enum_to_int(attr->path_mtu);
	}
	if (mask & IB_QP_TIMEOUT)
		qp->attr.timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		qp->attr.retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp->attr.rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_RQ_PSN)
		qp->attr.rq_psn = attr->rq_psn & SROCE_PSN_MASK;
	if (mask & IB_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_SQ_PSN)
		qp->attr.sq_psn = attr->sq_psn & SROCE_PSN_MASK;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_DEST_QPN)
		qp->attr.dest_qp_num = attr->dest_qp_num & 0xffffff;
	if (mask & IB_QP_QKEY)
		qp->attr.qkey = attr->qkey;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		qp->attr.en_sqd_async_notify = attr->en_sqd_async_notify;
	if (mask & (IB_QP_AV | IB_QP_DEST_QPN))
		sroce_qp_set_sport(qp);
	sroce_req_modify(qp, attr, mask);
	sroce_comp_modify(qp, attr, mask);
	sroce_resp_modify(qp, attr, mask);
}

/*
 * The one place a QP's state changes (after creation, in RESET): to @next,
 * traced. state_lock held.
 */
static void sroce_qp_state_write(struct sroce_qp *qp, enum ib_qp_state next)
{
	trace_sroce_qp_state(qp, qp->state, next);
	qp->state = next;
	qp->attr.qp_state = next;
}

/*
 * Move the QP from @cur (the state modify_qp checked) to @next, and do
 * what entering @next takes: flush, events, wake the requester.
 */
static int sroce_qp_set_state(struct sroce_qp *qp, enum ib_qp_state cur,
			      enum ib_qp_state next)
{
	spin_lock_bh(&qp->state_lock);
	/*
	 * The data path moved the QP to the error state meanwhile: that
	 * stands, only RESET (or ERR) leaves it.
	 */
	if (qp->state != cur && next != IB_QPS_RESET &&
	    next != IB_QPS_ERR) {
		enum ib_qp_state now = qp->state;

		spin_unlock_bh(&qp->state_lock);
		ibdev_dbg(qp->ibqp.device, "modify_qp: QP %u: the data path moved it from state %d to %d meanwhile; only RESET or ERR leave that, not %d\n",
			  qp->ibqp.qp_num, cur, now, next);
		return -EINVAL;
	}
	/* What follows depends on the state really left. */
	cur = qp->state;
	sroce_qp_state_write(qp, next);
	spin_unlock_bh(&qp->state_lock);
	if (next == IB_QPS_ERR || next == IB_QPS_RESET ||
	    cur == IB_QPS_SQE)
		sroce_qp_mark_error(qp, next == IB_QPS_ERR);
	if (next == IB_QPS_ERR)
		sroce_qp_flush(qp);
	if (next == IB_QPS_ERR && cur != IB_QPS_ERR && qp->srq)
		sroce_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
	if (next == IB_QPS_SQD && cur != IB_QPS_SQD &&
	    sroce_comp_sqd_begin(qp))
		sroce_sqd_notify(qp);
	if (next == IB_QPS_RTS)
		sroce_req_kick(qp, false);
	return 0;
}

static int sroce_modify_qp_locked(struct sroce_qp *qp, struct ib_qp_attr *attr,
				  int mask)
{
	enum ib_qp_state cur, next;
	int err;

	cur = READ_ONCE(qp->state);
	/*
	 * IB_QP_CUR_STATE is an assertion, not a fact: the transition is
	 * checked against the state the QP is really in.
	 */
	if ((mask & IB_QP_CUR_STATE) && attr->cur_qp_state != cur) {
		ibdev_dbg(qp->ibqp.device, "modify_qp: QP %u: cur_qp_state %d, but the QP is in state %d\n",
			  qp->ibqp.qp_num, attr->cur_qp_state, cur);
		return -EINVAL;
	}
	next = (mask & IB_QP_STATE) ? attr->qp_state : cur;

	if (!ib_modify_qp_is_ok(cur, next, qp->ibqp.qp_type, mask)) {
		ibdev_dbg(qp->ibqp.device, "modify_qp: QP %u (type %d): state %d -> %d with attr_mask 0x%x not a valid transition, or attributes missing or not allowed in it\n",
			  qp->ibqp.qp_num, qp->ibqp.qp_type, cur, next, mask);
		return -EINVAL;
	}
	err = sroce_qp_check_attr(qp, attr, mask);
	if (err)
		return err;

	if (mask & IB_QP_AV) {
		err = sroce_qp_set_av(qp, &attr->ah_attr);
		if (err)
			return err;
		qp->attr.ah_attr = attr->ah_attr;
	}
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC) {
		err = sroce_read_set_res(qp, attr->max_dest_rd_atomic);
		if (err)
			return err;
		qp->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	}

	spin_lock_bh(&qp->sq_lock);
	spin_lock(&qp->resp_lock);
	sroce_qp_apply_attr(qp, attr, mask);
	if (next == IB_QPS_RESET && cur != IB_QPS_RESET)
		sroce_transport_reset(qp);
	spin_unlock(&qp->resp_lock);
	spin_unlock_bh(&qp->sq_lock);

	if (mask & IB_QP_STATE)
		return sroce_qp_set_state(qp, cur, next);
	return 0;
}

int sroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	int err;

	if (udata && udata->inlen) {
		ibdev_dbg(ibqp->device, "modify_qp: QP %u: %zu bytes of driver data, sroce takes none\n",
			  ibqp->qp_num, udata->inlen);
		return -EOPNOTSUPP;
	}
	/* The core holds only a read lock on the QP: one modify at a time. */
	mutex_lock(&qp->modify_lock);
	err = sroce_modify_qp_locked(qp, attr, mask);
	mutex_unlock(&qp->modify_lock);
	return err;
}

int sroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init)
{
	struct sroce_qp *qp = to_sqp(ibqp);

	/* modify_qp writes qp->attr under this mutex. */
	mutex_lock(&qp->modify_lock);
	spin_lock_bh(&qp->state_lock);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	spin_unlock_bh(&qp->state_lock);
	mutex_unlock(&qp->modify_lock);

	attr->cap.max_send_wr = qp->sq.num_slots;
	attr->cap.max_recv_wr = sroce_qp_has_rq(qp) ? qp->rq.num_slots : 0;
	attr->cap.max_send_sge = qp->max_send_sge;
	attr->cap.max_recv_sge = sroce_qp_has_rq(qp) ? qp->max_recv_sge : 0;
	attr->cap.max_inline_data = qp->max_inline;
	attr->sq_draining = 0;

	memset(init, 0, sizeof(*init));
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->qp_type = ibqp->qp_type;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = IB_SIGNAL_REQ_WR;
	return 0;
}

/* Move the QP to the error state from the data path (e.g. a fatal NAK). */
/*
 * sroce_qp_flush - complete everything outstanding with WR_FLUSH_ERR
 *
 * A WQE already marked failed keeps its own status. Receive WQEs are
 * flushed too. Called when the QP is (or goes) in the error state.
 */
void sroce_qp_flush(struct sroce_qp *qp)
{
	sroce_sq_flush(qp);
	sroce_recv_flush(qp);
}

void sroce_qp_error(struct sroce_qp *qp)
{
	sroce_qp_async_error(qp, SROCE_NO_EVENT);
}

/**
 * sroce_qp_async_error - error state, reported by an affiliated async event
 * @qp: the QP
 * @event: IB_EVENT_QP_FATAL (e.g. a corrupt ring), IB_EVENT_QP_REQ_ERR or
 *	IB_EVENT_QP_ACCESS_ERR (a request the responder refused), or
 *	SROCE_NO_EVENT
 *
 * The event is dispatched once, by whoever moves the QP to the error state.
 */
void sroce_qp_async_error(struct sroce_qp *qp, enum ib_event_type event)
{
	bool changed = false;

	spin_lock_bh(&qp->state_lock);
	if (qp->state != IB_QPS_ERR && qp->state != IB_QPS_RESET) {
		sroce_qp_state_write(qp, IB_QPS_ERR);
		changed = true;
	}
	spin_unlock_bh(&qp->state_lock);
	if (!changed)
		return;
	sroce_qp_mark_error(qp, true);
	sroce_qp_event(qp, event);
	sroce_qp_flush(qp);
	if (qp->srq)
		sroce_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
}

void sroce_qp_fatal(struct sroce_qp *qp)
{
	sroce_qp_async_error(qp, IB_EVENT_QP_FATAL);
}

/* UD/UC send error: the send queue stops (SQE) and is flushed. */
void sroce_qp_sq_error(struct sroce_qp *qp)
{
	bool changed = false;

	spin_lock_bh(&qp->state_lock);
	if (qp->state == IB_QPS_RTS || qp->state == IB_QPS_SQD) {
		sroce_qp_state_write(qp, IB_QPS_SQE);
		changed = true;
	}
	spin_unlock_bh(&qp->state_lock);
	if (!changed)
		return;
	WRITE_ONCE(qp->sq.hdr->flags, SROCE_QUEUE_F_QP_ERR);
	/* As in sroce_qp_mark_error(): the flag before the flush. */
	smp_mb();
	sroce_sq_flush(qp);
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
	/* Nothing can queue behind a READ stream any more. */
	sroce_read_backlog_purge(qp);

	dst_cache_destroy(&qp->av.dst);
	kfree(qp->resp.res);
	sroce_qp_free_queues(qp);
	mutex_destroy(&qp->modify_lock);
	atomic_dec(&sdev->num_qp);
	return 0;
}
