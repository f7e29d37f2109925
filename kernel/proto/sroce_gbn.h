/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Go-back-N pacing beyond the IBTA minimum: what a requester does after a
 * timeout so that a peer slower than the QP's ACK timeout is not buried
 * under retransmissions of what it already has.
 *
 * - Adaptive retransmission: each timeout at the same PSN doubles the next
 *   wait, and any progress goes back to the IBTA value (4.096 us x
 *   2^timeout). The wait doubles SROCE_RTO_MIN_BACKOFF times, or more while
 *   it stays within SROCE_RTO_GROW_NS, and never more often than the QP's
 *   retry count: it never exceeds the IBTA value x 2^retry_cnt the user
 *   asked for. A short timeout (1 ms: the network is fast) is what a peer
 *   whose CPU is busy elsewhere for a few tens of ms outlasts; it may grow
 *   up to SROCE_RTO_GROW_NS, where a long one (67 ms) grows only 8-fold.
 * - Slow restart: after a timeout the requester resends at most
 *   SROCE_GBN_RESTART_WINDOW PSNs beyond the oldest unacknowledged one, and
 *   the window doubles with each ACK that makes progress, up to
 *   SROCE_GBN_MAX_WINDOW. A sequence NAK (a loss, not a slow peer) keeps the
 *   window as it is.
 *
 * mlx5 calls these adaptive retransmission and slow restart, and counts
 * them as roce_adp_retrans and roce_slow_restart; so does sroce.
 */
#ifndef SROCE_GBN_H
#define SROCE_GBN_H

#include "sroce_aeth.h"
#include "sroce_psn.h"

/* PSNs in flight beyond the oldest unacknowledged one, at most. */
#define SROCE_GBN_MAX_WINDOW		512
/* ... and right after a timeout. */
#define SROCE_GBN_RESTART_WINDOW	16
/* Doublings of the ACK timeout allowed whatever the timeout... */
#define SROCE_RTO_MIN_BACKOFF		3
/* ...and more while the wait stays within this (timeout 15's, 134 ms)... */
#define SROCE_RTO_GROW_NS		(4096ull << 15)
/* ...but never more than the largest retry count (3 bits). */
#define SROCE_RTO_MAX_BACKOFF		7

/*
 * Tail loss probes. A packet lost with nothing sent after it (a READ
 * request, a message's last packet, its ACK, a sequence NAK, the resend
 * of a hole) shows itself to no one: go-back-N learns of it at the ACK
 * timeout, which RDMA CM sets to seconds on RoCE. So when nothing has been
 * heard from the peer, and nothing sent to it (a requester that DCQCN
 * paces is still sending its tail), for a probe timeout, PTO = 2 srtt +
 * 4 rttvar of the
 * measured round trip (RFC 6298's estimator; at least SROCE_TLP_MIN_NS,
 * TCP's floor, and twice the last gap between two responses that came
 * while the requester waited: a peer that paces its READ responses is not
 * asked again between two of them), the requester goes back to the oldest
 * unacknowledged PSN as after a timeout, but without charging the retry
 * count or backing the timeout off, and with at most
 * SROCE_GBN_RESTART_WINDOW PSNs resent. It
 * probes only the tail of what it sent: with at most SROCE_TLP_INFLIGHT
 * PSNs outstanding (a longer burst reveals a loss by the packets after it,
 * and a peer that is slow to drain one must not be sent it again). Each
 * further probe waits twice as long; there are at most SROCE_TLP_MAX in a
 * row without progress, and only while a probe comes well before the ACK
 * timeout (twice its wait is within it), which stays the judge of a dead
 * peer. What goes on the wire is what a timeout sends: IRN's RTO_low and
 * TCP's tail loss probe are the models.
 */
#define SROCE_TLP_MIN_NS	10000000ull	/* 10 ms */
#define SROCE_TLP_MAX		3
#define SROCE_TLP_INFLIGHT	SROCE_GBN_RESTART_WINDOW

/* Round-trip estimate in µs; srtt_us 0: no sample yet. */
struct sroce_rtt {
	u32 srtt_us;
	u32 rttvar_us;
};

/* Add a round-trip sample of @us µs (RFC 6298 2.2, 2.3). */
static inline void sroce_rtt_sample(struct sroce_rtt *r, u32 us)
{
	u32 diff;

	if (!us)
		us = 1;
	if (!r->srtt_us) {
		r->srtt_us = us;
		r->rttvar_us = us / 2;
		return;
	}
	diff = r->srtt_us > us ? r->srtt_us - us : us - r->srtt_us;
	r->rttvar_us = r->rttvar_us - r->rttvar_us / 4 + diff / 4;
	r->srtt_us = r->srtt_us - r->srtt_us / 8 + us / 8;
	if (!r->srtt_us)
		r->srtt_us = 1;
}

/*
 * The wait before probe number @probes + 1, in ns, with @inflight PSNs
 * outstanding, the last response gap @gap_ns and ACK timeout @rto_ns; 0:
 * no probe (no round trip measured yet, nothing or too much outstanding,
 * SROCE_TLP_MAX sent, the timeout is too short for probes to come well
 * before it, or DCQCN @paced the requester: its round trip is then that of
 * a queue the network marks as congested, which moves faster than the
 * estimator follows, and a probe would resend into that queue what it
 * holds - loss-free incasts showed spurious probes, each resending packets
 * that had only been queued).
 */
static inline u64 sroce_tlp_pto_ns(const struct sroce_rtt *r, u8 probes,
				   s32 inflight, u64 gap_ns, u64 rto_ns,
				   bool paced)
{
	u64 ns;

	if (paced || !r->srtt_us || probes >= SROCE_TLP_MAX || inflight < 1 ||
	    inflight > SROCE_TLP_INFLIGHT)
		return 0;
	ns = (2ull * r->srtt_us + 4ull * r->rttvar_us) * 1000;
	if (ns < SROCE_TLP_MIN_NS)
		ns = SROCE_TLP_MIN_NS;
	if (ns < 2 * gap_ns)
		ns = 2 * gap_ns;
	ns <<= probes;
	return 2 * ns <= rto_ns ? ns : 0;
}

/*
 * A stalled host. An ACK timeout or probe that counts the time that passed
 * counts as the peer's silence a time when its own CPU did not run: a VM
 * whose vCPU the hypervisor descheduled (steal time), a guest stopped for
 * a migration or a debugger. When the host runs again its timers fire
 * before NET_RX, while the response may still wait in a receive queue.
 *
 * So these timers count only time the host ran. A wait of @wait_j ticks
 * runs in steps of a quarter of it (at least one tick). A step that fires
 * late, by more than an eighth of the step plus a tick (the timer wheel's
 * own slack: a tick below 63 ticks; above, a level's granularity, which is
 * at most that: 8 ticks from 63, 64 from 504), counts as the step it was
 * meant to be, not as the time that passed: the host did not run for the
 * rest. And after a late step at least one more step is waited, once per
 * wait, so that a stall near the end of a wait leaves the receive path
 * time to hand over what waited in it. A silent peer is still found after at most the wait plus
 * one step of the host's running time: every step counts at least a tick.
 */
struct sroce_wait {
	u32 left;	/* ticks of the wait still to run */
	u32 step;	/* ticks per step */
	bool graced;	/* a late step already added a step */
};

enum sroce_wait_verdict {
	SROCE_WAIT_OVER,	/* the wait ran out: the timer's action */
	SROCE_WAIT_ON,		/* arm the next step */
	SROCE_WAIT_STALLED,	/* the same, after a late step */
};

/* Start a wait of @wait_j ticks; the first step's ticks are returned. */
static inline u32 sroce_wait_start(struct sroce_wait *w, u32 wait_j)
{
	w->left = wait_j ? wait_j : 1;
	w->step = w->left / 4 + (w->left % 4 != 0);
	w->graced = false;
	return w->step;
}

/* The ticks of the step to arm now: a whole one, or what is left. */
static inline u32 sroce_wait_next(const struct sroce_wait *w)
{
	return w->step < w->left ? w->step : w->left;
}

/*
 * The step armed last fired @ran_j ticks after it was armed. Unless the
 * wait is over, *@next_j is the next step's ticks.
 */
static inline enum sroce_wait_verdict
sroce_wait_step(struct sroce_wait *w, u32 ran_j, u32 *next_j)
{
	u32 step = sroce_wait_next(w);
	bool late = ran_j > step && ran_j - step > step / 8 + 1;
	u32 done = late ? step : ran_j ? ran_j : 1;

	w->left -= done < w->left ? done : w->left;
	if (late && !w->graced && w->left < w->step) {
		w->left = w->step;
		w->graced = true;
	}
	if (!w->left)
		return SROCE_WAIT_OVER;
	*next_j = sroce_wait_next(w);
	return late ? SROCE_WAIT_STALLED : SROCE_WAIT_ON;
}

/* What one response means for the requester: the completer's verdict. */
enum sroce_comp_verdict {
	SROCE_COMP_OK,		/* progress, or nothing (a stale or bad response) */
	SROCE_COMP_RETRY,	/* go back: resend from the oldest unacknowledged PSN */
	SROCE_COMP_FATAL,	/* a WQE completed in error: the QP goes to error */
};

/*
 * The ACK timeout in ns after @backoff doublings, for the QP's timeout
 * exponent @timeout (0: no timer, and 0 is returned).
 */
static inline u64 sroce_rto_ns(u8 timeout, u8 backoff)
{
	u64 ns = sroce_ack_timeout_ns(timeout);

	if (backoff > SROCE_RTO_MAX_BACKOFF)
		backoff = SROCE_RTO_MAX_BACKOFF;
	return ns << backoff;
}

/*
 * How many doublings the wait of a QP with ACK timeout exponent @timeout and
 * retry count @retry_cnt (as the user set them) may take.
 */
static inline u8 sroce_rto_max_backoff(u8 timeout, u8 retry_cnt)
{
	u64 ns = sroce_ack_timeout_ns(timeout);
	u8 max = SROCE_RTO_MIN_BACKOFF;

	while (max < SROCE_RTO_MAX_BACKOFF &&
	       (ns << (max + 1)) <= SROCE_RTO_GROW_NS)
		max++;
	return retry_cnt < max ? retry_cnt : max;
}

/* The backoff after one more timeout at the same PSN. */
static inline u8 sroce_rto_backoff_next(u8 backoff, u8 timeout, u8 retry_cnt)
{
	u8 max = sroce_rto_max_backoff(timeout, retry_cnt);

	return backoff < max ? backoff + 1 : max;
}

/*
 * Is the window full: is @next, the next new PSN to send, @window or more
 * PSNs past @oldest, the oldest unacknowledged one? The requester then
 * waits for an ACK.
 */
static inline bool sroce_gbn_window_full(u32 next, u32 oldest, u32 window)
{
	return sroce_psn_diff(next, oldest) >= (s32)window;
}

/*
 * Going back N after an ACK timeout or a tail loss probe: at most a
 * restart window in flight (slow restart). True if @window shrank, which
 * after a timeout the QP counts as a slow restart.
 */
static inline bool sroce_gbn_window_restart(u32 *window)
{
	if (*window <= SROCE_GBN_RESTART_WINDOW)
		return false;
	*window = SROCE_GBN_RESTART_WINDOW;
	return true;
}

/* The window after an ACK that made progress. */
static inline u32 sroce_gbn_window_grow(u32 window)
{
	if (window < SROCE_GBN_RESTART_WINDOW)
		return SROCE_GBN_RESTART_WINDOW;
	return window >= SROCE_GBN_MAX_WINDOW / 2 ? SROCE_GBN_MAX_WINDOW :
						   window * 2;
}

/* Ask for an ACK at least this often inside long messages. */
#define SROCE_ACKREQ_EVERY	64

/*
 * Must the packet of PSN @psn ask for an ACK? The last packet of a message
 * does; so does every @every-th packet of a long one (counted from its
 * first PSN @first), and the packet that fills the window (@oldest is the
 * oldest unacknowledged PSN): the requester stops there, and the peer must
 * answer it even if it is a duplicate (a responder ACKs duplicates only
 * when asked to).
 */
static inline bool sroce_gbn_ack_req(u32 psn, u32 first, u32 oldest,
				     u32 window, u32 every, bool last)
{
	u32 in_msg = ((psn - first) & 0xffffff) + 1;
	u32 in_flight = ((psn - oldest) & 0xffffff) + 1;

	return last || !(in_msg % every) || in_flight >= window;
}

/*
 * What the requester does with its two timers, the ACK timeout and the
 * tail loss probe before it, after it sent a packet or heard a response.
 */
enum sroce_gbn_timer {
	SROCE_GBN_TIMER_KEEP,		/* leave both as they are */
	SROCE_GBN_TIMER_PROBE,		/* leave the ACK timeout, time a probe */
	SROCE_GBN_TIMER_RESTART,	/* time the ACK timeout afresh, and a probe */
	SROCE_GBN_TIMER_STOP,		/* stop both */
};

/*
 * After sending an acknowledged (RC) packet that asks for an ACK
 * (@ack_req) or not, sent before (@resent: below the highest PSN ever
 * sent) or new, with the ACK timeout running (@rto_running) or not. The
 * ACK timeout runs from the newest packet that asks for an ACK: timing
 * from the oldest would fire in the middle of a long, healthy burst on a
 * slow host, and a packet lost before it still gets a sequence NAK. But
 * what a probe, a NAK or an implied NAK resends leaves a running timeout
 * where it was: only progress pushes it back (sroce_gbn_timer_heard()), so
 * responses that only ever make the requester resend - forged, or from a
 * peer gone - cannot keep the QP from timing out. What the timeout itself
 * resends (it is not running then) starts it again.
 */
static inline enum sroce_gbn_timer sroce_gbn_timer_sent(bool ack_req,
							bool resent,
							bool rto_running)
{
	if (!rto_running)
		return SROCE_GBN_TIMER_RESTART;
	if (!ack_req)
		return SROCE_GBN_TIMER_KEEP;
	return resent ? SROCE_GBN_TIMER_PROBE : SROCE_GBN_TIMER_RESTART;
}

/*
 * After a response was handled: nothing is outstanding any more (@idle),
 * an RNR NAK made the requester wait (@rnr_wait), the response
 * acknowledged something new (@progressed), it put the QP in error
 * (@fatal). Only progress pushes the ACK timeout back: a stale, duplicate
 * or forged response must not keep a QP whose peer is gone from ever
 * timing out. What a NAK makes the requester resend times itself
 * (sroce_gbn_timer_sent()); an RNR wait is the RNR timer's, and what it
 * resends times itself too.
 */
static inline enum sroce_gbn_timer sroce_gbn_timer_heard(bool idle,
							 bool rnr_wait,
							 bool progressed,
							 bool fatal)
{
	if (idle || rnr_wait)
		return SROCE_GBN_TIMER_STOP;
	return progressed && !fatal ? SROCE_GBN_TIMER_RESTART :
				      SROCE_GBN_TIMER_KEEP;
}

/* Where the oldest unacknowledged WQE resumes after going back N. */
struct sroce_gbn_resume {
	u32 psn;	/* the first PSN to send again */
	u32 offset;	/* at this byte of the message */
};

/*
 * The oldest unacknowledged PSN is @oldest, inside or before the WQE whose
 * PSNs start at @first_psn (a message of @len bytes). A SEND or WRITE
 * resumes at the packet of @oldest: the peer has the ones before it. A
 * READ of which whole MTUs arrived in order (@resid of @len bytes still
 * missing) asks for the rest only, from the first missing response's PSN
 * (C9-106), or a lossy path might never let a long READ through; any other
 * READ or atomic (@rd_atomic) restarts whole, at its first PSN.
 */
static inline struct sroce_gbn_resume
sroce_gbn_resume(bool is_read, bool rd_atomic, u32 len, u32 resid,
		 u32 first_psn, u32 oldest, u32 mtu)
{
	struct sroce_gbn_resume r = { .psn = first_psn, .offset = 0 };
	s32 d = sroce_psn_diff(oldest, first_psn);

	if (is_read && resid && resid < len) {
		r.offset = len - resid;
		r.psn = sroce_psn_add(first_psn, r.offset / mtu);
	} else if (!rd_atomic && d > 0) {
		r.offset = (u32)d * mtu;
		r.psn = oldest;
	}
	return r;
}

#endif /* SROCE_GBN_H */
