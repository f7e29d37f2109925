// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ibv_post_send / ibv_post_recv: encode work requests into the mapped
 * rings, publish the producer index once per call, and for the send queue
 * ring one doorbell. The kernel copies every WQE once and re-validates it;
 * the checks here exist to give the caller the right errno and *bad_wr.
 */
#include "log.h"
#include "provider.h"
#include "qp.h"
#include "xrc.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace sroce
{

namespace
{

const void *user_ptr(uint64_t addr) noexcept
{
	// NOLINTNEXTLINE(performance-no-int-to-ptr): a verbs address is a VA
	return reinterpret_cast<const void *>(static_cast<uintptr_t>(addr));
}

unsigned char *payload(void *slot) noexcept
{
	return static_cast<unsigned char *>(slot) + SROCE_SEND_WQE_HDR_SIZE;
}

void put_sges(unsigned char *dst, const struct ibv_sge *sg, size_t n) noexcept
{
	for (size_t i = 0; i < n; i++) {
		const sroce_sge s = {
			.addr = sg[i].addr,
			.length = sg[i].length,
			.lkey = sg[i].lkey,
		};
		memcpy(dst + i * sizeof(s), &s, sizeof(s));
	}
}

} // namespace

uint32_t allowed_opcodes(enum ibv_qp_type type) noexcept
{
	/* The ABI's opcode table, without what only kernel QPs post. */
	constexpr uint64_t user =
		~uint64_t{SROCE_WR_KERNEL_OPS} &
		~(kAtomicWriteSupported ? 0
					: SROCE_WR_BIT(SROCE_WR_ATOMIC_WRITE));
	static_assert(((SROCE_WR_RC_OPS & user) >> 32) == 0,
		      "a user opcode does not fit op_bit()'s 32 bits");

	switch (type) {
	case IBV_QPT_RC:
	case IBV_QPT_XRC_SEND: /* XRC INI: RC's requests, to an XRC SRQ */
		return static_cast<uint32_t>(SROCE_WR_RC_OPS & user);
	case IBV_QPT_UC:
		return static_cast<uint32_t>(SROCE_WR_UC_OPS & user);
	case IBV_QPT_UD:
		return static_cast<uint32_t>(SROCE_WR_UD_OPS & user);
	default:
		return 0;
	}
}

uint64_t allowed_send_ops(enum ibv_qp_type type) noexcept
{
	struct map {
		enum ibv_wr_opcode op;
		uint64_t flag;
	};
	static constexpr map ops[] = {
		{IBV_WR_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE},
		{IBV_WR_RDMA_WRITE_WITH_IMM,
		 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM},
		{IBV_WR_SEND, IBV_QP_EX_WITH_SEND},
		{IBV_WR_SEND_WITH_IMM, IBV_QP_EX_WITH_SEND_WITH_IMM},
		{IBV_WR_RDMA_READ, IBV_QP_EX_WITH_RDMA_READ},
		{IBV_WR_ATOMIC_CMP_AND_SWP, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP},
		{IBV_WR_ATOMIC_FETCH_AND_ADD,
		 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD},
		{IBV_WR_SEND_WITH_INV, IBV_QP_EX_WITH_SEND_WITH_INV},
		{IBV_WR_ATOMIC_WRITE, IBV_QP_EX_WITH_ATOMIC_WRITE},
		{IBV_WR_LOCAL_INV, IBV_QP_EX_WITH_LOCAL_INV},
		{IBV_WR_BIND_MW, IBV_QP_EX_WITH_BIND_MW},
	};
	const uint32_t allowed = allowed_opcodes(type);
	uint64_t flags = 0;

	for (const auto &m : ops)
		if (allowed & op_bit(m.op))
			flags |= m.flag;
	return flags;
}

bool send_queue::attach(void *base, size_t len,
			const struct ibv_qp_cap &cap) noexcept
{
	/* The slot must hold what the kernel promised in cap. */
	const size_t need =
		SROCE_SEND_WQE_HDR_SIZE +
		std::max(size_t{cap.max_send_sge} * sizeof(sroce_sge),
			 size_t{cap.max_inline_data});
	const auto r = sroce::ring::attach(base, len, need);

	if (!r || r->num_slots() < cap.max_send_wr)
		return false;
	const size_t room = r->slot_size() - SROCE_SEND_WQE_HDR_SIZE;
	max_sge = static_cast<uint32_t>(std::min<size_t>(
		{cap.max_send_sge, room / sizeof(sroce_sge), UINT16_MAX}));
	max_inline = static_cast<uint32_t>(
		std::min<size_t>(cap.max_inline_data, room));
	ring.emplace(*r);
	return true;
}

bool recv_queue::attach(void *base, size_t len,
			const struct ibv_qp_cap &cap) noexcept
{
	return attach(base, len, cap.max_recv_wr, cap.max_recv_sge);
}

bool recv_queue::attach(void *base, size_t len, uint32_t max_wr,
			uint32_t sges) noexcept
{
	const size_t need =
		sizeof(sroce_recv_wqe) + size_t{sges} * sizeof(sroce_sge);
	const auto r = sroce::ring::attach(base, len, need);

	if (!r || r->num_slots() < max_wr)
		return false;
	const size_t room = r->slot_size() - sizeof(sroce_recv_wqe);
	max_sge = static_cast<uint32_t>(
		std::min<size_t>(sges, room / sizeof(sroce_sge)));
	ring.emplace(*r);
	return true;
}

bool bind_ok(const struct ibv_context *ctx, const struct ibv_mw *mw,
	     uint32_t rkey, const struct ibv_mw_bind_info &b) noexcept
{
	/* The new key names the same window; no zero-based windows. */
	return mw && mw->context == ctx && (rkey >> 8) == (mw->rkey >> 8) &&
	       (b.mr ? b.mr->context == ctx : !b.length) &&
	       !(b.mw_access_flags & IBV_ACCESS_ZERO_BASED);
}

void encode_bind(sroce_send_wqe &h, uint32_t rkey,
		 const struct ibv_mw_bind_info &b) noexcept
{
	h.imm_or_inv = rkey;
	h.rkey = b.mr ? b.mr->lkey : 0;
	h.remote_addr = b.addr;
	h.compare_add = b.length;
	h.swap = b.mw_access_flags;
}

int encode_send_wqe(const qp &q, const struct ibv_send_wr &wr,
		    void *slot) noexcept
{
	const send_queue &sq = q.sq;
	const enum ibv_qp_type type = q.vqp.qp.qp_type;
	const auto op = static_cast<unsigned>(wr.opcode);

	if (wr.opcode == IBV_WR_ATOMIC_WRITE &&
	    (type == IBV_QPT_RC || type == IBV_QPT_XRC_SEND))
		return encode_atomic_write_wqe(q, wr, slot); /* xrc.cpp */
	if (op >= 32 || !(allowed_opcodes(type) & (1U << op)))
		return EINVAL;
	if (wr.send_flags & ~send_flags_mask)
		return EINVAL;
	if (wr.num_sge < 0 || (wr.num_sge > 0 && !wr.sg_list))
		return EINVAL;

	const auto nsge = static_cast<size_t>(wr.num_sge);
	const bool is_inline = wr.send_flags & IBV_SEND_INLINE;
	uint64_t len = 0;

	for (size_t i = 0; i < nsge; i++)
		len += wr.sg_list[i].length;

	if (is_inline) {
		if (!(inline_opcodes & (1U << op)) || len > sq.max_inline)
			return EINVAL;
	} else if (nsge > sq.max_sge) {
		return EINVAL;
	}
	if (atomic_opcodes & (1U << op)) {
		/*
		 * A misaligned remote address is the responder's to refuse
		 * (NAK invalid request -> IBV_WC_REM_INV_REQ_ERR), as on a
		 * hardware RoCE NIC; only the local 8-byte result buffer is
		 * checked here.
		 */
		if (len < atomic_len)
			return EINVAL;
	}
	if (wr.opcode == IBV_WR_BIND_MW &&
	    (is_inline || !bind_ok(q.vqp.qp.context, wr.bind_mw.mw,
				   wr.bind_mw.rkey, wr.bind_mw.bind_info)))
		return EINVAL;
	/* An AH of another device would not be one of ours to read. */
	if (type == IBV_QPT_UD &&
	    (!wr.wr.ud.ah || wr.wr.ud.ah->context != q.vqp.qp.context))
		return EINVAL;

	sroce_send_wqe h = {};
	h.wr_id = wr.wr_id;
	h.opcode = static_cast<__u8>(op);
	h.flags = static_cast<__u8>(wr.send_flags);

	switch (wr.opcode) {
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		h.imm_or_inv = wr.imm_data;
		[[fallthrough]];
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_READ:
		h.rkey = wr.wr.rdma.rkey;
		h.remote_addr = wr.wr.rdma.remote_addr;
		break;
	case IBV_WR_SEND_WITH_IMM:
		h.imm_or_inv = wr.imm_data;
		break;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		h.imm_or_inv = wr.invalidate_rkey;
		break;
	case IBV_WR_BIND_MW:
		encode_bind(h, wr.bind_mw.rkey, wr.bind_mw.bind_info);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		h.rkey = wr.wr.atomic.rkey;
		h.remote_addr = wr.wr.atomic.remote_addr;
		h.compare_add = wr.wr.atomic.compare_add;
		h.swap = wr.wr.atomic.swap;
		break;
	default:
		break;
	}
	if (type == IBV_QPT_UD) {
		h.ah = to_ah(wr.wr.ud.ah)->ah_num;
		h.remote_qpn = wr.wr.ud.remote_qpn;
		h.remote_qkey = wr.wr.ud.remote_qkey;
	}
	if (type == IBV_QPT_XRC_SEND)
		h.remote_qpn = wr.qp_type.xrc.remote_srqn;

	unsigned char *dst = payload(slot);
	if (wr.opcode == IBV_WR_BIND_MW || wr.opcode == IBV_WR_LOCAL_INV) {
		/* Local operations carry no data. */
	} else if (is_inline) {
		for (size_t i = 0; i < nsge; i++) {
			const uint32_t n = wr.sg_list[i].length;
			if (n)
				memcpy(dst, user_ptr(wr.sg_list[i].addr), n);
			dst += n;
		}
		h.inline_len = static_cast<__u32>(len);
	} else {
		put_sges(dst, wr.sg_list, nsge);
		h.num_sge = static_cast<__u16>(nsge);
	}
	memcpy(slot, &h, sizeof(h));
	return 0;
}

int encode_recv_wqe(const recv_queue &rq, const struct ibv_recv_wr &wr,
		    void *slot) noexcept
{
	if (wr.num_sge < 0 || static_cast<uint32_t>(wr.num_sge) > rq.max_sge ||
	    (wr.num_sge > 0 && !wr.sg_list))
		return EINVAL;

	const sroce_recv_wqe h = {
		.wr_id = wr.wr_id,
		.num_sge = static_cast<__u32>(wr.num_sge),
		.reserved = 0,
	};
	memcpy(slot, &h, sizeof(h));
	put_sges(static_cast<unsigned char *>(slot) + sizeof(h), wr.sg_list,
		 static_cast<size_t>(wr.num_sge));
	return 0;
}

int kernel_doorbell(struct ibv_qp *ibqp) noexcept
{
	struct ibv_send_wr *bad = nullptr;

	/* POST_SEND with wr_count 0: "look at the SQ ring". */
	return ibv_cmd_post_send(ibqp, nullptr, &bad);
}

int send_doorbell(qp &q) noexcept
{
	if (!q.sq.ring->needs_doorbell())
		return 0;
	return q.doorbell(&q.vqp.qp);
}

int post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
	      struct ibv_send_wr **bad_wr) noexcept
{
	qp *q = to_qp(ibqp);
	send_queue &sq = q->sq;
	struct ibv_send_wr *const first = wr;
	uint32_t n = 0;
	int ret = 0;

	{
		const std::lock_guard<spinlock> guard(sq.lock);

		/* IBTA C10-96: nothing is posted to the SQ before RTS. */
		if (!sq.ring || ibqp->state < IBV_QPS_RTS) {
			*bad_wr = wr;
			return EINVAL;
		}
		ret = sq.ring->produce(
			wr, n, [q](const struct ibv_send_wr &w, void *slot) {
				return encode_send_wqe(*q, w, slot);
			});
	}

	if (ret)
		*bad_wr = wr;
	/*
	 * Outside the lock: every publish is followed by at least one
	 * doorbell, whichever thread's it is, or by a look at the requester
	 * that says it will read the producer index anyway; the kernel reads
	 * the producer index, not the doorbell count.
	 */
	if (n) {
		const int db = send_doorbell(*q);
		/*
		 * The WQEs are in the ring and the kernel may run them at the
		 * next doorbell; still report that this one failed.
		 */
		if (db && !ret) {
			ret = db;
			*bad_wr = first;
		}
	}
	return ret;
}

int produce_recv(recv_queue &rq, struct ibv_recv_wr *&wr,
		 uint32_t &posted) noexcept
{
	return rq.ring->produce(wr, posted,
				[&rq](const struct ibv_recv_wr &w, void *slot) {
					return encode_recv_wqe(rq, w, slot);
				});
}

int post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
	      struct ibv_recv_wr **bad_wr) noexcept
{
	qp *q = to_qp(ibqp);
	recv_queue &rq = q->rq;
	std::unique_lock<spinlock> guard(rq.lock);
	uint32_t n = 0;

	if (!rq.ring || ibqp->state == IBV_QPS_RESET) {
		/*
		 * The QP receives through an SRQ (or has no RQ at all), or
		 * is in RESET, where the RQ cannot take work (IBTA C10-97).
		 */
		*bad_wr = wr;
		return EINVAL;
	}
	const int ret = produce_recv(rq, wr, n);
	const bool flush = n && rq.ring->qp_in_error();
	guard.unlock();
	if (ret)
		*bad_wr = wr;
	/*
	 * post_recv never enters the kernel, so receives posted to a QP in
	 * the error state would never be flushed: ring the send doorbell,
	 * on which the kernel flushes both queues of an errored QP.
	 */
	if (flush)
		q->doorbell(ibqp);
	return ret;
}

} // namespace sroce
