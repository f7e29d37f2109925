/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Stand-ins for what sroce.ko gives the provider, so the data path is
 * tested without a kernel: rings in plain memory (the header the kernel
 * would write, then the slots), CQ and QP objects bound to them, and a
 * doorbell that only counts.
 */
#ifndef SROCE_TEST_FAKE_RINGS_H
#define SROCE_TEST_FAKE_RINGS_H

#include "cq.h"
#include "fake_queue.h"
#include "qp.h"
#include "util.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <vector>

namespace sroce::test
{

constexpr uint32_t log2_ceil(uint64_t v)
{
	uint32_t s = 0;
	while ((uint64_t{1} << s) < v)
		s++;
	return s;
}

/* The SQ slot size the kernel picks for these caps. */
inline uint32_t sq_shift(const ibv_qp_cap &cap)
{
	const uint64_t data = std::max<uint64_t>(cap.max_send_sge * 16ULL,
						 cap.max_inline_data);
	return log2_ceil(SROCE_SEND_WQE_HDR_SIZE + data);
}

inline uint32_t rq_shift(const ibv_qp_cap &cap)
{
	return log2_ceil(sizeof(sroce_recv_wqe) + cap.max_recv_sge * 16ULL);
}

/* Counts doorbells; the next one returns doorbell_result. */
inline std::atomic<int> doorbells{0};
inline std::atomic<int> doorbell_result{0};

inline int counting_doorbell(struct ibv_qp * /*qp*/) noexcept
{
	doorbells.fetch_add(1, std::memory_order_relaxed);
	return doorbell_result.load(std::memory_order_relaxed);
}

/* A QP bound to fake rings, with the counting doorbell. */
struct fake_qp {
	ibv_qp_cap cap;
	fake_queue sq;
	fake_queue rq;
	obj_ptr<qp> q;

	fake_qp(ibv_qp_type type, ibv_qp_cap c, uint32_t start = 0,
		bool with_rq = true) :
		cap(c),
		sq(std::max(c.max_send_wr, 1U), sq_shift(c), start),
		rq(std::max(c.max_recv_wr, 1U), rq_shift(c), start),
		q(c_new<qp>())
	{
		doorbells = 0;
		doorbell_result = 0;
		q->vqp.qp.qp_type = type;
		q->vqp.qp.qp_num = 0x11;
		/* Posting needs RTS (libibverbs keeps ibv_qp.state). */
		q->vqp.qp.state = IBV_QPS_RTS;
		q->doorbell = counting_doorbell;
		EXPECT_TRUE(q->sq.attach(sq.base(), sq.len(), cap));
		if (with_rq) {
			EXPECT_TRUE(q->rq.attach(rq.base(), rq.len(), cap));
		}
	}
	ibv_qp *ibqp()
	{
		return &q->vqp.qp;
	}
	ibv_qp_ex *qpx()
	{
		return &q->vqp.qp_ex;
	}
	const sroce_send_wqe *wqe(uint32_t idx)
	{
		return reinterpret_cast<const sroce_send_wqe *>(sq.slot(idx));
	}
	const sroce_sge *sges(uint32_t idx)
	{
		return reinterpret_cast<const sroce_sge *>(
			sq.slot(idx) + SROCE_SEND_WQE_HDR_SIZE);
	}
};

inline ibv_qp_cap make_cap(uint32_t send_wr, uint32_t send_sge,
			   uint32_t inline_data, uint32_t recv_wr = 8,
			   uint32_t recv_sge = 2)
{
	ibv_qp_cap c{};
	c.max_send_wr = send_wr;
	c.max_send_sge = send_sge;
	c.max_inline_data = inline_data;
	c.max_recv_wr = recv_wr;
	c.max_recv_sge = recv_sge;
	return c;
}

/* A send WR of op with the SGE list sg[0..num_sge); the rest zero. */
inline ibv_send_wr make_wr(ibv_wr_opcode op, uint64_t wr_id,
			   ibv_sge *sg = nullptr, int num_sge = 0,
			   unsigned flags = IBV_SEND_SIGNALED)
{
	ibv_send_wr wr{};
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = sg;
	wr.num_sge = num_sge;
	wr.send_flags = flags;
	return wr;
}

/* A receive WR with the SGE list sg[0..num_sge); the rest zero. */
inline ibv_recv_wr make_recv_wr(uint64_t wr_id, ibv_sge *sg = nullptr,
				int num_sge = 0)
{
	ibv_recv_wr wr{};
	wr.wr_id = wr_id;
	wr.sg_list = sg;
	wr.num_sge = num_sge;
	return wr;
}

/* The WRs of wrs (send or receive) linked in order into one list. */
template <typename Wrs> void chain(Wrs &wrs)
{
	const size_t n = std::size(wrs);
	for (size_t i = 0; i < n; i++)
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : nullptr;
}

/* A CQ bound to a fake ring the test fills as the kernel would. */
struct fake_cq {
	fake_queue ring;
	obj_ptr<cq> c;
	uint32_t kidx; /* the kernel's producer index */

	explicit fake_cq(uint32_t num_slots, uint32_t start = 0) :
		ring(num_slots, log2_ceil(sizeof(sroce_cqe)), start),
		c(c_new<cq>()), kidx(start)
	{
		c->vcq.cq.cqe = static_cast<int>(num_slots);
		EXPECT_TRUE(c->attach(ring.base(), ring.len()));
	}
	void push(const sroce_cqe &e)
	{
		memcpy(ring.slot(kidx), &e, sizeof(e));
		ring.set_producer(++kidx);
	}
	ibv_cq *ibcq()
	{
		return &c->vcq.cq;
	}
	ibv_cq_ex *ibcqx()
	{
		return &c->vcq.cq_ex;
	}
};

} // namespace sroce::test

#endif /* SROCE_TEST_FAKE_RINGS_H */
