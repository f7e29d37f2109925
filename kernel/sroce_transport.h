/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The transport of every QP type (RC, UC, UD and GSI, XRC): the packet path
 * (sroce_tx.c, sroce_rx.c), the requester (sroce_req.c) and its send queue
 * (sroce_sq.c), UD (sroce_ud.c), the completer (sroce_comp.c) with its
 * timers (sroce_comp_timer.c), the responder (sroce_resp.c, with the
 * requests placed ahead in sroce_resp_ahead.c and its READ side in
 * sroce_read.c) and receive WQEs (sroce_recv.c); the rules they apply are
 * kernel/proto's.
 * See sroce_qp.h for the execution contexts and locks.
 */
#ifndef SROCE_TRANSPORT_H
#define SROCE_TRANSPORT_H

#include <linux/skbuff.h>

#include "proto/sroce_gbn.h"
#include "proto/sroce_hdr.h"
#include "sroce_mr.h"

struct dentry;
struct sroce_dev;
struct sroce_qp;
struct sroce_qp_work;
struct sroce_send_wqe;

/* A packet being built: proto headers + where the payload goes. */
struct sroce_txpkt {
	struct sroce_pkt pkt;	/* bth + ext headers; payload_len */
	struct sk_buff *skb;
	u8 *payload;		/* payload_len bytes to fill */
	bool cnp;		/* a CNP: cnp_dscp, cnp_802p_prio */
};

/* sroce_tx.c */
int sroce_tx_alloc(struct sroce_qp *qp, struct sroce_txpkt *tp, gfp_t gfp);
void sroce_tx_debugfs_init(struct dentry *dir);
int sroce_tx_send(struct sroce_qp *qp, struct sroce_txpkt *tp);
void sroce_tx_free(struct sroce_txpkt *tp);
u32 sroce_wire_len(const struct sroce_qp *qp, const struct sroce_pkt *pkt);

/* sroce_rx.c: the UDP encapsulation receive hook */
int sroce_udp_encap_recv(struct sock *sk, struct sk_buff *skb);

/*
 * Each part of a QP's transport state has an owner with its own init (at
 * create), reset (modify_qp to RESET, sq_lock and resp_lock held), modify
 * (the attributes it keeps, same locks) and stop (destroy, once
 * SROCE_QPF_DYING is set): sroce_qp.c and sroce_qp_state.c call them, in
 * that order of parts. What the responder allocates (its receive WQE copy
 * once the RQ exists, its READ resources in modify) it frees in
 * sroce_resp_free(), after the last reference or a failed create.
 */
struct ib_qp_attr;

/* sroce_req.c: the requester of connected QPs (RC, UC, XRC initiator) */
void sroce_req_init(struct sroce_qp *qp);
void sroce_req_reset(struct sroce_qp *qp);
void sroce_req_modify(struct sroce_qp *qp, const struct ib_qp_attr *attr,
		      int mask);
void sroce_req_stop(struct sroce_qp *qp);
void sroce_req_kick(struct sroce_qp *qp, bool may_run_inline);

/* sroce_sq.c: the send queue's shadow, fetch and flush */
int sroce_wqe_data(struct sroce_qp *qp, const struct sroce_send_wqe *w,
		   u32 off, void *buf, u32 len, enum sroce_copy_dir dir,
		   int access);
u32 sroce_sq_room(struct sroce_qp *qp);
bool sroce_sq_fetch(struct sroce_qp *qp);
int sroce_sq_next(struct sroce_qp *qp, u32 *idx);
void sroce_sq_fail(struct sroce_qp *qp);
void sroce_sq_retire_unlock(struct sroce_qp *qp) __releases(&qp->sq_lock);
void sroce_sq_flush(struct sroce_qp *qp);
void sroce_sq_reset(struct sroce_qp *qp);

/* sroce_ud.c: UD and GSI send and receive */
int sroce_ud_send_one(struct sroce_qp *qp);
void sroce_ud_rcv(struct sroce_qp *qp, struct sk_buff *skb,
		  const struct sroce_pkt *pkt, const u8 *payload);

/* sroce_qp_state.c */
void sroce_qp_flush(struct sroce_qp *qp);

/* sroce_comp.c: completer, go-back-N */
void sroce_comp_init(struct sroce_qp *qp);
void sroce_comp_reset(struct sroce_qp *qp);
void sroce_comp_modify(struct sroce_qp *qp, const struct ib_qp_attr *attr,
		       int mask);
bool sroce_comp_sqd_pending(struct sroce_qp *qp);
void sroce_comp_sqd_check(struct sroce_qp *qp);
void sroce_comp_sqd_end(struct sroce_qp *qp);
void sroce_comp_stop(struct sroce_qp *qp);
void sroce_comp_rcv(struct sroce_qp *qp, struct sk_buff *skb,
		    const struct sroce_pkt *pkt, const u8 *payload);
bool sroce_comp_retire(struct sroce_qp *qp);
void sroce_comp_rewind(struct sroce_qp *qp);
void sroce_comp_fail_psn(struct sroce_qp *qp, u32 psn, int status);

/* sroce_comp_timer.c: the ACK timeout, tail loss probes, the RNR wait */
void sroce_comp_timers_init(struct sroce_qp *qp);
void sroce_comp_timers(struct sroce_qp *qp, enum sroce_gbn_timer t);
void sroce_comp_heard(struct sroce_qp *qp, bool idle, bool fatal);
bool sroce_comp_nomem(struct sroce_qp *qp, bool rewind);

/* sroce_resp.c: responder */
void sroce_resp_rcv(struct sroce_qp *qp, struct sk_buff *skb,
		    const struct sroce_pkt *pkt, const u8 *payload);
void sroce_resp_init(struct sroce_qp *qp);
void sroce_resp_reset(struct sroce_qp *qp);
void sroce_resp_modify(struct sroce_qp *qp, const struct ib_qp_attr *attr,
		       int mask);
void sroce_resp_stop(struct sroce_qp *qp);
void sroce_resp_free(struct sroce_qp *qp);

/* sroce_recv.c: receive WQEs */
int sroce_recv_alloc(struct sroce_qp *qp);
void sroce_recv_free(struct sroce_qp *qp);
void sroce_recv_flush(struct sroce_qp *qp);
void sroce_recv_reset(struct sroce_qp *qp);

/* sroce_read.c: the responder's READ side */
int sroce_read_set_res(struct sroce_qp *qp, u32 n);
void sroce_read_work(struct sroce_qp *qp);
void sroce_read_queue(struct sroce_qp *qp);
void sroce_read_backlog_purge(struct sroce_qp *qp);
void sroce_read_free(struct sroce_qp *qp);

/* sroce_qp.c: the workqueues, and a QP's pair of work items on them */
extern struct workqueue_struct *sroce_wq;
extern struct workqueue_struct *sroce_pace_wq;

void sroce_qp_work_init(struct sroce_qp_work *w, work_func_t any,
			work_func_t pace);
void sroce_qp_work_queue(struct sroce_qp_work *w, bool paced, int cpu);
void sroce_qp_work_cancel_sync(struct sroce_qp_work *w);

#endif /* SROCE_TRANSPORT_H */
