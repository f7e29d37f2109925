/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The responder's internals, shared by its files: sroce_resp.c (requests:
 * checks, data placement, ACK/NAK, atomics, duplicates, UC),
 * sroce_resp_ahead.c (requests placed ahead of the expected PSN),
 * sroce_read.c (READ resources, responses and streaming, the backlog
 * behind a stream) and sroce_recv.c (receive WQEs, which UD's receive in
 * sroce_ud.c uses too). Everything here runs under the QP's resp_lock.
 */
#ifndef SROCE_RESP_H
#define SROCE_RESP_H

#include "proto/sroce_responder.h"

struct sk_buff;
struct sroce_pkt;
struct sroce_qp;
struct sroce_rd_res;

/* struct sroce_rd_res's kind */
enum sroce_res_kind {
	SROCE_RES_FREE,
	SROCE_RES_READ,
	SROCE_RES_ATOMIC,
};

/* sroce_resp.c */
struct sroce_mr *sroce_resp_rkey_pd(struct sroce_qp *qp, struct ib_pd *pd,
				    u32 rkey, u64 va, u64 len, int access);
struct sroce_mr *sroce_resp_rkey(struct sroce_qp *qp, u32 rkey, u64 va,
				 u64 len, int access);
bool sroce_resp_state_ok(struct sroce_qp *qp);
enum sroce_resp_verdict sroce_resp_handle(struct sroce_qp *qp,
					  const struct sroce_pkt *pkt,
					  const u8 *payload);
void sroce_resp_fail(struct sroce_qp *qp, enum sroce_resp_verdict v);

/* sroce_resp_ahead.c: requests placed ahead of the expected PSN */
bool sroce_resp_place_ahead(struct sroce_qp *qp, const struct sroce_pkt *pkt,
			    const u8 *payload, u32 d);
bool sroce_resp_ahead_run(struct sroce_qp *qp, const struct sroce_pkt *pkt);

/* sroce_recv.c: receive WQEs (also UD's, in sroce_ud.c) */
struct sroce_cqe;
struct ib_pd *sroce_recv_pd(const struct sroce_qp *qp);
int sroce_recv_take(struct sroce_qp *qp);
int sroce_recv_place_at(struct sroce_qp *qp, u32 off, const u8 *data,
			u32 len, u32 *copied);
int sroce_recv_place(struct sroce_qp *qp, const u8 *data, u32 len);
u64 sroce_recv_room(const struct sroce_qp *qp);
void sroce_recv_post_cqe(struct sroce_qp *qp, struct sroce_cqe *cqe,
			 bool solicited);
void sroce_recv_complete(struct sroce_qp *qp, int status, u32 opcode,
			 u32 byte_len, u32 wc_flags, u32 imm_or_inv,
			 bool solicited);

/* sroce_read.c */
struct sroce_rd_res *sroce_read_res_alloc(struct sroce_qp *qp);
enum sroce_resp_verdict sroce_read_exec(struct sroce_qp *qp,
					const struct sroce_pkt *pkt);
enum sroce_retry sroce_read_is_retry(struct sroce_qp *qp,
				     const struct sroce_rd_res *r,
				     const struct sroce_pkt *pkt, u32 *offp);
void sroce_read_restart(struct sroce_qp *qp, struct sroce_rd_res *r,
			u32 psn, u32 off);
bool sroce_read_busy_rcv(struct sroce_qp *qp, struct sk_buff *skb,
			 const struct sroce_pkt *pkt);

#endif /* SROCE_RESP_H */
