// SPDX-License-Identifier: GPL-2.0
/*
 * DCQCN congestion control, as RoCE NICs run it:
 *
 *  - notification point (NP): a RoCE packet that arrives CE-marked makes
 *    its QP send a CNP (opcode 0x81, BECN, 16 reserved bytes) back to the
 *    peer QP, at most one per min_time_between_cnps per QP;
 *  - reaction point (RP): a CNP cuts its QP's rate (proto/sroce_dcqcn.c);
 *    an hrtimer (rpg_time_reset) and the bytes sent raise it again until
 *    the QP is back at the line rate and no longer limited;
 *  - the pacer: while a QP is limited, its requester holds each packet to
 *    the current rate. When the next packet is not due yet the requester
 *    stops and an hrtimer kicks it at the due time: never a busy loop, and
 *    ACKs, retransmission and RNR timers run as before (a paced packet's
 *    ACK timeout starts when it is sent).
 *
 * The knobs are per device, in /sys/class/infiniband/DEV/dcqcn/, with
 * mlx5's names, defaults and units. A value is read at each event, so a
 * change applies from the next CNP, timer or packet on.
 */

#include <linux/device.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/skbuff.h>
#include <net/inet_ecn.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_netlink.h>
#include <rdma/restrack.h>
#include <net/netlink.h>

#include "sroce.h"
#include "sroce_cc.h"
#include "sroce_qp.h"
#include "sroce_stats.h"
#include "sroce_trace.h"
#include "sroce_transport.h"

static ktime_t sroce_cc_us(u32 us)
{
	return ns_to_ktime((u64)us * NSEC_PER_USEC);
}

static struct sroce_dcqcn_params *sroce_cc_params(struct sroce_qp *qp)
{
	return &qp->sdev->cc;
}

/*
 * The QP's rate was @old (kbit/s) before the reaction point's last event:
 * trace it if that changed it. cc.lock held.
 */
static void sroce_cc_trace_rate(struct sroce_qp *qp, u32 old,
				enum sroce_cc_cause cause)
{
	if (trace_sroce_rate_enabled() && qp->cc.rp.rc != old)
		trace_sroce_rate(qp, old, cause);
}

/* ---------------------------------------------------------------------- */
/* knobs: /sys/class/infiniband/DEV/dcqcn/<knob>                          */

static ssize_t sroce_cc_show(struct device *device,
			     struct device_attribute *attr, char *buf)
{
	struct sroce_dev *sdev = rdma_device_to_drv_device(device,
							   struct sroce_dev,
							   ib_dev);
	const struct sroce_dcqcn_knob *k = sroce_dcqcn_knob_find(attr->attr.name);

	if (!k) {
		ibdev_dbg(&sdev->ib_dev, "dcqcn: no knob named %s\n",
			  attr->attr.name);
		return -ENOENT;
	}
	return sysfs_emit(buf, "%u\n",
			  READ_ONCE(*sroce_dcqcn_knob_ptr(&sdev->cc, k)));
}

static ssize_t sroce_cc_store(struct device *device,
			      struct device_attribute *attr, const char *buf,
			      size_t count)
{
	struct sroce_dev *sdev = rdma_device_to_drv_device(device,
							   struct sroce_dev,
							   ib_dev);
	const struct sroce_dcqcn_knob *k = sroce_dcqcn_knob_find(attr->attr.name);
	u32 val;
	int err;

	if (!k) {
		ibdev_dbg(&sdev->ib_dev, "dcqcn: no knob named %s\n",
			  attr->attr.name);
		return -ENOENT;
	}
	err = kstrtou32(buf, 0, &val);
	if (err) {
		ibdev_dbg(&sdev->ib_dev, "dcqcn: %s: the value is not a number from 0 to %u (%d)\n",
			  k->name, U32_MAX, err);
		return -EINVAL;
	}
	if (sroce_dcqcn_knob_check(k, val)) {
		ibdev_dbg(&sdev->ib_dev, "dcqcn: %s: %u not in [%u, %u] %s\n",
			  k->name, val, k->min, k->max, k->unit);
		return -EINVAL;
	}
	WRITE_ONCE(*sroce_dcqcn_knob_ptr(&sdev->cc, k), val);
	return count;
}

/* One file per knob, named after it; filled in from the knob table. */
static struct device_attribute sroce_cc_dattrs[SROCE_DCQCN_NKNOBS];
static struct attribute *sroce_cc_attrs[SROCE_DCQCN_NKNOBS + 1];

const struct attribute_group sroce_cc_attr_group = {
	.name = "dcqcn",
	.attrs = sroce_cc_attrs,
};

/* Before any device is registered. */
int sroce_cc_module_init(void)
{
	unsigned int i;

	for (i = 0; i < SROCE_DCQCN_NKNOBS; i++) {
		struct device_attribute *a = &sroce_cc_dattrs[i];

		if (!sroce_dcqcn_knobs[i].name)
			return -EINVAL;
		sysfs_attr_init(&a->attr);
		a->attr.name = sroce_dcqcn_knobs[i].name;
		a->attr.mode = 0644;
		a->show = sroce_cc_show;
		a->store = sroce_cc_store;
		sroce_cc_attrs[i] = &a->attr;
	}
	return 0;
}

void sroce_cc_dev_init(struct sroce_dev *sdev, u32 line_mbps)
{
	sroce_dcqcn_params_default(&sdev->cc);
	sdev->line_kbps = line_mbps > U32_MAX / 1000 ? U32_MAX :
			  line_mbps * 1000;
}

/* ---------------------------------------------------------------------- */
/* per-QP state and the increase timer                                    */

static enum hrtimer_restart sroce_cc_inc_timeout(struct hrtimer *t)
{
	struct sroce_cc_qp *cc = container_of(t, struct sroce_cc_qp,
					      inc_timer);
	struct sroce_qp *qp = container_of(cc, struct sroce_qp, cc);
	const struct sroce_dcqcn_params *p = sroce_cc_params(qp);
	enum hrtimer_restart ret = HRTIMER_NORESTART;
	u32 old;

	spin_lock(&cc->lock);
	/* A CNP may have restarted it meanwhile: that one runs instead. */
	if (!cc->stopped && cc->rp.limited && !hrtimer_is_queued(t)) {
		old = cc->rp.rc;
		sroce_dcqcn_rp_timer(&cc->rp, p, ktime_get_ns());
		sroce_cc_trace_rate(qp, old, SROCE_CC_TIMER);
		WRITE_ONCE(cc->limited, cc->rp.limited);
		if (cc->rp.limited) {
			hrtimer_forward_now(t, sroce_cc_us(READ_ONCE(p->rpg_time_reset)));
			ret = HRTIMER_RESTART;
		}
	}
	spin_unlock(&cc->lock);
	return ret;
}

static enum hrtimer_restart sroce_cc_pace_timeout(struct hrtimer *t)
{
	struct sroce_cc_qp *cc = container_of(t, struct sroce_cc_qp,
					      pace_timer);
	struct sroce_qp *qp = container_of(cc, struct sroce_qp, cc);

	sroce_req_kick(qp, false);
	if (READ_ONCE(cc->resp_wait) && !test_bit(SROCE_QPF_DYING, &qp->flags))
		sroce_read_queue(qp);
	return HRTIMER_NORESTART;
}

void sroce_cc_qp_init(struct sroce_qp *qp)
{
	struct sroce_cc_qp *cc = &qp->cc;

	spin_lock_init(&cc->lock);
	hrtimer_setup(&cc->inc_timer, sroce_cc_inc_timeout, CLOCK_MONOTONIC,
		      HRTIMER_MODE_REL_SOFT);
	hrtimer_setup(&cc->pace_timer, sroce_cc_pace_timeout, CLOCK_MONOTONIC,
		      HRTIMER_MODE_ABS_SOFT);
	sroce_dcqcn_rp_init(&cc->rp, sroce_cc_params(qp), qp->sdev->line_kbps,
			    ktime_get_ns());
}

/* Back to the line rate (modify to RESET). May hold other QP locks. */
void sroce_cc_qp_reset(struct sroce_qp *qp)
{
	struct sroce_cc_qp *cc = &qp->cc;
	u32 old;

	spin_lock_bh(&cc->lock);
	old = cc->rp.rc;
	sroce_dcqcn_rp_init(&cc->rp, sroce_cc_params(qp), qp->sdev->line_kbps,
			    ktime_get_ns());
	sroce_cc_trace_rate(qp, old, SROCE_CC_RESET);
	WRITE_ONCE(cc->limited, false);
	WRITE_ONCE(cc->next_ns, 0);
	WRITE_ONCE(cc->resp_wait, false);
	cc->np_last_ns = 0;
	spin_unlock_bh(&cc->lock);
	/* A callback running now finds the QP unlimited and stops. */
	hrtimer_try_to_cancel(&cc->inc_timer);
	hrtimer_try_to_cancel(&cc->pace_timer);
}

/*
 * Destroy: after SROCE_QPF_DYING is set under sq_lock (the requester arms
 * the pacer only under sq_lock and not when dying). Sleeps.
 */
void sroce_cc_qp_stop(struct sroce_qp *qp)
{
	struct sroce_cc_qp *cc = &qp->cc;

	spin_lock_bh(&cc->lock);
	cc->stopped = true;
	spin_unlock_bh(&cc->lock);
	hrtimer_cancel(&cc->inc_timer);
	hrtimer_cancel(&cc->pace_timer);
}

/* ---------------------------------------------------------------------- */
/* notification point                                                     */

static bool sroce_cc_connected(const struct sroce_qp *qp)
{
	switch (qp->ibqp.qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_XRC_INI:
	case IB_QPT_XRC_TGT:
		return true;
	default:
		return false;
	}
}

/*
 * @qp received a CE-marked packet: tell its peer QP, unless a CNP went
 * there less than min_time_between_cnps ago. UD has no peer QP to name
 * (a CNP is per connection): counted as marked only. Softirq.
 */
void sroce_cc_np_ce(struct sroce_qp *qp)
{
	const struct sroce_dcqcn_params *p = sroce_cc_params(qp);
	struct sroce_txpkt tp = {};
	enum ib_qp_state state = READ_ONCE(qp->state);
	u64 now, last;

	if (!READ_ONCE(p->np_enable) || !sroce_cc_connected(qp) ||
	    state < IB_QPS_RTR || state == IB_QPS_ERR)
		return;
	now = ktime_get_ns();
	last = READ_ONCE(qp->cc.np_last_ns);
	if (!sroce_dcqcn_np_may_send(p, last, now) ||
	    cmpxchg64(&qp->cc.np_last_ns, last, now) != last)
		return;

	tp.pkt.bth.opcode = SROCE_OP_CNP;
	tp.pkt.bth.becn = 1;
	tp.pkt.bth.pkey = SROCE_DEFAULT_PKEY;
	tp.pkt.bth.dqpn = qp->attr.dest_qp_num;
	tp.cnp = true;
	if (sroce_tx_alloc(qp, &tp, GFP_ATOMIC)) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_TX_DROP);
		return;
	}
	if (!sroce_tx_send(qp, &tp)) {
		sroce_stat_inc(qp->sdev, SROCE_CNT_NP_CNP_SENT);
		trace_sroce_cnp_sent(qp);
	}
}

/* ---------------------------------------------------------------------- */
/* reaction point                                                         */

static bool sroce_cc_rp_qp(const struct sroce_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	switch (qp->ibqp.qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_XRC_INI:
	case IB_QPT_XRC_TGT:
		/*
		 * RTR too: a QP that only answers (perftest's servers stay in
		 * RTR; an XRC target QP has no requester at all) sends READ
		 * responses, which the pacer also holds to the QP's rate.
		 */
		return state == IB_QPS_RTR || state == IB_QPS_RTS ||
		       state == IB_QPS_SQD;
	default:
		return false;
	}
}

/*
 * A CNP arrived for QP @qpn, @qp (NULL: no such QP), ICRC, P_Key and source
 * address checked. Softirq; the caller holds the QP reference.
 */
void sroce_cc_cnp_rcv(struct sroce_dev *sdev, u32 qpn, struct sroce_qp *qp)
{
	const struct sroce_dcqcn_params *p = &sdev->cc;
	struct sroce_cc_qp *cc;
	bool handled = false;
	u32 old;

	if (!READ_ONCE(p->rp_enable) || !qp)
		goto out;
	cc = &qp->cc;
	if (sroce_cc_rp_qp(qp)) {
		spin_lock(&cc->lock);
		if (!cc->stopped) {
			old = cc->rp.rc;
			sroce_dcqcn_rp_cnp(&cc->rp, p, ktime_get_ns());
			sroce_cc_trace_rate(qp, old, SROCE_CC_CNP);
			WRITE_ONCE(cc->limited, cc->rp.limited);
			cc->cnps++;
			handled = true;
			if (cc->rp.limited && !hrtimer_is_queued(&cc->inc_timer))
				hrtimer_start(&cc->inc_timer,
					      sroce_cc_us(READ_ONCE(p->rpg_time_reset)),
					      HRTIMER_MODE_REL_SOFT);
		}
		spin_unlock(&cc->lock);
	}
out:
	sroce_stat_inc(sdev, handled ? SROCE_CNT_RP_CNP_HANDLED :
				       SROCE_CNT_RP_CNP_IGNORED);
	trace_sroce_cnp_rcvd(sdev, qpn, handled);
}

/* ---------------------------------------------------------------------- */
/* the pacer                                                              */

/*
 * When the limited QP's next packet is due (ktime_get_ns() clock), or 0
 * if it is due now or the reaction point is off.
 */
static u64 sroce_cc_due_at(struct sroce_qp *qp)
{
	u64 next = READ_ONCE(qp->cc.next_ns);

	if (!READ_ONCE(sroce_cc_params(qp)->rp_enable))
		return 0;
	return (s64)(next - ktime_get_ns()) > 0 ? next : 0;
}

/*
 * The QP is limited: true if its next packet is not due yet, with the
 * pacer armed to kick the requester when it is. sq_lock held.
 */
bool sroce_cc_pace_wait_slow(struct sroce_qp *qp)
{
	u64 next = sroce_cc_due_at(qp);

	if (!next)
		return false;
	if (!test_bit(SROCE_QPF_DYING, &qp->flags))
		hrtimer_start(&qp->cc.pace_timer, ns_to_ktime(next),
			      HRTIMER_MODE_ABS_SOFT);
	return true;
}

/*
 * The same for the responder's READ responses: one pacer clock per QP, so
 * requests and READ responses together keep to the QP's rate. The timer
 * then also queues resp_work. Armed under cc->lock, which the destroy path
 * takes to stop it (resp_lock is no guard against SROCE_QPF_DYING).
 * resp_lock held.
 */
bool sroce_cc_resp_wait_slow(struct sroce_qp *qp)
{
	struct sroce_cc_qp *cc = &qp->cc;
	u64 next = sroce_cc_due_at(qp);

	if (!next)
		return false;
	spin_lock(&cc->lock);
	WRITE_ONCE(cc->resp_wait, true);
	if (!cc->stopped)
		hrtimer_start(&cc->pace_timer, ns_to_ktime(next),
			      HRTIMER_MODE_ABS_SOFT);
	spin_unlock(&cc->lock);
	return true;
}

/* A packet of @wire_bytes goes out: while limited, space the next one. */
static void sroce_cc_account(struct sroce_qp *qp, u32 wire_bytes)
{
	struct sroce_cc_qp *cc = &qp->cc;
	u64 now = ktime_get_ns();
	u32 old;

	spin_lock(&cc->lock);
	/* Catch-up credit: see sroce_dcqcn_pace_next() */
	WRITE_ONCE(cc->next_ns, sroce_dcqcn_pace_next(cc->next_ns, now,
						      cc->rp.rc, wire_bytes));
	old = cc->rp.rc;
	sroce_dcqcn_rp_sent(&cc->rp, sroce_cc_params(qp), wire_bytes);
	sroce_cc_trace_rate(qp, old, SROCE_CC_BYTES);
	WRITE_ONCE(cc->limited, cc->rp.limited);
	spin_unlock(&cc->lock);
}

/*
 * The requester is sending a packet of @payload bytes, @wire_bytes on the
 * wire: account it, and while limited, space the next one by its time at
 * the current rate. sq_lock held (BHs off).
 */
void sroce_cc_sent(struct sroce_qp *qp, u32 payload, u32 wire_bytes)
{
	struct sroce_cc_qp *cc = &qp->cc;

	WRITE_ONCE(cc->tx_bytes, cc->tx_bytes + payload);
	if (READ_ONCE(cc->limited))
		sroce_cc_account(qp, wire_bytes);
}

/* The same for a READ response. resp_lock held (BHs off). */
void sroce_cc_resp_sent(struct sroce_qp *qp, u32 payload, u32 wire_bytes)
{
	struct sroce_cc_qp *cc = &qp->cc;

	WRITE_ONCE(cc->resp_tx_bytes, cc->resp_tx_bytes + payload);
	if (READ_ONCE(cc->limited))
		sroce_cc_account(qp, wire_bytes);
}

/* ---------------------------------------------------------------------- */
/* rdma res show qp -dd                                                   */

/*
 * The QP's DCQCN state as driver attributes of its "rdma res show qp -dd"
 * entry (inside the nest sroce_fill_res_qp_entry() opened), for QPs CNPs
 * can slow down (see sroce_cc_rp_qp()). 0 or -EMSGSIZE.
 */
int sroce_cc_fill_res_qp(struct sk_buff *msg, struct sroce_qp *qp)
{
	struct sroce_cc_qp *cc = &qp->cc;
	struct sroce_dcqcn_rp rp;
	u32 cnps;

	switch (qp->ibqp.qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_XRC_INI:
	case IB_QPT_XRC_TGT:
		break;
	default:
		return 0;
	}
	spin_lock_bh(&cc->lock);
	sroce_dcqcn_rp_alpha(&cc->rp, sroce_cc_params(qp), ktime_get_ns());
	rp = cc->rp;
	cnps = cc->cnps;
	spin_unlock_bh(&cc->lock);

	if (rdma_nl_put_driver_u32(msg, "dcqcn_limited", rp.limited) ||
	    rdma_nl_put_driver_u32(msg, "dcqcn_rate_mbps", rp.rc / 1000) ||
	    rdma_nl_put_driver_u32(msg, "dcqcn_target_mbps", rp.rt / 1000) ||
	    rdma_nl_put_driver_u32(msg, "dcqcn_alpha", rp.alpha) ||
	    rdma_nl_put_driver_u32(msg, "dcqcn_cnps", cnps) ||
	    rdma_nl_put_driver_u64(msg, "tx_bytes", READ_ONCE(cc->tx_bytes)) ||
	    rdma_nl_put_driver_u64(msg, "read_resp_tx_bytes",
				   READ_ONCE(cc->resp_tx_bytes)))
		return -EMSGSIZE;
	return 0;
}
