// SPDX-License-Identifier: GPL-2.0
/*
 * sroce queue pairs' state machine: modify_qp (attributes checked, then
 * stored by the QP and by each transport part, then the state change and
 * what entering the new state takes), query_qp, and the transitions the
 * data path makes (to the error state, with its async event; UD/UC's send
 * queue error). Creation and teardown are sroce_qp.c's.
 */

#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>

#include "sroce.h"
#include "sroce_ah.h"
#include "sroce_param.h"
#include "sroce_qp.h"
#include "sroce_srq.h"
#include "sroce_trace.h"
#include "sroce_transport.h"
#include "proto/sroce_udp.h"

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
		qp->attr.rq_psn = sroce_psn_mask(attr->rq_psn);
	if (mask & IB_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_SQ_PSN)
		qp->attr.sq_psn = sroce_psn_mask(attr->sq_psn);
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
	/*
	 * Left SQE or ERR: a flush that saw the old state under its lock
	 * (sroce_sq_flush(), sroce_recv_flush()) ends before the consumer,
	 * told the move is done, can post anything it must not take.
	 */
	if ((cur == IB_QPS_SQE || cur == IB_QPS_ERR) && next != cur) {
		spin_lock_bh(&qp->sq_lock);
		spin_lock(&qp->resp_lock);
		spin_unlock(&qp->resp_lock);
		spin_unlock_bh(&qp->sq_lock);
	}
	if (next == IB_QPS_ERR)
		sroce_qp_flush(qp);
	if (next == IB_QPS_ERR && cur != IB_QPS_ERR && qp->srq)
		sroce_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
	/*
	 * Entered SQD: drained already? The completer may have seen the new
	 * state first and sent the event; sqd_notified says so, and only a
	 * move to another state clears it (sroce_comp_sqd_end()), so the
	 * event goes out once either way.
	 */
	if (next == IB_QPS_SQD && cur != IB_QPS_SQD)
		sroce_comp_sqd_check(qp);
	/* From any state: SQD, or SQE/ERR the data path moved it to from SQD. */
	if (next != IB_QPS_SQD)
		sroce_comp_sqd_end(qp);
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

/* Move the QP to the error state from the data path (e.g. a fatal NAK). */
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
