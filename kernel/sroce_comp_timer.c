// SPDX-License-Identifier: GPL-2.0
/*
 * sroce RC completer's timers: the ACK (retransmit) timeout with its
 * adaptive backoff, the tail loss probe before it, and the RNR wait. Each
 * goes back N (sroce_comp_rewind()) or ends the wait, and kicks the
 * requester; the rules are proto/sroce_gbn.h's. What responses mean is
 * sroce_comp.c's.
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
 * Time the next tail loss probe, if one may come: one jiffy more than the
 * wait, so that it never fires early at a tick. sq_lock held.
 */
static void sroce_comp_arm_probe(struct sroce_qp *qp)
{
	u64 pto = sroce_comp_pto_ns(qp);

	if (!pto || test_bit(SROCE_QPF_DYING, &qp->flags))
		return;
	qp->comp.probe_armed_j = jiffies;
	qp->comp.probe_rewait = false;
	mod_timer(&qp->comp.probe_timer,
		  jiffies + max_t(unsigned long, nsecs_to_jiffies(pto) + 1, 2));
}

/* Time the ACK timeout, and the tail loss probe before it. sq_lock held. */
static void sroce_comp_arm_retrans(struct sroce_qp *qp)
{
	u64 ns = sroce_rto_ns(qp->attr.timeout, qp->comp.backoff);

	if (!ns || test_bit(SROCE_QPF_DYING, &qp->flags))
		return;
	qp->comp.retrans_armed_j = jiffies;
	qp->comp.retrans_rewait = false;
	mod_timer(&qp->comp.retrans_timer,
		  jiffies + max_t(unsigned long, nsecs_to_jiffies(ns), 1));
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
		timer_delete(&qp->comp.retrans_timer);
		timer_delete(&qp->comp.probe_timer);
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
 * A timer @t armed at *@armed_j fired late, after a stall of this host
 * (sroce_gbn.h): the first time since it was armed, it waits its wait
 * again from now, and true is returned. sq_lock held.
 */
static bool sroce_comp_rewait(struct sroce_qp *qp, struct timer_list *t,
			      unsigned long *armed_j, bool *rewait)
{
	unsigned long wait = t->expires - *armed_j, late = 0;

	if (time_after(jiffies, t->expires))
		late = jiffies - t->expires;
	if (*rewait || test_bit(SROCE_QPF_DYING, &qp->flags) ||
	    !sroce_timer_stalled(min_t(unsigned long, late, U32_MAX),
				 min_t(unsigned long, wait, U32_MAX)))
		return false;
	sroce_stat_inc(qp->sdev, SROCE_CNT_TIMER_STALL);
	*rewait = true;
	*armed_j = jiffies;
	mod_timer(t, jiffies + wait);
	return true;
}

static void sroce_comp_retrans_timeout(struct timer_list *t)
{
	struct sroce_qp *qp = timer_container_of(qp, t, comp.retrans_timer);
	bool fatal = false;

	spin_lock_bh(&qp->sq_lock);
	if (!sroce_comp_sending(qp) || qp->comp.rnr_wait ||
	    sroce_comp_idle(qp) || !sroce_comp_unacked(qp) ||
	    timer_pending(t) ||
	    sroce_comp_rewait(qp, t, &qp->comp.retrans_armed_j,
			      &qp->comp.retrans_rewait)) {
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
	unsigned long due;
	u64 pto;

	spin_lock_bh(&qp->sq_lock);
	pto = sroce_comp_pto_ns(qp);
	if (!sroce_comp_sending(qp) || qp->comp.rnr_wait ||
	    sroce_comp_idle(qp) || !sroce_comp_unacked(qp) || !pto ||
	    timer_pending(t) ||
	    sroce_comp_rewait(qp, t, &qp->comp.probe_armed_j,
			      &qp->comp.probe_rewait)) {
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
	if (time_before(jiffies, due)) {
		if (!test_bit(SROCE_QPF_DYING, &qp->flags)) {
			qp->comp.probe_armed_j = qp->comp.sent_j;
			qp->comp.probe_rewait = false;
			mod_timer(&qp->comp.probe_timer, due);
		}
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
	qp->comp.rnr_wait = false;
	spin_unlock_bh(&qp->sq_lock);
	sroce_req_kick(qp, false);
}

/* The completer's timers, for a new QP. */
void sroce_comp_timers_init(struct sroce_qp *qp)
{
	timer_setup(&qp->comp.retrans_timer, sroce_comp_retrans_timeout, 0);
	timer_setup(&qp->comp.probe_timer, sroce_comp_probe_timeout, 0);
	timer_setup(&qp->comp.rnr_timer, sroce_comp_rnr_timeout, 0);
}
