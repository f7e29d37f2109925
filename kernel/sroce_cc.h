/* SPDX-License-Identifier: GPL-2.0 */
/*
 * DCQCN congestion control (sroce_cc.c): the notification point (a CNP back
 * for CE-marked packets), the reaction point (per-QP rate from CNPs, with its
 * increase timer) and the requester's pacer. The arithmetic is in
 * proto/sroce_dcqcn.c.
 */
#ifndef SROCE_CC_H
#define SROCE_CC_H

#include <linux/hrtimer.h>
#include <linux/spinlock.h>
#include <linux/types.h>

#include "proto/sroce_dcqcn.h"

struct sroce_dev;
struct sroce_qp;
struct sroce_pkt;
struct sk_buff;
struct ib_qp;

/* Per QP. */
struct sroce_cc_qp {
	spinlock_t lock;		/* rp, stopped; inner to sq_lock */
	struct sroce_dcqcn_rp rp;
	struct hrtimer inc_timer;	/* rpg_time_reset, while limited */
	struct hrtimer pace_timer;	/* wakes the paced requester/responder */
	u64 next_ns;			/* pacer: the QP's next packet's time */
	u64 np_last_ns;			/* NP: last CNP sent to the peer */
	u64 tx_bytes;			/* requester payload bytes sent */
	u64 resp_tx_bytes;		/* READ response payload bytes sent */
	bool resp_wait;			/* a READ stream waits for the pacer */
	u32 cnps;			/* CNPs the RP handled */
	bool limited;			/* rp.limited, for lockless readers */
	bool stopped;			/* destroyed: no timer rearms */
};

/* What changed a QP's rate (the sroce_rate tracepoint). */
enum sroce_cc_cause {
	SROCE_CC_CNP,		/* a CNP cut it */
	SROCE_CC_TIMER,		/* the increase timer raised it */
	SROCE_CC_BYTES,		/* the byte counter raised it */
	SROCE_CC_RESET,		/* modify to RESET: back to the line rate */
};

int sroce_cc_module_init(void);
void sroce_cc_dev_init(struct sroce_dev *sdev, u32 line_mbps);
extern const struct attribute_group sroce_cc_attr_group;

void sroce_cc_qp_init(struct sroce_qp *qp);
void sroce_cc_qp_reset(struct sroce_qp *qp);
void sroce_cc_qp_stop(struct sroce_qp *qp);

/* Receive side: a CE-marked packet for @qp (NP), a CNP (RP). Softirq. */
void sroce_cc_np_ce(struct sroce_qp *qp);
void sroce_cc_cnp_rcv(struct sroce_dev *sdev, u32 qpn, struct sroce_qp *qp);

/* Requester, sq_lock held. */
bool sroce_cc_pace_wait_slow(struct sroce_qp *qp);
void sroce_cc_sent(struct sroce_qp *qp, u32 payload, u32 wire_bytes);
/* Responder's READ responses, resp_lock held. */
bool sroce_cc_resp_wait_slow(struct sroce_qp *qp);
void sroce_cc_resp_sent(struct sroce_qp *qp, u32 payload, u32 wire_bytes);

int sroce_cc_fill_res_qp(struct sk_buff *msg, struct sroce_qp *qp);

#endif /* SROCE_CC_H */
