// SPDX-License-Identifier: GPL-2.0
/*
 * sroce kernel-verbs post paths: a kernel consumer's send and receive work
 * requests written into the QP's (unmapped) rings, in the ABI's WQE format,
 * so that the data path reads every QP's rings the same way. A user QP
 * never takes them: its process writes its own mapped rings, and
 * post_send is only its doorbell.
 */

#include "sroce.h"
#include "sroce_ah.h"
#include "sroce_qp.h"
#include "sroce_stats.h"
#include "sroce_transport.h"

/*
 * The work requests the kernel-verbs post path encodes (no memory windows
 * or ATOMIC_WRITE for kernel consumers): their IB_WR_* values go into the
 * ring as they are, so they must be the ABI's. The ABI's values are the
 * kernel's for the other two as well, which uverbs passes on as they are.
 */
#define SROCE_KVERBS_WR_OPS						\
	(SROCE_WR_RC_OPS & ~(SROCE_WR_BIT(SROCE_WR_BIND_MW) |		\
			     SROCE_WR_BIT(SROCE_WR_ATOMIC_WRITE)))
#define SROCE_SAME_WR(op) static_assert((int)IB_WR_##op == (int)SROCE_WR_##op)
SROCE_SAME_WR(RDMA_WRITE);
SROCE_SAME_WR(RDMA_WRITE_WITH_IMM);
SROCE_SAME_WR(SEND);
SROCE_SAME_WR(SEND_WITH_IMM);
SROCE_SAME_WR(RDMA_READ);
SROCE_SAME_WR(ATOMIC_CMP_AND_SWP);
SROCE_SAME_WR(ATOMIC_FETCH_AND_ADD);
SROCE_SAME_WR(LOCAL_INV);
SROCE_SAME_WR(SEND_WITH_INV);
SROCE_SAME_WR(REG_MR);
SROCE_SAME_WR(BIND_MW);
#if SROCE_HAVE_IB_WR_ATOMIC_WRITE
SROCE_SAME_WR(ATOMIC_WRITE);
#endif

/* Kernel verbs: write one send WR into the (unmapped) SQ ring. */
static int sroce_post_one_send(struct sroce_qp *qp, const struct ib_send_wr *wr)
{
	struct sroce_send_wqe *w;
	u32 prod = qp->sq.hdr->producer;
	u32 i, len = 0;

	if (prod - READ_ONCE(qp->sq.hdr->consumer) >= qp->sq.num_slots)
		return -ENOMEM;
	if (wr->num_sge > qp->max_send_sge)
		return -EINVAL;
	/* What this QP type may post (the ABI's table), that this path encodes. */
	if (!sroce_wr_in(wr->opcode, sroce_qp_wr_ops(qp) & SROCE_KVERBS_WR_OPS))
		return -EINVAL;

	w = sroce_queue_slot(&qp->sq, prod);
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->flags = wr->send_flags & (SROCE_SEND_FENCE | SROCE_SEND_SIGNALED |
				     SROCE_SEND_SOLICITED | SROCE_SEND_INLINE);
	if (wr->opcode == IB_WR_SEND_WITH_INV ||
	    wr->opcode == IB_WR_LOCAL_INV)
		w->imm_or_inv = wr->ex.invalidate_rkey;
	else if (wr->opcode == IB_WR_REG_MR)
		w->imm_or_inv = reg_wr(wr)->access;
	else
		w->imm_or_inv = (__force u32)wr->ex.imm_data;
	if (wr->opcode == IB_WR_RDMA_WRITE ||
	    wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM ||
	    wr->opcode == IB_WR_RDMA_READ) {
		w->remote_addr = rdma_wr(wr)->remote_addr;
		w->rkey = rdma_wr(wr)->rkey;
	} else if (wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
		   wr->opcode == IB_WR_ATOMIC_FETCH_AND_ADD) {
		w->remote_addr = atomic_wr(wr)->remote_addr;
		w->rkey = atomic_wr(wr)->rkey;
		w->compare_add = atomic_wr(wr)->compare_add;
		w->swap = atomic_wr(wr)->swap;
	}

	if (wr->opcode == IB_WR_REG_MR) {
		/* By index: the data path checks it is this PD's fast-reg MR. */
		w->remote_addr = reg_wr(wr)->mr->lkey >> 8;
		w->rkey = reg_wr(wr)->key;
		w->num_sge = 0;
	}
	if (sroce_qp_is_ud(qp)) {
		w->ah = to_sah(ud_wr(wr)->ah)->ah_num;
		w->remote_qpn = ud_wr(wr)->remote_qpn;
		w->remote_qkey = ud_wr(wr)->remote_qkey;
	}

	if (wr->send_flags & IB_SEND_INLINE) {
		u8 *dst = (u8 *)w + SROCE_SEND_WQE_HDR_SIZE;

		for (i = 0; i < wr->num_sge; i++) {
			/* len <= max_inline here: no wrap-around. */
			if (wr->sg_list[i].length > qp->max_inline - len)
				return -EINVAL;
			memcpy(dst + len,
			       (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			len += wr->sg_list[i].length;
		}
		w->inline_len = len;
	} else {
		struct sroce_sge *sge = (void *)((u8 *)w +
						 SROCE_SEND_WQE_HDR_SIZE);

		for (i = 0; i < wr->num_sge; i++) {
			sge[i].addr = wr->sg_list[i].addr;
			sge[i].length = wr->sg_list[i].length;
			sge[i].lkey = wr->sg_list[i].lkey;
		}
		w->num_sge = wr->num_sge;
	}
	/* Publish the WQE before the requester can see the index. */
	smp_store_release(&qp->sq.hdr->producer, prod + 1);
	return 0;
}

int sroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	unsigned long flags;
	int err = 0;

	/*
	 * An XRC target has no send queue. It is also the one QP a process
	 * owns that the core created without udata (is_user is false), and
	 * ib_uverbs_post_send hands a process's WRs to it unchanged: they
	 * must never reach the kernel-verbs path below.
	 */
	if (!sroce_qp_has_sq(qp)) {
		*bad_wr = wr;
		return -EINVAL;
	}
	/* A user QP's doorbell: the WQEs are already in the mapped ring. */
	if (qp->is_user) {
		if (wr)
			return -EINVAL;
		sroce_stat_inc(qp->sdev, SROCE_CNT_SQ_DOORBELL);
		sroce_req_kick(qp, true);
		return 0;
	}
	if (READ_ONCE(qp->state) < IB_QPS_RTS &&
	    READ_ONCE(qp->state) != IB_QPS_ERR) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&qp->post_lock, flags);
	for (; wr; wr = wr->next) {
		err = sroce_post_one_send(qp, wr);
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	spin_unlock_irqrestore(&qp->post_lock, flags);
	sroce_req_kick(qp, false);
	return err;
}

int sroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	unsigned long flags;
	int err = 0;

	if (qp->is_user || !sroce_qp_has_rq(qp)) {
		*bad_wr = wr;
		return qp->is_user ? -EOPNOTSUPP : -EINVAL;
	}

	spin_lock_irqsave(&qp->rq_post_lock, flags);
	err = sroce_queue_post_recv(&qp->rq, qp->max_recv_sge, wr, bad_wr);
	spin_unlock_irqrestore(&qp->rq_post_lock, flags);
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		sroce_qp_flush(qp);
	return err;
}
