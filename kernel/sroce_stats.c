// SPDX-License-Identifier: GPL-2.0
/*
 * sroce counters.
 */

#include <rdma/ib_verbs.h>

#include "sroce.h"
#include "sroce_stats.h"
#include "sroce_trace.h"

static const struct rdma_stat_desc sroce_stat_desc[SROCE_CNT_MAX] = {
	[SROCE_CNT_TX_PKTS].name = "sent_pkts",
	[SROCE_CNT_TX_BYTES].name = "sent_bytes",
	[SROCE_CNT_RX_PKTS].name = "rcvd_pkts",
	[SROCE_CNT_RX_BYTES].name = "rcvd_bytes",
	[SROCE_CNT_TX_DROP].name = "send_err",
	[SROCE_CNT_RX_ICRC_ERR].name = "rcvd_icrc_err",
	[SROCE_CNT_RX_MALFORMED].name = "rcvd_malformed",
	[SROCE_CNT_RX_NO_QP].name = "rcvd_no_qp",
	[SROCE_CNT_RX_BAD_QP_STATE].name = "rcvd_bad_qp_state",
	[SROCE_CNT_RX_BAD_OPCODE].name = "rcvd_bad_opcode",
	[SROCE_CNT_RX_BAD_PKEY].name = "rcvd_bad_pkey",
	[SROCE_CNT_RX_CNP].name = "rcvd_cnp",
	[SROCE_CNT_DUP_REQ].name = "duplicate_request",
	[SROCE_CNT_OOS_REQ].name = "out_of_seq_request",
	[SROCE_CNT_SEQ_NAK_SENT].name = "seq_nak_sent",
	[SROCE_CNT_SEQ_NAK_RCVD].name = "rcvd_seq_err",
	[SROCE_CNT_RNR_NAK_SENT].name = "rnr_nak_sent",
	[SROCE_CNT_RNR_NAK_RCVD].name = "rcvd_rnr_err",
	[SROCE_CNT_REM_ACCESS_NAK_SENT].name = "rem_access_nak_sent",
	[SROCE_CNT_REM_INV_REQ_NAK_SENT].name = "rem_inv_req_nak_sent",
	[SROCE_CNT_REM_OP_NAK_SENT].name = "rem_op_nak_sent",
	[SROCE_CNT_NAK_RCVD].name = "rcvd_fatal_nak",
	[SROCE_CNT_RETRANS_PKTS].name = "retransmitted_pkts",
	[SROCE_CNT_RETRANS_TIMEOUT].name = "retry_timeouts",
	[SROCE_CNT_RETRY_EXCEEDED].name = "retry_exceeded_err",
	[SROCE_CNT_RNR_RETRY_EXCEEDED].name = "rnr_retry_exceeded_err",
	[SROCE_CNT_COMPLETER_DROP].name = "completer_drop",
	[SROCE_CNT_IMPLIED_NAK].name = "implied_nak_seq_err",
	[SROCE_CNT_RX_BAD_QKEY].name = "rcvd_bad_qkey",
	[SROCE_CNT_UD_NO_RWQE].name = "rcvd_no_wqe_drop",
	[SROCE_CNT_UD_LEN_DROP].name = "rcvd_ud_len_drop",
	[SROCE_CNT_NP_ECN_MARKED].name = "np_ecn_marked_roce_packets",
	[SROCE_CNT_NP_CNP_SENT].name = "np_cnp_sent",
	[SROCE_CNT_RP_CNP_HANDLED].name = "rp_cnp_handled",
	[SROCE_CNT_RP_CNP_IGNORED].name = "rp_cnp_ignored",
	[SROCE_CNT_RX_BAD_ADDR].name = "rcvd_bad_addr",
	[SROCE_CNT_RX_OVERSIZE].name = "rcvd_oversize",
	[SROCE_CNT_RESP_BACKLOG_DROP].name = "resp_backlog_drop",
	[SROCE_CNT_DUP_READ_DROP].name = "dup_read_drop",
	[SROCE_CNT_ADP_RETRANS].name = "roce_adp_retrans",
	[SROCE_CNT_SLOW_RESTART].name = "roce_slow_restart",
	[SROCE_CNT_DUP_NO_ACK].name = "duplicate_request_unacked",
	[SROCE_CNT_OOS_PLACED].name = "out_of_seq_placed",
	[SROCE_CNT_TLP].name = "tail_loss_probes",
	[SROCE_CNT_TIMER_STALL].name = "stalled_timeouts",
	[SROCE_CNT_GAP_ACK].name = "seq_gap_end_ack",
	[SROCE_CNT_SQ_DOORBELL].name = "sq_doorbells",
};

/*
 * The counters that count dropped packets, one each: the sroce_drop
 * tracepoint's reasons are their names.
 */
static const bool sroce_stat_is_drop[SROCE_CNT_MAX] = {
	[SROCE_CNT_TX_DROP] = true,
	[SROCE_CNT_RX_ICRC_ERR] = true,
	[SROCE_CNT_RX_MALFORMED] = true,
	[SROCE_CNT_RX_NO_QP] = true,
	[SROCE_CNT_RX_BAD_QP_STATE] = true,
	[SROCE_CNT_RX_BAD_OPCODE] = true,
	[SROCE_CNT_RX_BAD_PKEY] = true,
	[SROCE_CNT_OOS_REQ] = true,
	[SROCE_CNT_COMPLETER_DROP] = true,
	[SROCE_CNT_RX_BAD_QKEY] = true,
	[SROCE_CNT_UD_NO_RWQE] = true,
	[SROCE_CNT_UD_LEN_DROP] = true,
	[SROCE_CNT_RX_BAD_ADDR] = true,
	[SROCE_CNT_RX_OVERSIZE] = true,
	[SROCE_CNT_RESP_BACKLOG_DROP] = true,
	[SROCE_CNT_DUP_READ_DROP] = true,
};

void sroce_stat_add(struct sroce_dev *sdev, enum sroce_counter c, u64 n)
{
	this_cpu_add(sdev->stats->c[c], n);
	if (trace_sroce_drop_enabled() && sroce_stat_is_drop[c])
		trace_sroce_drop(sdev, sroce_stat_desc[c].name);
}

int sroce_stats_init(struct sroce_dev *sdev)
{
	sdev->stats = alloc_percpu(struct sroce_stats);
	return sdev->stats ? 0 : -ENOMEM;
}

void sroce_stats_free(struct sroce_dev *sdev)
{
	free_percpu(sdev->stats);
	sdev->stats = NULL;
}

struct rdma_hw_stats *sroce_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port_num)
{
	return rdma_alloc_hw_stats_struct(sroce_stat_desc, SROCE_CNT_MAX,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int sroce_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index)
{
	struct sroce_dev *sdev = to_sdev(ibdev);
	int cpu, i;

	for (i = 0; i < SROCE_CNT_MAX; i++)
		stats->value[i] = 0;
	for_each_possible_cpu(cpu) {
		const struct sroce_stats *s = per_cpu_ptr(sdev->stats, cpu);

		for (i = 0; i < SROCE_CNT_MAX; i++)
			stats->value[i] += READ_ONCE(s->c[i]);
	}
	return SROCE_CNT_MAX;
}
