/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Queue pairs.
 *
 * Contexts and locks
 * ------------------
 * - The requester (SQ -> packets) runs in process context only: inline from
 *   the post_send doorbell, or from qp->req_work. SROCE_QPF_REQ_RUNNING makes
 *   it single-threaded per QP; it alone fetches WQEs from the SQ ring into the
 *   kernel shadow, so a shadow WQE never changes under it.
 * - The completer (ACK/NAK/read response/atomic ACK handling) runs in softirq
 *   from the receive path and from the retransmit timer.
 * - @sq_lock (BH) protects what both share: the send state (req.*, comp.*)
 *   and the per-WQE status array. Packets are built outside it.
 * - The responder runs in softirq from the receive path; @resp_lock (BH)
 *   protects resp.*. Short READs are answered inline; long ones stream
 *   from qp->resp_work while later requests wait in resp.backlog.
 * - @state_lock (BH) protects state transitions; the data path reads
 *   qp->state with READ_ONCE and rechecks under its own lock. Only
 *   IB_EVENT_SQ_DRAINED's decision takes @sq_lock inside it (never the
 *   other way round), so that the event is sent while the QP is in SQD.
 *
 * Lifetime: the QP is in the device's qp_xa while it can receive; the
 * receive path takes @ref under RCU. destroy removes it from qp_xa, stops
 * the timers and works, then waits for @ref to drain.
 */
#ifndef SROCE_QP_H
#define SROCE_QP_H

#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/seqlock.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <net/dst_cache.h>
#include <rdma/ib_verbs.h>

#include "proto/sroce_completer.h"
#include "proto/sroce_gbn.h"
#include "proto/sroce_responder.h"
#include "proto/sroce_sendq.h"
#include "sroce_cc.h"

#include "sroce_queue.h"

struct sroce_dev;
struct sroce_cq;
struct sroce_mr;
struct sroce_srq;

/* Where packets go: the addresses and IP header fields of a path. */
struct sroce_path {
	union {
		__be32 v4;
		struct in6_addr v6;
	} saddr, daddr;
	u32 flow_label;
	u8 ipv6;
	u8 tos;			/* traffic class; ECN bits are ours */
	u8 ttl;			/* hop limit */
	u8 reserved;
};

/*
 * Resolved path to the peer: an RC QP's from the AH attributes at RTR (and
 * again at SQD->SQD); a UD QP's is the destination of the last WQE it sent
 * (the route cache then serves every packet to the same destination).
 *
 * @lock: the path and port change while packets are being sent and
 * received (modify_qp, the UD requester): writers take it with BHs off,
 * readers copy under its sequence count (sroce_av_read()). The route cache
 * is per CPU and used with BHs off only.
 */
struct sroce_av {
	seqlock_t lock;
	struct sroce_path p;
	u16 sport;		/* UDP source port, host order */
	struct dst_cache dst;	/* per-QP route cache */
};

/* A UD WQE's destination, resolved from its AH when the WQE is fetched. */
struct sroce_ud_dest {
	struct sroce_path path;
	u32 dqpn;
	u32 qkey;
};

/* Send WQE state, parallel to the shadow ring. */
/*
 * A QP's work that runs on sroce_wq (any CPU) or, once DCQCN paces the QP,
 * on sroce_pace_wq (the one CPU it sends from; see sroce_req_queue()). One
 * work_struct per workqueue: the workqueue keeps a work item from running
 * twice at once only within one workqueue, and cancel_work_sync() waits
 * only for the run on the workqueue it was last queued on. A single item
 * queued on both ran on both CPUs at once, and destroy_qp freed the QP
 * under the run it did not wait for.
 */
struct sroce_qp_work {
	struct work_struct any;		/* on sroce_wq */
	struct work_struct pace;	/* on sroce_pace_wq */
};

/* Responder resource for READ and atomics (replayed on duplicates). */
struct sroce_rd_res {
	u8 kind;		/* 0 free, 1 read, 2 atomic */
	/* PSNs (an atomic's: first = last); READ: its RETH and stream state */
	struct sroce_read_span span;
	u32 sent;		/* READ: bytes sent */
	struct ib_pd *pd;	/* READ: whose MRs (an XRC target's vary) */
	u32 xsrqn;		/* READ at an XRC target: the SRQ giving @pd */
	u64 atomic_orig;	/* atomic: the result to replay */
};

enum sroce_qp_flags {
	SROCE_QPF_REQ_RUNNING,
	SROCE_QPF_REQ_AGAIN,
	SROCE_QPF_DYING,
};

/*
 * A completer timer's wait, counted in steps of the time the host ran
 * (proto/sroce_gbn.h): the step armed at armed_j. running: a wait is under
 * way, also between a step's expiry and its handler (the timer is not
 * pending then, and a packet sent meanwhile must not start a new wait).
 */
struct sroce_comp_wait {
	unsigned long armed_j;
	struct sroce_wait w;
	bool running;
};

struct sroce_qp {
	struct ib_qp ibqp;
	struct sroce_dev *sdev;
	refcount_t ref;
	struct completion released;
	unsigned long flags;
	bool is_user;

	struct mutex modify_lock;	/* modify_qp and query_qp, serialised */
	spinlock_t state_lock;		/* state transitions */
	enum ib_qp_state state;
	struct ib_qp_attr attr;		/* last applied attributes */
	u32 mtu;			/* path MTU in bytes */
	struct sroce_av av;

	struct sroce_cq *scq;		/* NULL for an XRC target */
	struct sroce_cq *rcq;		/* NULL for XRC QPs */
	struct ib_xrcd *xrcd;		/* XRC target: its domain */

	/* send side */
	spinlock_t sq_lock;
	struct sroce_queue sq;		/* the ring (mapped for user QPs) */
	u8 *sq_shadow;			/* kernel copies of fetched WQEs */
	struct sroce_wqe_st *wst;
	struct sroce_ud_dest *ud_dest;	/* UD/GSI: per SQ slot */
	u32 max_send_sge;
	u32 max_inline;
	bool sq_sig_all;		/* IB_SIGNAL_ALL_WR */
	spinlock_t post_lock;		/* kernel post_send producers */
	struct sroce_qp_work req_work;
	struct {
		u32 fetched;		/* WQEs copied from the ring */
		u32 cur;		/* WQE being transmitted */
		u32 offset;		/* bytes of cur already sent */
		u32 psn;		/* next PSN to send */
		u32 psn_hi;		/* next PSN never sent before */
		u32 rd_atomic;		/* READ/atomic WQEs outstanding */
		/*
		 * The requester reads shadow slot busy_idx with sq_lock
		 * dropped (building a packet): a fetch must not refill it,
		 * even if a flush has retired it meanwhile.
		 */
		u32 busy_idx;
		bool busy;
		int cpu;		/* where the requester last ran */
	} req;
	struct {
		u32 idx;		/* oldest WQE not completed */
		u32 psn;		/* oldest PSN not acknowledged */
		u8 retry_cnt;
		u8 rnr_retry;
		u8 backoff;		/* ACK timeout doublings (sroce_gbn.h) */
		u8 probes;		/* tail loss probes since progress */
		bool rtt_on;		/* the round trip from rtt_psn is timed */
		bool progressed;	/* by the response being handled */
		bool waiting;		/* requests outstanding at heard_j */
		u32 rtt_psn;
		u64 rtt_ns;		/* when rtt_psn was sent */
		struct sroce_rtt rtt;
		unsigned long heard_j;	/* the last response came */
		unsigned long sent_j;	/* the last request packet left */
		unsigned long gap_j;	/* the gap before it, if waiting */
		/* The ACK timeout's and the probe's waits, in steps. */
		struct sroce_comp_wait retrans_wait;
		struct sroce_comp_wait probe_wait;
		u32 window;		/* PSNs the requester may have in flight */
		bool rnr_wait;
		bool sqd_notified;	/* IB_EVENT_SQ_DRAINED sent */
		/* Went back for a NAK of oldest PSN nak_psn, no progress since. */
		bool nak_rewound;
		u32 nak_psn;
		/* The READ whose responses are awaited (sroce_completer.h). */
		struct sroce_read_track rr;
		struct timer_list retrans_timer;
		struct timer_list probe_timer;
		struct timer_list rnr_timer;
	} comp;

	/* receive side */
	spinlock_t resp_lock;
	struct sroce_queue rq;		/* unused (1 slot) with an SRQ */
	struct sroce_srq *srq;
	u32 max_recv_sge;
	spinlock_t rq_post_lock;	/* kernel post_recv producers */
	struct sroce_qp_work resp_work;	/* streams long READs */
	struct {
		u32 epsn;		/* expected PSN */
		u32 msn;
		bool nak_sent;		/* one PSN-sequence NAK per gap */
		bool in_send;		/* inside a multi-packet SEND */
		bool in_write;		/* inside a multi-packet WRITE */
		bool uc_drop;		/* UC: dropping until a FIRST/ONLY */
		u8 *rwqe;		/* current receive WQE copy */
		bool rwqe_held;		/* rwqe taken, not yet completed */
		u32 rwqe_offset;	/* bytes of the SEND placed so far */
		u64 write_va;
		u32 write_rkey;
		u32 write_resid;
		u32 write_len;		/* RETH length of the current WRITE */
		/*
		 * Packets of the current SEND or WRITE placed ahead of ePSN
		 * (proto/sroce_responder.h): which, which of them asked for
		 * an ACK, and the message's LAST if it is among them.
		 */
		struct sroce_resp_ahead {
			u64 have;
			u64 ackreq;
			u32 last_psn;
			u32 last_len;
			u32 imm;
			u8 kind;	/* SROCE_KIND_SEND or _WRITE */
			bool last;
			bool last_se;
			bool last_imm;
		} ahead;
		/*
		 * XRC target: the SRQ the request being executed names (a
		 * reference, held for one packet) and the number the current
		 * SEND started with.
		 */
		struct sroce_srq *xsrq;
		u32 xsrqn;
		struct sroce_rd_res *res;
		u32 nres;		/* max_dest_rd_atomic slots */
		u32 res_head;		/* next slot to use */
		struct sroce_rd_res *stream;	/* READ being streamed */
		bool busy;		/* stream or backlog pending */
		int cpu;		/* where READ responses last went out */
		struct sk_buff_head backlog;	/* requests behind it */
		u32 backlog_bytes;		/* their truesize */
	} resp;

	struct sroce_cc_qp cc;		/* DCQCN, the pacer */
};

static inline struct sroce_qp *to_sqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct sroce_qp, ibqp);
}

/* READ and atomics: they complete with their response and use rd_atomic. */
static inline bool sroce_wqe_is_rd_atomic(u8 op)
{
	return sroce_wr_in(op, SROCE_WR_RD_ATOMIC_OPS);
}

static inline bool sroce_wqe_is_atomic(u8 op)
{
	return sroce_wr_in(op, SROCE_WR_ATOMIC_OPS);
}

/* Work requests that execute locally, without packets. */
static inline bool sroce_wqe_is_local(u8 op)
{
	return sroce_wr_in(op, SROCE_WR_LOCAL_OPS);
}

static inline void *sroce_sq_shadow(struct sroce_qp *qp, u32 idx)
{
	return qp->sq_shadow +
	       ((size_t)(idx & (qp->sq.num_slots - 1)) << qp->sq.slot_shift);
}

static inline bool sroce_qp_is_ud(const struct sroce_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI;
}

/* The work request opcodes this QP's type may post (include/sroce-abi.h). */
static inline u64 sroce_qp_wr_ops(const struct sroce_qp *qp)
{
	switch (qp->ibqp.qp_type) {
	case IB_QPT_RC:
	case IB_QPT_XRC_INI:
		return SROCE_WR_RC_OPS;
	case IB_QPT_UC:
		return SROCE_WR_UC_OPS;
	case IB_QPT_UD:
	case IB_QPT_GSI:
		return SROCE_WR_UD_OPS;
	default:
		return 0;	/* an XRC target has no send queue */
	}
}

/* XRC QPs: initiators only send, targets only respond. */
static inline bool sroce_qp_is_xrc(const struct sroce_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_XRC_INI ||
	       qp->ibqp.qp_type == IB_QPT_XRC_TGT;
}

/*
 * Has a send queue. An XRC target has none: the RDMA core creates it
 * without udata on behalf of a process, so it must never reach the
 * kernel-verbs post path, and there is nothing for it to post to.
 */
static inline bool sroce_qp_has_sq(const struct sroce_qp *qp)
{
	return qp->ibqp.qp_type != IB_QPT_XRC_TGT;
}

/* Has a receive queue of its own. */
static inline bool sroce_qp_has_rq(const struct sroce_qp *qp)
{
	return !qp->srq && !sroce_qp_is_xrc(qp);
}

static inline struct sroce_wqe_st *sroce_wst(struct sroce_qp *qp, u32 idx)
{
	return &qp->wst[idx & (qp->sq.num_slots - 1)];
}

/* The fetched WQEs not yet retired, as go-back-N walks them (sq_lock). */
static inline struct sroce_sendq sroce_qp_sendq(struct sroce_qp *qp)
{
	return (struct sroce_sendq){
		.st = qp->wst,
		.mask = qp->sq.num_slots - 1,
		.acked = qp->comp.idx,
		.fetched = qp->req.fetched,
	};
}

/* What a WQE's opcode makes it to the transport. */
static inline enum sroce_wqe_kind sroce_wqe_kind_of(u8 op)
{
	if (op == SROCE_WR_RDMA_READ)
		return SROCE_WQEK_READ;
	if (sroce_wqe_is_atomic(op))
		return SROCE_WQEK_ATOMIC;
	if (sroce_wqe_is_local(op))
		return SROCE_WQEK_LOCAL;
	return SROCE_WQEK_DATA;
}

/**
 * sroce_av_read - a consistent copy of a QP's path and UDP source port
 * @av: the QP's address vector
 * @p: filled with the path
 * @sport: filled with the source port
 *
 * Any context. Return: the sequence count the copy was made under (see
 * sroce_av_changed()).
 */
static inline unsigned int sroce_av_read(const struct sroce_av *av,
					 struct sroce_path *p, u16 *sport)
{
	unsigned int seq;

	do {
		seq = read_seqbegin(&av->lock);
		*p = av->p;
		*sport = av->sport;
	} while (read_seqretry(&av->lock, seq));
	return seq;
}

/* The path changed since the copy sroce_av_read() returned @seq for. */
static inline bool sroce_av_changed(const struct sroce_av *av,
				    unsigned int seq)
{
	return read_seqretry(&av->lock, seq);
}

struct sroce_qp *sroce_qp_get(struct sroce_dev *sdev, u32 qpn);
void sroce_qp_put(struct sroce_qp *qp);
/* enum ib_event_type starts at 0 (IB_EVENT_CQ_ERR): "no event" is -1. */
#define SROCE_NO_EVENT	((enum ib_event_type)-1)

/* sroce_qp.c: creation and teardown */
int sroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata);
int sroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
void sroce_transport_reset(struct sroce_qp *qp);

/* sroce_qp_state.c: the state machine */
int sroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata);
int sroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init);
void sroce_qp_error(struct sroce_qp *qp);
void sroce_qp_async_error(struct sroce_qp *qp, enum ib_event_type event);
void sroce_qp_fatal(struct sroce_qp *qp);
void sroce_qp_sq_error(struct sroce_qp *qp);
/* rdma res show qp -dd (sroce_res.c) */
int sroce_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int sroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int sroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);

/* The completer's state (sroce_comp.c, sroce_comp_timer.c) */

/* Nothing sent is unacknowledged, no WQE waits. sq_lock held. */
static inline bool sroce_comp_idle(const struct sroce_qp *qp)
{
	return qp->comp.psn == qp->req.psn && qp->comp.idx == qp->req.fetched;
}

/*
 * Whether a timer has anything to recover: some PSN ever sent is not
 * acknowledged. WQEs fetched but not started (held back by the window, the
 * READ/atomic limit or a fence; or by SQD, where none may start) wait for
 * the requester, not for the peer. sq_lock held.
 */
static inline bool sroce_comp_unacked(const struct sroce_qp *qp)
{
	return qp->comp.psn != qp->req.psn_hi;
}

#endif /* SROCE_QP_H */
