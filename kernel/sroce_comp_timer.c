// SPDX-License-Identifier: GPL-2.0
/*
 * sroce RC completer's timers: the ACK (retransmit) timeout with its
 * adaptive backoff, the tail loss probe before it, and the RNR wait. Each
 * goes back N (sroce_comp_rewind()) or ends the wait, and kicks the
 * requester; the rules are proto/sroce_gbn.h's. The ACK timeout and the
 * probe count only the time this host ran: they wait in steps, and a step
 * that fires late does not count the stall (sroce_wait_step()). What
 * responses mean is sroce_comp.c's.
 */

#include <linux/jiffies.h>
#include <linux/timer.h>

#include "sroce.h"
#include "sroce_qp.h"
#include "sroce_stats.h"
#include "sroce_trace.h"
#include "sroce_transport.h"
#include "proto/sroce_completer.h"
#include "proto/sroce_gbn.h"
#include "proto/sroce_psn.h"

/*
 * The wait before the next tail loss probe (sroce_gbn.h), 0 if none may
 * come: PSNs sent and not acknowledged count whichever pass sent them, and
 * a QP that DCQCN paces is not probed. sq_lock held.
 */
static u64 sroce_comp_pto_ns(const struct sroce_qp *qp)
{
	return sroce_tlp_pto_ns(&qp->comp.rtt, qp->comp.probes,
				sroce_psn_diff(qp->req.psn_hi, qp->comp.psn),
				jiffies_to_nsecs(qp->comp.gap_j),
				sroce_rto_ns(qp->attr.timeout, qp->comp.backoff),
				READ_ONCE(qp->cc.limited));
}

/*
 * Start the wait of timer @t (@cw): @wait_j, in steps of the time the
 * host runs (proto/sroce_gbn.h). None once the QP is dying. sq_lock held.
 */
static void sroce_comp_wait_arm(struct sroce_qp *qp, struct timer_list *t,
				struct sroce_comp_wait *cw, unsigned long wait_j)
{
	unsigned long now = jiffies;

	if (test_bit(SROCE_QPF_DYING, &qp->flags))
		return;
	cw->armed_j = now;
	cw->running = true;
	mod_timer(t, now + sroce_wait_start(&cw->w, min_t(unsigned long,
							  wait_j, U32_MAX)));
}

/* Stop timer @t's wait (@cw). sq_lock held. */
static void sroce_comp_wait_stop(struct timer_list *t,
				 struct sroce_comp_wait *cw)
{
	timer_delete(t);
	cw->running = false;
}

/*
 * Timer @t fired: true if its wait is over; else its next step is armed
 * (a step that fired late, after a stall of this host, is counted in
 * stalled_timeouts). sq_lock held.
 */
static bool sroce_comp_wait_over(struct sroce_qp *qp, struct timer_list *t,
				 struct sroce_comp_wait *cw)
{
	unsigned long now = jiffies;
	u32 next = 0;

	switch (sroce_wait_step(&cw->w, min_t(unsigned long, now - cw->armed_j,
					      U32_MAX), &next)) {
	case SROCE_WAIT_OVER:
		cw->running = false;
		return true;
	case SROCE_WAIT_STALLED:
		sroce_stat_inc(qp->sdev, SROCE_CNT_TIMER_STALL);
		fallthrough;
	case SROCE_WAIT_ON:
		break;
	}
	if (test_bit(SROCE_QPF_DYING, &qp->flags)) {
		cw->running = false;
		return false;
	}
	cw->armed_j = now;
	mod_timer(t, now + next);
	return false;
}

/*
 * Time the next tail loss probe, if one may come: one jiffy more than the
 * wait, so that it never fires early at a tick. sq_lock held.
 */
static void sroce_comp_arm_probe(struct sroce_qp *qp)
{
	u64 pto = sroce_comp_pto_ns(qp);

	if (pto)
		sroce_comp_wait_arm(qp, &qp->comp.probe_timer,
				    &qp->comp.probe_wait,
				    max_t(unsigned long,
					  nsecs_to_jiffies(pto) + 1, 2));
}

/* Time the ACK timeout, and the tail loss probe before it. sq_lock held. */
static void sroce_comp_arm_retrans(struct sroce_qp *qp)
{
	u64 ns = sroce_rto_ns(qp->attr.timeout, qp->comp.backoff);

	if (!ns)
		return;
	sroce_comp_wait_arm(qp, &qp->comp.retrans_timer, &qp->comp.retrans_wait,
			    max_t(unsigned long, nsecs_to_jiffies(ns), 1));
	sroce_comp_arm_probe(qp);
}

/*
 * Do to the ACK timeout and the tail loss probe what proto/sroce_gbn.h
 * decided (@t). sq_lock held.
 */
void sroce_comp_timers(struct sroce_qp *qp, enum sroce_gbn_timer t)
{
	switch (t) {
	case SROCE_GBN_TIMER_KEEP:
		break;
	case SROCE_GBN_TIMER_PROBE:
		sroce_comp_arm_probe(qp);
		break;
	case SROCE_GBN_TIMER_RESTART:
		sroce_comp_arm_retrans(qp);
		break;
	case SROCE_GBN_TIMER_STOP:
		sroce_comp_wait_stop(&qp->comp.retrans_timer,
				     &qp->comp.retrans_wait);
		sroce_comp_wait_stop(&qp->comp.probe_timer,
				     &qp->comp.probe_wait);
		break;
	}
}

/*
 * A response was handled (@idle: nothing outstanding now; @fatal: it put
 * the QP in error): how long the peer was silent while the requester
 * waited, and the timers of what is outstanding. sq_lock held.
 */
void sroce_comp_heard(struct sroce_qp *qp, bool idle, bool fatal)
{
	qp->comp.gap_j = qp->comp.waiting ? jiffies - qp->comp.heard_j :
					    qp->comp.gap_j / 2;
	qp->comp.heard_j = jiffies;
	qp->comp.waiting = !idle;
	sroce_comp_timers(qp, sroce_gbn_timer_heard(idle, qp->comp.rnr_wait,
						    qp->comp.progressed,
						    fatal));
}

/*
 * Whether the QP's sent requests are still the completer's to recover:
 * in RTS, and in SQD, where what started before it must still complete
 * (a loss there is resent, or SQD would never drain).
 */
static bool sroce_comp_sending(struct sroce_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	return state == IB_QPS_RTS || state == IB_QPS_SQD;
}

/*
 * Whether the completer still has what its timers are about: requests sent
 * and not acknowledged, in a state that recovers them, no RNR wait.
 * sq_lock held.
 */
static bool sroce_comp_recovering(struct sroce_qp *qp)
{
	return sroce_comp_sending(qp) && !qp->comp.rnr_wait &&
	       !sroce_comp_idle(qp) && sroce_comp_unacked(qp);
}

/*
 * Timer @t (@cw) fired: true if its wait is over and what it is about
 * (@valid) still holds. A timer re-armed meanwhile (progress) goes on; one
 * whose cause is gone ends its wait. sq_lock held.
 */
static bool sroce_comp_timer_due(struct sroce_qp *qp, struct timer_list *t,
				 struct sroce_comp_wait *cw, bool valid)
{
	if (timer_pending(t))
		return false;
	if (!valid) {
		cw->running = false;
		return false;
	}
	return sroce_comp_wait_over(qp, t, cw);
}

static void sroce_comp_retrans_timeout(struct timer_list *t)
{
	struct sroce_qp *qp = timer_container_of(qp, t, comp.retrans_timer);
	bool fatal = false;

	spin_lock_bh(&qp->sq_lock);
	if (!sroce_comp_timer_due(qp, t, &qp->comp.retrans_wait,
				  sroce_comp_recovering(qp))) {
		spin_unlock_bh(&qp->sq_lock);
		return;
	}
	sroce_stat_inc(qp->sdev, SROCE_CNT_RETRANS_TIMEOUT);
	trace_sroce_timeout(qp);
	if (!sroce_retry_take(&qp->comp.retry_cnt)) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_RETRY_EXCEEDED);
		sroce_comp_fail_psn(qp, qp->comp.psn, IB_WC_RETRY_EXC_ERR);
		fatal = true;
	} else {
		u8 backoff = sroce_rto_backoff_next(qp->comp.backoff,
						    qp->attr.timeout,
						    qp->attr.retry_cnt);

		sroce_read_track_rewound(&qp->comp.rr);
		/*
		 * The peer may just be slower than the timeout: wait longer
		 * next time, and resend a little before the rest (sroce_gbn.h).
		 */
		if (backoff != qp->comp.backoff)
			sroce_stat_inc(qp->sdev, SROCE_CNT_ADP_RETRANS);
		qp->comp.backoff = backoff;
		if (sroce_gbn_window_restart(&qp->comp.window))
			sroce_stat_inc(qp->sdev, SROCE_CNT_SLOW_RESTART);
		sroce_comp_rewind(qp);
	}
	if (fatal)
		sroce_comp_retire(qp);
	spin_unlock_bh(&qp->sq_lock);

	if (fatal)
		sroce_qp_error(qp);
	else
		sroce_req_kick(qp, false);
}

/*
 * Nothing heard from the peer for a probe timeout: go back N like a
 * timeout, uncharged, resending at most a restart window (sroce_gbn.h).
 */
static void sroce_comp_probe_timeout(struct timer_list *t)
{
	struct sroce_qp *qp = timer_container_of(qp, t, comp.probe_timer);
	unsigned long due, now;
	u64 pto;

	spin_lock_bh(&qp->sq_lock);
	pto = sroce_comp_pto_ns(qp);
	if (!sroce_comp_timer_due(qp, t, &qp->comp.probe_wait,
				  sroce_comp_recovering(qp) && pto)) {
		spin_unlock_bh(&qp->sq_lock);
		return;
	}
	/*
	 * The tail is what nothing was sent after: a requester still sending
	 * (paced by DCQCN, or slow) waits a probe timeout after its newest
	 * packet, which its response cannot have beaten.
	 */
	due = qp->comp.sent_j + max_t(unsigned long,
				      nsecs_to_jiffies(pto) + 1, 2);
	now = jiffies;
	if (time_before(now, due)) {
		sroce_comp_wait_arm(qp, t, &qp->comp.probe_wait, due - now);
		spin_unlock_bh(&qp->sq_lock);
		return;
	}
	sroce_stat_inc(qp->sdev, SROCE_CNT_TLP);
	qp->comp.probes++;
	sroce_read_track_rewound(&qp->comp.rr);
	sroce_gbn_window_restart(&qp->comp.window);
	sroce_comp_rewind(qp);
	spin_unlock_bh(&qp->sq_lock);
	sroce_req_kick(qp, false);
}

static void sroce_comp_rnr_timeout(struct timer_list *t)
{
	struct sroce_qp *qp = timer_container_of(qp, t, comp.rnr_timer);

	spin_lock_bh(&qp->sq_lock);
	/* Armed again while this waited for the lock: that wait goes on. */
	if (timer_pending(t)) {
		spin_unlock_bh(&qp->sq_lock);
		return;
	}
	qp->comp.rnr_wait = false;
	spin_unlock_bh(&qp->sq_lock);
	sroce_req_kick(qp, false);
}

/*
 * The requester could not allocate a packet of an RC or XRC QP (sq_lock
 * held). Like an RNR NAK the peer did not send: the requester holds off
 * for a millisecond or more, and (@rewind) goes back N, uncharged. Not if
 * an RNR wait began meanwhile (it went back already), nor once the QP
 * stopped sending (a flush, a reset). True if the hold began.
 */
bool sroce_comp_nomem(struct sroce_qp *qp, bool rewind)
{
	if (!sroce_comp_sending(qp) || qp->comp.rnr_wait ||
	    test_bit(SROCE_QPF_DYING, &qp->flags))
		return false;
	qp->comp.rnr_wait = true;
	if (rewind) {
		sroce_read_track_rewound(&qp->comp.rr);
		sroce_comp_rewind(qp);
	}
	mod_timer(&qp->comp.rnr_timer, jiffies + msecs_to_jiffies(1) + 1);
	return true;
}

/* The completer's timers, for a new QP. */
void sroce_comp_timers_init(struct sroce_qp *qp)
{
	timer_setup(&qp->comp.retrans_timer, sroce_comp_retrans_timeout, 0);
	timer_setup(&qp->comp.probe_timer, sroce_comp_probe_timeout, 0);
	timer_setup(&qp->comp.rnr_timer, sroce_comp_rnr_timeout, 0);
}
