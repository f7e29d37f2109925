/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sroce tracepoints, in /sys/kernel/tracing/events/sroce/ (trace-cmd and
 * perf: sroce:*). Each names its device first (dev=); QPNs and PSNs are
 * decimal, BTH opcodes and AETH syndromes hex.
 *
 *   sroce_tx          a packet handed to the IP stack: the sending QP
 *                     (sqpn), the destination QP in its BTH (dqpn), opcode,
 *                     PSN, RoCE length (BTH through ICRC)
 *   sroce_rx          a packet received whose ICRC and headers checked out,
 *                     before it is dispatched: destination QP, opcode, PSN,
 *                     RoCE length
 *   sroce_drop        a packet dropped, received or to be sent; the reason is
 *                     the name of the counter that counts it ("rdma
 *                     statistic": rcvd_icrc_err, rcvd_no_qp,
 *                     out_of_seq_request, send_err, ...)
 *   sroce_retransmit  the requester sends a PSN again (going back N after an
 *                     ACK timeout, a NAK or an RNR NAK)
 *   sroce_timeout     a QP's ACK timeout expired: its oldest unacknowledged
 *                     PSN, the retries left (0: this expiry fails the QP with
 *                     RETRY_EXC_ERR), the timeout doublings so far
 *   sroce_nak_sent    the responder answers a request with a NAK or an RNR
 *                     NAK: the request's PSN, the AETH syndrome and its kind
 *                     (rnr, seq, inv_req, rem_access, rem_op)
 *   sroce_nak_rcvd    the requester takes a NAK or an RNR NAK: its PSN,
 *                     syndrome and kind
 *   sroce_cnp_sent    the notification point sends a CNP to the peer QP
 *   sroce_cnp_rcvd    a CNP arrived for a QP (sroce's address checks passed),
 *                     handled by its reaction point (1) or ignored (0: no
 *                     such QP, not a sender, rp_enable 0)
 *   sroce_rate        a QP's DCQCN rate changed: the cause (cnp: a cut;
 *                     timer, bytes: the increase events; reset: modify to
 *                     RESET), the current rate before and after, the target
 *                     rate (Mbit/s), alpha (1024 = 1.0), whether it is still
 *                     limited
 *   sroce_qp_state    a QP changes state: modify_qp (with IB_QP_STATE), or
 *                     the transport itself (to ERR after a fatal error, to SQE
 *                     after a UD/UC send error)
 */

#undef TRACE_SYSTEM
#define TRACE_SYSTEM sroce

#if !defined(_SROCE_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _SROCE_TRACE_H

#include <linux/string.h>
#include <linux/tracepoint.h>
#include <rdma/ib_verbs.h>

#include "sroce.h"
#include "sroce_cc.h"
#include "sroce_qp.h"
#include "proto/sroce_completer.h"
#include "proto/sroce_hdr.h"

/*
 * The device's name, copied into the event (__string() and __assign_str()
 * changed in 6.10): no more than the length reserved for it, should the
 * device be renamed meanwhile.
 */
#define SROCE_TP_DEV(sdev)						\
	__dynamic_array(char, dev, strlen((sdev)->ib_dev.name) + 1)
#define SROCE_TP_DEV_ASSIGN(sdev)					\
	strscpy(__get_str(dev), (sdev)->ib_dev.name,			\
		__get_dynamic_array_len(dev))

/* The enum values, for trace-cmd and perf to read the formats with. */
TRACE_DEFINE_ENUM(IB_QPS_RESET);
TRACE_DEFINE_ENUM(IB_QPS_INIT);
TRACE_DEFINE_ENUM(IB_QPS_RTR);
TRACE_DEFINE_ENUM(IB_QPS_RTS);
TRACE_DEFINE_ENUM(IB_QPS_SQD);
TRACE_DEFINE_ENUM(IB_QPS_SQE);
TRACE_DEFINE_ENUM(IB_QPS_ERR);
TRACE_DEFINE_ENUM(IB_QPT_SMI);
TRACE_DEFINE_ENUM(IB_QPT_GSI);
TRACE_DEFINE_ENUM(IB_QPT_RC);
TRACE_DEFINE_ENUM(IB_QPT_UC);
TRACE_DEFINE_ENUM(IB_QPT_UD);
TRACE_DEFINE_ENUM(IB_QPT_XRC_INI);
TRACE_DEFINE_ENUM(IB_QPT_XRC_TGT);
TRACE_DEFINE_ENUM(SROCE_ACK_PROGRESS);
TRACE_DEFINE_ENUM(SROCE_ACK_RNR);
TRACE_DEFINE_ENUM(SROCE_ACK_SEQ);
TRACE_DEFINE_ENUM(SROCE_ACK_REM_INV);
TRACE_DEFINE_ENUM(SROCE_ACK_REM_ACCESS);
TRACE_DEFINE_ENUM(SROCE_ACK_REM_OP);
TRACE_DEFINE_ENUM(SROCE_ACK_BAD);
TRACE_DEFINE_ENUM(SROCE_CC_CNP);
TRACE_DEFINE_ENUM(SROCE_CC_TIMER);
TRACE_DEFINE_ENUM(SROCE_CC_BYTES);
TRACE_DEFINE_ENUM(SROCE_CC_RESET);

#define sroce_tp_show_qp_state(x)					\
	__print_symbolic(x, { IB_QPS_RESET, "RESET" },			\
			 { IB_QPS_INIT, "INIT" }, { IB_QPS_RTR, "RTR" },	\
			 { IB_QPS_RTS, "RTS" }, { IB_QPS_SQD, "SQD" },	\
			 { IB_QPS_SQE, "SQE" }, { IB_QPS_ERR, "ERR" })
#define sroce_tp_show_qp_type(x)					\
	__print_symbolic(x, { IB_QPT_SMI, "SMI" }, { IB_QPT_GSI, "GSI" }, \
			 { IB_QPT_RC, "RC" }, { IB_QPT_UC, "UC" },	\
			 { IB_QPT_UD, "UD" }, { IB_QPT_XRC_INI, "XRC_INI" }, \
			 { IB_QPT_XRC_TGT, "XRC_TGT" })
#define sroce_tp_show_ack(x)						\
	__print_symbolic(x, { SROCE_ACK_PROGRESS, "ack" },		\
			 { SROCE_ACK_RNR, "rnr" }, { SROCE_ACK_SEQ, "seq" }, \
			 { SROCE_ACK_REM_INV, "inv_req" },		\
			 { SROCE_ACK_REM_ACCESS, "rem_access" },	\
			 { SROCE_ACK_REM_OP, "rem_op" },		\
			 { SROCE_ACK_BAD, "bad" })
#define sroce_tp_show_cc(x)						\
	__print_symbolic(x, { SROCE_CC_CNP, "cnp" },			\
			 { SROCE_CC_TIMER, "timer" },			\
			 { SROCE_CC_BYTES, "bytes" },			\
			 { SROCE_CC_RESET, "reset" })

TRACE_EVENT(sroce_tx,
	TP_PROTO(const struct sroce_qp *qp, const struct sroce_pkt *pkt,
		 u32 len),
	TP_ARGS(qp, pkt, len),
	TP_STRUCT__entry(
		SROCE_TP_DEV(qp->sdev)
		__field(u32, sqpn)
		__field(u32, dqpn)
		__field(u32, psn)
		__field(u32, len)
		__field(u8, opcode)
	),
	TP_fast_assign(
		SROCE_TP_DEV_ASSIGN(qp->sdev);
		__entry->sqpn = qp->ibqp.qp_num;
		__entry->dqpn = pkt->bth.dqpn;
		__entry->psn = pkt->bth.psn;
		__entry->len = len;
		__entry->opcode = pkt->bth.opcode;
	),
	TP_printk("dev=%s sqpn=%u dqpn=%u op=0x%02x psn=%u len=%u",
		  __get_str(dev), __entry->sqpn, __entry->dqpn,
		  __entry->opcode, __entry->psn, __entry->len)
);

TRACE_EVENT(sroce_rx,
	TP_PROTO(const struct sroce_dev *sdev, const struct sroce_pkt *pkt,
		 u32 len),
	TP_ARGS(sdev, pkt, len),
	TP_STRUCT__entry(
		SROCE_TP_DEV(sdev)
		__field(u32, dqpn)
		__field(u32, psn)
		__field(u32, len)
		__field(u8, opcode)
	),
	TP_fast_assign(
		SROCE_TP_DEV_ASSIGN(sdev);
		__entry->dqpn = pkt->bth.dqpn;
		__entry->psn = pkt->bth.psn;
		__entry->len = len;
		__entry->opcode = pkt->bth.opcode;
	),
	TP_printk("dev=%s dqpn=%u op=0x%02x psn=%u len=%u",
		  __get_str(dev), __entry->dqpn, __entry->opcode,
		  __entry->psn, __entry->len)
);

TRACE_EVENT(sroce_drop,
	TP_PROTO(const struct sroce_dev *sdev, const char *reason),
	TP_ARGS(sdev, reason),
	TP_STRUCT__entry(
		SROCE_TP_DEV(sdev)
		__dynamic_array(char, reason, strlen(reason) + 1)
	),
	TP_fast_assign(
		SROCE_TP_DEV_ASSIGN(sdev);
		strscpy(__get_str(reason), reason,
			__get_dynamic_array_len(reason));
	),
	TP_printk("dev=%s reason=%s", __get_str(dev), __get_str(reason))
);

TRACE_EVENT(sroce_retransmit,
	TP_PROTO(const struct sroce_qp *qp, const struct sroce_pkt *pkt),
	TP_ARGS(qp, pkt),
	TP_STRUCT__entry(
		SROCE_TP_DEV(qp->sdev)
		__field(u32, qpn)
		__field(u32, dqpn)
		__field(u32, psn)
		__field(u8, opcode)
	),
	TP_fast_assign(
		SROCE_TP_DEV_ASSIGN(qp->sdev);
		__entry->qpn = qp->ibqp.qp_num;
		__entry->dqpn = pkt->bth.dqpn;
		__entry->psn = pkt->bth.psn;
		__entry->opcode = pkt->bth.opcode;
	),
	TP_printk("dev=%s qpn=%u dqpn=%u op=0x%02x psn=%u",
		  __get_str(dev), __entry->qpn, __entry->dqpn,
		  __entry->opcode, __entry->psn)
);

/* sq_lock held: the completer's state. */
TRACE_EVENT(sroce_timeout,
	TP_PROTO(const struct sroce_qp *qp),
	TP_ARGS(qp),
	TP_STRUCT__entry(
		SROCE_TP_DEV(qp->sdev)
		__field(u32, qpn)
		__field(u32, psn)
		__field(u8, retry_left)
		__field(u8, backoff)
	),
	TP_fast_assign(
		SROCE_TP_DEV_ASSIGN(qp->sdev);
		__entry->qpn = qp->ibqp.qp_num;
		__entry->psn = qp->comp.psn;
		__entry->retry_left = qp->comp.retry_cnt;
		__entry->backoff = qp->comp.backoff;
	),
	TP_printk("dev=%s qpn=%u psn=%u retry_left=%u backoff=%u",
		  __get_str(dev), __entry->qpn, __entry->psn,
		  __entry->retry_left, __entry->backoff)
);

DECLARE_EVENT_CLASS(sroce_nak_class,
	TP_PROTO(const struct sroce_qp *qp, u32 psn, u8 syndrome),
	TP_ARGS(qp, psn, syndrome),
	TP_STRUCT__entry(
		SROCE_TP_DEV(qp->sdev)
		__field(u32, qpn)
		__field(u32, dqpn)
		__field(u32, psn)
		__field(u8, syndrome)
		__field(u8, kind)
	),
	TP_fast_assign(
		SROCE_TP_DEV_ASSIGN(qp->sdev);
		__entry->qpn = qp->ibqp.qp_num;
		__entry->dqpn = qp->attr.dest_qp_num;
		__entry->psn = psn;
		__entry->syndrome = syndrome;
		__entry->kind = sroce_ack_classify(syndrome);
	),
	TP_printk("dev=%s qpn=%u dqpn=%u psn=%u syndrome=0x%02x kind=%s",
		  __get_str(dev), __entry->qpn, __entry->dqpn, __entry->psn,
		  __entry->syndrome, sroce_tp_show_ack(__entry->kind))
);

DEFINE_EVENT(sroce_nak_class, sroce_nak_sent,
	TP_PROTO(const struct sroce_qp *qp, u32 psn, u8 syndrome),
	TP_ARGS(qp, psn, syndrome)
);

DEFINE_EVENT(sroce_nak_class, sroce_nak_rcvd,
	TP_PROTO(const struct sroce_qp *qp, u32 psn, u8 syndrome),
	TP_ARGS(qp, psn, syndrome)
);

TRACE_EVENT(sroce_cnp_sent,
	TP_PROTO(const struct sroce_qp *qp),
	TP_ARGS(qp),
	TP_STRUCT__entry(
		SROCE_TP_DEV(qp->sdev)
		__field(u32, qpn)
		__field(u32, dqpn)
	),
	TP_fast_assign(
		SROCE_TP_DEV_ASSIGN(qp->sdev);
		__entry->qpn = qp->ibqp.qp_num;
		__entry->dqpn = qp->attr.dest_qp_num;
	),
	TP_printk("dev=%s qpn=%u dqpn=%u",
		  __get_str(dev), __entry->qpn, __entry->dqpn)
);

TRACE_EVENT(sroce_cnp_rcvd,
	TP_PROTO(const struct sroce_dev *sdev, u32 qpn, bool handled),
	TP_ARGS(sdev, qpn, handled),
	TP_STRUCT__entry(
		SROCE_TP_DEV(sdev)
		__field(u32, qpn)
		__field(u8, handled)
	),
	TP_fast_assign(
		SROCE_TP_DEV_ASSIGN(sdev);
		__entry->qpn = qpn;
		__entry->handled = handled;
	),
	TP_printk("dev=%s qpn=%u handled=%u",
		  __get_str(dev), __entry->qpn, __entry->handled)
);

/* cc.lock held: the reaction point's state after the change. */
TRACE_EVENT(sroce_rate,
	TP_PROTO(const struct sroce_qp *qp, u32 old_kbps,
		 enum sroce_cc_cause cause),
	TP_ARGS(qp, old_kbps, cause),
	TP_STRUCT__entry(
		SROCE_TP_DEV(qp->sdev)
		__field(u32, qpn)
		__field(u32, old_kbps)
		__field(u32, kbps)
		__field(u32, target_kbps)
		__field(u32, alpha)
		__field(u8, limited)
		__field(u8, cause)
	),
	TP_fast_assign(
		SROCE_TP_DEV_ASSIGN(qp->sdev);
		__entry->qpn = qp->ibqp.qp_num;
		__entry->old_kbps = old_kbps;
		__entry->kbps = qp->cc.rp.rc;
		__entry->target_kbps = qp->cc.rp.rt;
		__entry->alpha = qp->cc.rp.alpha;
		__entry->limited = qp->cc.rp.limited;
		__entry->cause = cause;
	),
	/* Rates in Mbit/s, with three decimals. */
	TP_printk("dev=%s qpn=%u cause=%s old_mbps=%u.%03u new_mbps=%u.%03u target_mbps=%u.%03u alpha=%u limited=%u",
		  __get_str(dev), __entry->qpn, sroce_tp_show_cc(__entry->cause),
		  __entry->old_kbps / 1000, __entry->old_kbps % 1000,
		  __entry->kbps / 1000, __entry->kbps % 1000,
		  __entry->target_kbps / 1000, __entry->target_kbps % 1000,
		  __entry->alpha, __entry->limited)
);

/* state_lock held. */
TRACE_EVENT(sroce_qp_state,
	TP_PROTO(const struct sroce_qp *qp, enum ib_qp_state old,
		 enum ib_qp_state new),
	TP_ARGS(qp, old, new),
	TP_STRUCT__entry(
		SROCE_TP_DEV(qp->sdev)
		__field(u32, qpn)
		__field(u8, type)
		__field(u8, old)
		__field(u8, new)
	),
	TP_fast_assign(
		SROCE_TP_DEV_ASSIGN(qp->sdev);
		__entry->qpn = qp->ibqp.qp_num;
		__entry->type = qp->ibqp.qp_type;
		__entry->old = old;
		__entry->new = new;
	),
	TP_printk("dev=%s qpn=%u type=%s old=%s new=%s",
		  __get_str(dev), __entry->qpn,
		  sroce_tp_show_qp_type(__entry->type),
		  sroce_tp_show_qp_state(__entry->old),
		  sroce_tp_show_qp_state(__entry->new))
);

#endif /* _SROCE_TRACE_H */

/* An out-of-tree module: define_trace.h finds this file through -I$(src). */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#define TRACE_INCLUDE_FILE sroce_trace
#include <trace/define_trace.h>
