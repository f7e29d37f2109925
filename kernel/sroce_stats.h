/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-device counters, exported through "rdma statistic" (hw counters).
 * Per-CPU so the data path never shares a cache line for counting.
 */
#ifndef SROCE_STATS_H
#define SROCE_STATS_H

#include <linux/percpu.h>

enum sroce_counter {
	SROCE_CNT_TX_PKTS,
	SROCE_CNT_TX_BYTES,
	SROCE_CNT_RX_PKTS,
	SROCE_CNT_RX_BYTES,
	SROCE_CNT_TX_DROP,		/* no route, no memory */
	SROCE_CNT_RX_ICRC_ERR,
	SROCE_CNT_RX_MALFORMED,		/* failed header validation */
	SROCE_CNT_RX_NO_QP,		/* unknown destination QP */
	SROCE_CNT_RX_BAD_QP_STATE,
	SROCE_CNT_RX_BAD_OPCODE,	/* opcode invalid for the QP */
	SROCE_CNT_RX_BAD_PKEY,
	SROCE_CNT_RX_CNP,
	SROCE_CNT_DUP_REQ,		/* duplicate requests answered */
	SROCE_CNT_OOS_REQ,		/* out-of-sequence requests dropped */
	SROCE_CNT_SEQ_NAK_SENT,
	SROCE_CNT_SEQ_NAK_RCVD,
	SROCE_CNT_RNR_NAK_SENT,
	SROCE_CNT_RNR_NAK_RCVD,
	SROCE_CNT_REM_ACCESS_NAK_SENT,
	SROCE_CNT_REM_INV_REQ_NAK_SENT,
	SROCE_CNT_REM_OP_NAK_SENT,
	SROCE_CNT_NAK_RCVD,		/* fatal NAKs received */
	SROCE_CNT_RETRANS_PKTS,
	SROCE_CNT_RETRANS_TIMEOUT,
	SROCE_CNT_RETRY_EXCEEDED,
	SROCE_CNT_RNR_RETRY_EXCEEDED,
	SROCE_CNT_COMPLETER_DROP,	/* stale or unexpected responses */
	SROCE_CNT_IMPLIED_NAK,		/* a READ/atomic response missing */
	SROCE_CNT_RX_BAD_QKEY,		/* UD: Q_Key mismatch */
	SROCE_CNT_UD_NO_RWQE,		/* UD/UC: no receive WQE posted */
	SROCE_CNT_UD_LEN_DROP,		/* UD: datagram > receive WQE */
	SROCE_CNT_NP_ECN_MARKED,	/* RoCE packets received with CE */
	SROCE_CNT_NP_CNP_SENT,
	SROCE_CNT_RP_CNP_HANDLED,	/* CNPs that reached a QP's RP */
	SROCE_CNT_RP_CNP_IGNORED,	/* no such QP, not a sender, RP off */
	SROCE_CNT_RX_BAD_ADDR,		/* connected QP: not from its peer */
	SROCE_CNT_RX_OVERSIZE,		/* longer than any RoCE packet */
	SROCE_CNT_RESP_BACKLOG_DROP,	/* outside the window behind a READ */
	SROCE_CNT_DUP_READ_DROP,	/* a READ restart that is no retry */
	SROCE_CNT_ADP_RETRANS,		/* ACK timeout doubled (sroce_gbn.h) */
	SROCE_CNT_SLOW_RESTART,		/* window shrunk after a timeout */
	SROCE_CNT_DUP_NO_ACK,		/* duplicates not re-ACKed (no AckReq) */
	SROCE_CNT_OOS_PLACED,		/* requests ahead of ePSN placed */
	SROCE_CNT_TLP,			/* tail loss probes (sroce_gbn.h) */
	SROCE_CNT_TIMER_STALL,		/* timer steps that fired late: not counted */
	SROCE_CNT_GAP_ACK,		/* ACKs of a NAKed gap's end */
	SROCE_CNT_SQ_DOORBELL,		/* send doorbells from user space */
	SROCE_CNT_MAX
};

struct sroce_stats {
	u64 c[SROCE_CNT_MAX];
};

struct sroce_dev;
struct ib_device;

void sroce_stat_add(struct sroce_dev *sdev, enum sroce_counter c, u64 n);
#define sroce_stat_inc(sdev, c) sroce_stat_add(sdev, c, 1)

int sroce_stats_init(struct sroce_dev *sdev);
void sroce_stats_free(struct sroce_dev *sdev);

struct rdma_hw_stats *sroce_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port_num);
int sroce_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index);

#endif /* SROCE_STATS_H */
