// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ibv_qp_ex work request builder (ibv_wr_start ... ibv_wr_complete).
 *
 * wr_start() takes the SQ lock and remembers how much room the ring has;
 * each builder (wr_send, wr_rdma_write, ...) starts a WQE in the next free
 * slot and the setters (wr_set_sge, wr_set_inline_data, wr_set_ud_addr)
 * complete the last one. Nothing is published until wr_complete(), which
 * moves the producer index over all of them with one release store and
 * rings one doorbell; wr_abort() and any error just drop the written slots,
 * so the producer index the kernel sees never moves for them. The first
 * error sticks: later calls do nothing and wr_complete() returns it.
 */
#include "provider.h"
#include "qp.h"
#include "xrc.h"

#include <cerrno>
#include <cstring>

namespace sroce
{

namespace
{

void fail(send_queue &sq, int err) noexcept
{
	if (!sq.wr_err)
		sq.wr_err = err;
}

/* What only the end of a WQE can tell: is it complete? */
void finish_current(send_queue &sq) noexcept
{
	sroce_send_wqe *w = sq.wr_cur;

	if (!w || sq.wr_err)
		return;
	const bool short_atomic = (atomic_opcodes & (1U << w->opcode)) &&
				  sq.wr_cur_len < atomic_len;
	if (sq.wr_cur_needs_ud || short_atomic)
		fail(sq, EINVAL);
}

void reset_state(send_queue &sq) noexcept
{
	sq.wr_count = 0;
	sq.wr_free = 0;
	sq.wr_err = 0;
	sq.wr_cur = nullptr;
	sq.wr_cur_len = 0;
	sq.wr_cur_needs_ud = false;
}

/* Start a WQE for op in the next slot; nullptr after an error. */
sroce_send_wqe *begin(struct ibv_qp_ex *x, enum ibv_wr_opcode op) noexcept
{
	qp *q = to_qp(x);
	send_queue &sq = q->sq;

	finish_current(sq);
	sq.wr_cur = nullptr;
	if (sq.wr_err)
		return nullptr;
	if (x->wr_flags & ~send_flags_mask) {
		fail(sq, EINVAL);
		return nullptr;
	}
	if (sq.wr_count == sq.wr_free) {
		sq.wr_free = sq.ring->free_slots();
		if (sq.wr_count == sq.wr_free) {
			fail(sq, ENOMEM);
			return nullptr;
		}
	}

	/* Inline or not is the data setter's business, not wr_flags'. */
	sroce_send_wqe h = {};
	h.wr_id = x->wr_id;
	h.opcode = static_cast<__u8>(op);
	h.flags = static_cast<__u8>(x->wr_flags & ~unsigned{IBV_SEND_INLINE});

	void *slot = sq.ring->next(sq.wr_count);
	memcpy(slot, &h, sizeof(h));
	sq.wr_count++;
	sq.wr_cur = static_cast<sroce_send_wqe *>(slot);
	sq.wr_cur_len = 0;
	/* UD: wr_set_ud_addr, XRC INI: wr_set_xrc_srqn must follow. */
	sq.wr_cur_needs_ud = q->vqp.qp.qp_type == IBV_QPT_UD ||
			     q->vqp.qp.qp_type == IBV_QPT_XRC_SEND;
	return sq.wr_cur;
}

unsigned char *payload(sroce_send_wqe *w) noexcept
{
	return reinterpret_cast<unsigned char *>(w) + SROCE_SEND_WQE_HDR_SIZE;
}

/* The WQE a setter applies to, or nullptr (error already recorded). */
sroce_send_wqe *current(send_queue &sq) noexcept
{
	if (sq.wr_err)
		return nullptr;
	if (!sq.wr_cur)
		fail(sq, EINVAL); /* a setter before any builder */
	return sq.wr_cur;
}

void wr_send(struct ibv_qp_ex *x) noexcept
{
	(void)begin(x, IBV_WR_SEND);
}

void wr_send_imm(struct ibv_qp_ex *x, __be32 imm) noexcept
{
	sroce_send_wqe *w = begin(x, IBV_WR_SEND_WITH_IMM);
	if (w)
		w->imm_or_inv = imm;
}

void wr_send_inv(struct ibv_qp_ex *x, uint32_t rkey) noexcept
{
	sroce_send_wqe *w = begin(x, IBV_WR_SEND_WITH_INV);
	if (w)
		w->imm_or_inv = rkey;
}

void wr_local_inv(struct ibv_qp_ex *x, uint32_t rkey) noexcept
{
	sroce_send_wqe *w = begin(x, IBV_WR_LOCAL_INV);
	if (w)
		w->imm_or_inv = rkey;
}

void wr_bind_mw(struct ibv_qp_ex *x, struct ibv_mw *mw, uint32_t rkey,
		const struct ibv_mw_bind_info *info) noexcept
{
	qp *q = to_qp(x);

	if (!info || !bind_ok(q->vqp.qp.context, mw, rkey, *info)) {
		finish_current(q->sq);
		q->sq.wr_cur = nullptr;
		fail(q->sq, EINVAL);
		return;
	}
	sroce_send_wqe *w = begin(x, IBV_WR_BIND_MW);
	if (w)
		encode_bind(*w, rkey, *info);
}

void set_remote(sroce_send_wqe *w, uint32_t rkey, uint64_t addr) noexcept
{
	w->rkey = rkey;
	w->remote_addr = addr;
}

void wr_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr) noexcept
{
	sroce_send_wqe *w = begin(x, IBV_WR_RDMA_WRITE);
	if (w)
		set_remote(w, rkey, addr);
}

void wr_rdma_write_imm(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr,
		       __be32 imm) noexcept
{
	sroce_send_wqe *w = begin(x, IBV_WR_RDMA_WRITE_WITH_IMM);
	if (w) {
		set_remote(w, rkey, addr);
		w->imm_or_inv = imm;
	}
}

void wr_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr) noexcept
{
	sroce_send_wqe *w = begin(x, IBV_WR_RDMA_READ);
	if (w)
		set_remote(w, rkey, addr);
}

sroce_send_wqe *begin_atomic(struct ibv_qp_ex *x, enum ibv_wr_opcode op,
			     uint32_t rkey, uint64_t addr) noexcept
{
	/* Misaligned addresses go on the wire: the responder NAKs them. */
	sroce_send_wqe *w = begin(x, op);
	if (w)
		set_remote(w, rkey, addr);
	return w;
}

void wr_atomic_cmp_swp(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr,
		       uint64_t compare, uint64_t swap) noexcept
{
	sroce_send_wqe *w =
		begin_atomic(x, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr);
	if (w) {
		w->compare_add = compare;
		w->swap = swap;
	}
}

void wr_atomic_fetch_add(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr,
			 uint64_t add) noexcept
{
	sroce_send_wqe *w =
		begin_atomic(x, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr);
	if (w)
		w->compare_add = add;
}

void wr_set_ud_addr(struct ibv_qp_ex *x, struct ibv_ah *ah, uint32_t remote_qpn,
		    uint32_t remote_qkey) noexcept
{
	qp *q = to_qp(x);
	send_queue &sq = q->sq;
	sroce_send_wqe *w = current(sq);

	if (!w)
		return;
	if (q->vqp.qp.qp_type != IBV_QPT_UD || !ah ||
	    ah->context != q->vqp.qp.context) {
		fail(sq, EINVAL);
		return;
	}
	w->ah = to_ah(ah)->ah_num;
	w->remote_qpn = remote_qpn;
	w->remote_qkey = remote_qkey;
	sq.wr_cur_needs_ud = false;
}

/* An XRC INI QP's WQE names the XRC SRQ it is for (include/sroce-abi.h). */
void wr_set_xrc_srqn(struct ibv_qp_ex *x, uint32_t remote_srqn) noexcept
{
	qp *q = to_qp(x);
	send_queue &sq = q->sq;
	sroce_send_wqe *w = current(sq);

	if (!w)
		return;
	if (q->vqp.qp.qp_type != IBV_QPT_XRC_SEND) {
		fail(sq, EINVAL);
		return;
	}
	w->remote_qpn = remote_srqn;
	sq.wr_cur_needs_ud = false;
}

/* The 8 bytes at atomic_wr travel in the WQE itself (set_atomic_write). */
void wr_atomic_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr,
		     const void *atomic_wr) noexcept
{
	sroce_send_wqe *w = begin(x, IBV_WR_ATOMIC_WRITE);

	if (!w)
		return;
	if (!atomic_wr) {
		fail(to_qp(x)->sq, EINVAL);
		return;
	}
	set_atomic_write(*w, rkey, addr, atomic_wr);
}

/* Does a scatter list of n entries fit the current WQE? */
sroce_send_wqe *sge_target(send_queue &sq, size_t n) noexcept
{
	sroce_send_wqe *w = current(sq);

	if (!w)
		return nullptr;
	/* ATOMIC_WRITE's data is in the WQE already. */
	if (n > sq.max_sge || w->opcode == SROCE_WR_ATOMIC_WRITE) {
		fail(sq, EINVAL);
		return nullptr;
	}
	return w;
}

void wr_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr,
		uint32_t length) noexcept
{
	send_queue &sq = to_qp(x)->sq;
	sroce_send_wqe *w = sge_target(sq, 1);

	if (!w)
		return;
	const sroce_sge s = {.addr = addr, .length = length, .lkey = lkey};
	memcpy(payload(w), &s, sizeof(s));
	w->num_sge = 1;
	w->inline_len = 0;
	w->flags &= static_cast<__u8>(~SROCE_SEND_INLINE);
	sq.wr_cur_len = length;
}

void wr_set_sge_list(struct ibv_qp_ex *x, size_t num_sge,
		     const struct ibv_sge *sg_list) noexcept
{
	send_queue &sq = to_qp(x)->sq;
	sroce_send_wqe *w = sge_target(sq, num_sge);

	if (!w)
		return;
	if (num_sge && !sg_list) {
		fail(sq, EINVAL);
		return;
	}
	uint64_t len = 0;
	unsigned char *dst = payload(w);
	for (size_t i = 0; i < num_sge; i++) {
		const sroce_sge s = {
			.addr = sg_list[i].addr,
			.length = sg_list[i].length,
			.lkey = sg_list[i].lkey,
		};
		memcpy(dst + i * sizeof(s), &s, sizeof(s));
		len += s.length;
	}
	w->num_sge = static_cast<__u16>(num_sge);
	w->inline_len = 0;
	w->flags &= static_cast<__u8>(~SROCE_SEND_INLINE);
	sq.wr_cur_len = len;
}

/* Can the current WQE carry len inline bytes? */
sroce_send_wqe *inline_target(send_queue &sq, uint64_t len) noexcept
{
	sroce_send_wqe *w = current(sq);

	if (!w)
		return nullptr;
	if (!(inline_opcodes & (1U << w->opcode)) || len > sq.max_inline) {
		fail(sq, EINVAL);
		return nullptr;
	}
	return w;
}

void set_inline(send_queue &sq, sroce_send_wqe *w, uint64_t len) noexcept
{
	w->num_sge = 0;
	w->inline_len = static_cast<__u32>(len);
	w->flags |= SROCE_SEND_INLINE;
	sq.wr_cur_len = len;
}

void wr_set_inline_data(struct ibv_qp_ex *x, void *addr, size_t length) noexcept
{
	send_queue &sq = to_qp(x)->sq;
	sroce_send_wqe *w = inline_target(sq, length);

	if (!w)
		return;
	if (length)
		memcpy(payload(w), addr, length);
	set_inline(sq, w, length);
}

void wr_set_inline_data_list(struct ibv_qp_ex *x, size_t num_buf,
			     const struct ibv_data_buf *buf_list) noexcept
{
	send_queue &sq = to_qp(x)->sq;
	uint64_t len = 0;

	for (size_t i = 0; i < num_buf && len <= sq.max_inline; i++)
		len += buf_list[i].length;

	sroce_send_wqe *w = inline_target(sq, len);
	if (!w)
		return;
	unsigned char *dst = payload(w);
	for (size_t i = 0; i < num_buf; i++) {
		if (buf_list[i].length)
			memcpy(dst, buf_list[i].addr, buf_list[i].length);
		dst += buf_list[i].length;
	}
	set_inline(sq, w, len);
}

void wr_start(struct ibv_qp_ex *x) noexcept
{
	send_queue &sq = to_qp(x)->sq;

	sq.lock.lock();
	reset_state(sq);
	if (!sq.ring || x->qp_base.state < IBV_QPS_RTS)
		sq.wr_err = EINVAL;
	else
		sq.wr_free = sq.ring->free_slots();
}

int wr_complete(struct ibv_qp_ex *x) noexcept
{
	qp *q = to_qp(x);
	send_queue &sq = q->sq;

	finish_current(sq);
	const int err = sq.wr_err;
	const uint32_t n = err ? 0 : sq.wr_count;

	if (n)
		sq.ring->publish(n);
	reset_state(sq);
	sq.lock.unlock();

	if (err)
		return err;
	return n ? send_doorbell(*q) : 0;
}

void wr_abort(struct ibv_qp_ex *x) noexcept
{
	send_queue &sq = to_qp(x)->sq;

	/* The slots written since wr_start were never published. */
	reset_state(sq);
	sq.lock.unlock();
}

} // namespace

void set_qp_ex_ops(qp &q, uint64_t send_ops_flags) noexcept
{
	struct ibv_qp_ex &x = q.vqp.qp_ex;
	const uint64_t f = send_ops_flags;

	if (f & IBV_QP_EX_WITH_SEND)
		x.wr_send = wr_send;
	if (f & IBV_QP_EX_WITH_SEND_WITH_IMM)
		x.wr_send_imm = wr_send_imm;
	if (f & IBV_QP_EX_WITH_SEND_WITH_INV)
		x.wr_send_inv = wr_send_inv;
	if (f & IBV_QP_EX_WITH_RDMA_WRITE)
		x.wr_rdma_write = wr_rdma_write;
	if (f & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		x.wr_rdma_write_imm = wr_rdma_write_imm;
	if (f & IBV_QP_EX_WITH_RDMA_READ)
		x.wr_rdma_read = wr_rdma_read;
	if (f & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		x.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	if (f & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		x.wr_atomic_fetch_add = wr_atomic_fetch_add;
	/* create_qp_ex lets this through only when kAtomicWriteSupported. */
	if (f & IBV_QP_EX_WITH_ATOMIC_WRITE)
		x.wr_atomic_write = wr_atomic_write;
	if (f & IBV_QP_EX_WITH_LOCAL_INV)
		x.wr_local_inv = wr_local_inv;
	if (f & IBV_QP_EX_WITH_BIND_MW)
		x.wr_bind_mw = wr_bind_mw;

	x.wr_set_ud_addr = wr_set_ud_addr;
	x.wr_set_xrc_srqn = wr_set_xrc_srqn;
	x.wr_set_sge = wr_set_sge;
	x.wr_set_sge_list = wr_set_sge_list;
	x.wr_set_inline_data = wr_set_inline_data;
	x.wr_set_inline_data_list = wr_set_inline_data_list;
	x.wr_start = wr_start;
	x.wr_complete = wr_complete;
	x.wr_abort = wr_abort;
}

} // namespace sroce
