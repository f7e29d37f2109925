// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ibv_qp_ex work request builder over a fake SQ. Every sequence is
 * checked against what ibv_post_send writes for the same work requests,
 * byte for byte, so the two posting paths cannot drift apart.
 */
#include "fake_rings.h"
#include "provider.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

namespace
{

using namespace sroce;
using namespace sroce::test;

constexpr uint64_t all_rc_ops =
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV;

struct WrApi : ::testing::Test {
	ibv_qp_cap cap = make_cap(16, 4, 128);
	fake_qp f{IBV_QPT_RC, cap};
	fake_qp ref{IBV_QPT_RC, cap}; /* the same WRs through post_send */
	std::array<ibv_sge, 4> sg{{
		{0x1000, 8, 0x11},
		{0x2000, 16, 0x22},
		{0x3000, 24, 0x33},
		{0x4000, 32, 0x44},
	}};
	std::vector<unsigned char> data = std::vector<unsigned char>(100);

	void SetUp() override
	{
		set_qp_ex_ops(*f.q, all_rc_ops);
		for (size_t i = 0; i < data.size(); i++)
			data[i] = static_cast<unsigned char>(i * 7);
	}
	ibv_qp_ex *x()
	{
		return f.qpx();
	}
	void post_ref(std::vector<ibv_send_wr> &wrs)
	{
		chain(wrs);
		ibv_send_wr *bad = nullptr;
		ASSERT_EQ(post_send(ref.ibqp(), wrs.data(), &bad), 0);
	}
	void expect_same_slots(uint32_t n)
	{
		EXPECT_EQ(f.sq.producer(), ref.sq.producer());
		for (uint32_t i = 0; i < n; i++)
			EXPECT_TRUE(same_bytes(f.sq.slot(i), ref.sq.slot(i),
					       f.sq.slot_size()))
				<< "slot " << i;
	}
};

TEST_F(WrApi, InstallsOnlyWhatWasAsked)
{
	auto q = c_new<qp>();
	set_qp_ex_ops(*q, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ);
	const ibv_qp_ex &e = q->vqp.qp_ex;

	EXPECT_NE(e.wr_send, nullptr);
	EXPECT_NE(e.wr_rdma_read, nullptr);
	EXPECT_EQ(e.wr_send_imm, nullptr);
	EXPECT_EQ(e.wr_rdma_write, nullptr);
	EXPECT_EQ(e.wr_atomic_cmp_swp, nullptr);
	EXPECT_EQ(e.wr_bind_mw, nullptr);
	EXPECT_EQ(e.wr_local_inv, nullptr);
	EXPECT_EQ(e.wr_send_tso, nullptr);
	EXPECT_EQ(e.wr_atomic_write, nullptr);
	EXPECT_NE(e.wr_set_sge, nullptr);
	EXPECT_NE(e.wr_set_sge_list, nullptr);
	EXPECT_NE(e.wr_set_inline_data, nullptr);
	EXPECT_NE(e.wr_set_inline_data_list, nullptr);
	EXPECT_NE(e.wr_set_ud_addr, nullptr);
	EXPECT_NE(e.wr_start, nullptr);
	EXPECT_NE(e.wr_complete, nullptr);
	EXPECT_NE(e.wr_abort, nullptr);
}

TEST_F(WrApi, EveryBuilderMatchesPostSend)
{
	std::vector<ibv_send_wr> wrs(8);
	ibv_data_buf bufs[2] = {{data.data(), 30}, {data.data() + 50, 40}};

	ibv_wr_start(x());

	x()->wr_id = 1;
	x()->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x());
	ibv_wr_set_sge(x(), 0x11, 0x1000, 8);
	wrs[0] = make_wr(IBV_WR_SEND, 1, sg.data(), 1);

	x()->wr_id = 2;
	x()->wr_flags = IBV_SEND_SOLICITED;
	ibv_wr_send_imm(x(), htonl(0x01020304));
	ibv_wr_set_sge_list(x(), 3, sg.data());
	wrs[1] = make_wr(IBV_WR_SEND_WITH_IMM, 2, sg.data(), 3,
			 IBV_SEND_SOLICITED);
	wrs[1].imm_data = htonl(0x01020304);

	x()->wr_id = 3;
	x()->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	ibv_wr_rdma_write(x(), 0xabc, 0x123456789aULL);
	ibv_wr_set_inline_data(x(), data.data(), 100);
	ibv_sge isg{reinterpret_cast<uintptr_t>(data.data()), 100, 0};
	wrs[2] = make_wr(IBV_WR_RDMA_WRITE, 3, &isg, 1,
			 IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	wrs[2].wr.rdma.rkey = 0xabc;
	wrs[2].wr.rdma.remote_addr = 0x123456789aULL;

	x()->wr_id = 4;
	x()->wr_flags = IBV_SEND_INLINE;
	ibv_wr_rdma_write_imm(x(), 0xdef, 0x2000, htonl(7));
	ibv_wr_set_inline_data_list(x(), 2, bufs);
	ibv_sge isg2[2] = {
		{reinterpret_cast<uintptr_t>(data.data()), 30, 0},
		{reinterpret_cast<uintptr_t>(data.data() + 50), 40, 0},
	};
	wrs[3] = make_wr(IBV_WR_RDMA_WRITE_WITH_IMM, 4, isg2, 2,
			 IBV_SEND_INLINE);
	wrs[3].imm_data = htonl(7);
	wrs[3].wr.rdma.rkey = 0xdef;
	wrs[3].wr.rdma.remote_addr = 0x2000;

	x()->wr_id = 5;
	x()->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	ibv_wr_rdma_read(x(), 0x77, 0x9000);
	ibv_wr_set_sge_list(x(), 2, sg.data() + 1);
	wrs[4] = make_wr(IBV_WR_RDMA_READ, 5, sg.data() + 1, 2,
			 IBV_SEND_SIGNALED | IBV_SEND_FENCE);
	wrs[4].wr.rdma.rkey = 0x77;
	wrs[4].wr.rdma.remote_addr = 0x9000;

	x()->wr_id = 6;
	x()->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_cmp_swp(x(), 0x88, 0xa000, 11, 22);
	ibv_wr_set_sge(x(), 0x11, 0x1000, 8);
	wrs[5] = make_wr(IBV_WR_ATOMIC_CMP_AND_SWP, 6, sg.data(), 1);
	wrs[5].wr.atomic.rkey = 0x88;
	wrs[5].wr.atomic.remote_addr = 0xa000;
	wrs[5].wr.atomic.compare_add = 11;
	wrs[5].wr.atomic.swap = 22;

	x()->wr_id = 7;
	x()->wr_flags = 0;
	ibv_wr_atomic_fetch_add(x(), 0x99, 0xb000, 33);
	ibv_wr_set_sge(x(), 0x11, 0x1000, 8);
	wrs[6] = make_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, 7, sg.data(), 1, 0);
	wrs[6].wr.atomic.rkey = 0x99;
	wrs[6].wr.atomic.remote_addr = 0xb000;
	wrs[6].wr.atomic.compare_add = 33;

	x()->wr_id = 8;
	x()->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_inv(x(), 0x4444);
	ibv_wr_set_sge(x(), 0x11, 0x1000, 8);
	wrs[7] = make_wr(IBV_WR_SEND_WITH_INV, 8, sg.data(), 1);
	wrs[7].invalidate_rkey = 0x4444;

	/* Nothing visible to the kernel before wr_complete. */
	EXPECT_EQ(f.sq.producer(), 0U);
	ASSERT_EQ(ibv_wr_complete(x()), 0);
	EXPECT_EQ(f.sq.producer(), 8U);
	EXPECT_EQ(doorbells.load(), 1);

	post_ref(wrs);
	expect_same_slots(8);
}

TEST_F(WrApi, SendWithoutDataAndSetterOverride)
{
	ibv_wr_start(x());
	x()->wr_id = 1;
	x()->wr_flags = IBV_SEND_INLINE; /* but the data comes as an SGE */
	ibv_wr_send(x());
	ibv_wr_set_inline_data(x(), data.data(), 10);
	ibv_wr_set_sge(x(), 0x11, 0x1000, 8); /* the last setter wins */
	x()->wr_id = 2;
	x()->wr_flags = 0;
	ibv_wr_send(x()); /* zero-length send */
	ASSERT_EQ(ibv_wr_complete(x()), 0);

	std::vector<ibv_send_wr> wrs(2);
	wrs[0] = make_wr(IBV_WR_SEND, 1, sg.data(), 1, 0);
	wrs[1] = make_wr(IBV_WR_SEND, 2, nullptr, 0, 0);
	post_ref(wrs);
	/* Inline bytes the SGE replaced stay behind; compare the header. */
	EXPECT_TRUE(same_bytes(f.sq.slot(0), ref.sq.slot(0), 64 + 16));
	EXPECT_TRUE(same_bytes(f.sq.slot(1), ref.sq.slot(1), 64));
}

TEST_F(WrApi, AbortPublishesNothing)
{
	ibv_wr_start(x());
	x()->wr_id = 1;
	x()->wr_flags = 0;
	ibv_wr_send(x());
	ibv_wr_set_sge(x(), 1, 2, 3);
	ibv_wr_send(x());
	ibv_wr_abort(x());
	EXPECT_EQ(f.sq.producer(), 0U);
	EXPECT_EQ(doorbells.load(), 0);

	/* The lock is free and the next batch reuses the same slots. */
	ibv_wr_start(x());
	x()->wr_id = 42;
	ibv_wr_send(x());
	ASSERT_EQ(ibv_wr_complete(x()), 0);
	EXPECT_EQ(f.sq.producer(), 1U);
	EXPECT_EQ(f.wqe(0)->wr_id, 42U);
	EXPECT_EQ(doorbells.load(), 1);

	ibv_send_wr wr{};
	wr.opcode = IBV_WR_SEND;
	ibv_send_wr *bad = nullptr;
	EXPECT_EQ(post_send(f.ibqp(), &wr, &bad), 0);
	EXPECT_EQ(f.sq.producer(), 2U);
}

TEST_F(WrApi, EmptyBatchRingsNoDoorbell)
{
	ibv_wr_start(x());
	EXPECT_EQ(ibv_wr_complete(x()), 0);
	EXPECT_EQ(doorbells.load(), 0);
}

/* wr_complete leaves the doorbell out as post_send does (PostSend). */
TEST_F(WrApi, NoDoorbellWhileTheRequesterLooksAnyway)
{
	auto send_one = [&] {
		ibv_wr_start(x());
		ibv_wr_send(x());
		ibv_wr_set_sge(x(), 0x11, 0x1000, 8);
		EXPECT_EQ(ibv_wr_complete(x()), 0);
	};

	f.sq.hdr()->polling = 1;
	send_one();
	EXPECT_EQ(f.sq.producer(), 1U);
	EXPECT_EQ(doorbells.load(), 0);

	f.sq.hdr()->polling = 0;
	send_one();
	EXPECT_EQ(f.sq.producer(), 2U);
	EXPECT_EQ(doorbells.load(), 1);
}

/* Start a batch, build one good WR, then run bad(); expect err, no trace. */
template <typename F> void expect_batch_fails(WrApi &t, int err, F bad)
{
	const uint32_t before = t.f.sq.producer();
	const int db = doorbells.load();

	ibv_wr_start(t.x());
	t.x()->wr_id = 1;
	t.x()->wr_flags = 0;
	ibv_wr_send(t.x());
	bad();
	/* Calls after the error are ignored. */
	ibv_wr_send(t.x());
	ibv_wr_set_sge(t.x(), 1, 2, 3);
	EXPECT_EQ(ibv_wr_complete(t.x()), err);
	EXPECT_EQ(t.f.sq.producer(), before);
	EXPECT_EQ(doorbells.load(), db);
	EXPECT_TRUE(t.f.q->sq.lock.try_lock());
	t.f.q->sq.lock.unlock();
}

TEST_F(WrApi, ErrorsFailTheWholeBatch)
{
	std::array<ibv_sge, 5> five{};
	expect_batch_fails(*this, EINVAL, [&] {
		ibv_wr_send(x());
		ibv_wr_set_sge_list(x(), 5, five.data());
	});
	expect_batch_fails(*this, EINVAL, [&] {
		ibv_wr_send(x());
		ibv_wr_set_inline_data(x(), data.data(), 129);
	});
	expect_batch_fails(*this, EINVAL, [&] {
		ibv_data_buf b[2] = {{data.data(), 100}, {data.data(), 29}};
		ibv_wr_send(x());
		ibv_wr_set_inline_data_list(x(), 2, b);
	});
	expect_batch_fails(*this, EINVAL, [&] {
		ibv_wr_rdma_read(x(), 1, 0x1000);
		ibv_wr_set_inline_data(x(), data.data(), 8);
	});
	expect_batch_fails(*this, EINVAL,
			   [&] { ibv_wr_atomic_fetch_add(x(), 1, 0x1003, 1); });
	expect_batch_fails(*this, EINVAL, [&] {
		/* An atomic without its 8-byte local buffer. */
		ibv_wr_atomic_cmp_swp(x(), 1, 0x1000, 1, 2);
	});
	expect_batch_fails(*this, EINVAL, [&] {
		ibv_wr_atomic_cmp_swp(x(), 1, 0x1000, 1, 2);
		ibv_wr_set_sge(x(), 1, 0x2000, 4);
	});
	expect_batch_fails(*this, EINVAL, [&] {
		x()->wr_flags = IBV_SEND_IP_CSUM;
		ibv_wr_send(x());
	});
	expect_batch_fails(*this, EINVAL, [&] {
		ibv_ah ah{};
		ibv_wr_send(x());
		ibv_wr_set_ud_addr(x(), &ah, 1, 2); /* not a UD QP */
	});
}

TEST_F(WrApi, SetterBeforeAnyBuilderIsEinval)
{
	ibv_wr_start(x());
	ibv_wr_set_sge(x(), 1, 2, 3);
	x()->wr_id = 1;
	ibv_wr_send(x());
	EXPECT_EQ(ibv_wr_complete(x()), EINVAL);
	EXPECT_EQ(f.sq.producer(), 0U);
}

TEST_F(WrApi, FullRingIsEnomemAndNothingPosted)
{
	ibv_wr_start(x());
	for (uint64_t i = 0; i < 17; i++) {
		x()->wr_id = i;
		ibv_wr_send(x());
	}
	EXPECT_EQ(ibv_wr_complete(x()), ENOMEM);
	EXPECT_EQ(f.sq.producer(), 0U);
	EXPECT_EQ(doorbells.load(), 0);

	/* Exactly the ring's size fits. */
	ibv_wr_start(x());
	for (uint64_t i = 0; i < 16; i++) {
		x()->wr_id = i;
		ibv_wr_send(x());
	}
	EXPECT_EQ(ibv_wr_complete(x()), 0);
	EXPECT_EQ(f.sq.producer(), 16U);

	/* Room comes back as the kernel consumes, even mid-batch. */
	ibv_wr_start(x());
	ibv_wr_send(x());
	EXPECT_EQ(ibv_wr_complete(x()), ENOMEM);
	ibv_wr_start(x());
	f.sq.set_consumer(2);
	ibv_wr_send(x());
	ibv_wr_send(x());
	EXPECT_EQ(ibv_wr_complete(x()), 0);
	EXPECT_EQ(f.sq.producer(), 18U);
}

TEST_F(WrApi, DoorbellErrorIsReturned)
{
	doorbell_result = EIO;
	ibv_wr_start(x());
	ibv_wr_send(x());
	EXPECT_EQ(ibv_wr_complete(x()), EIO);
	EXPECT_EQ(f.sq.producer(), 1U);
}

struct WrApiUd : ::testing::Test {
	fake_qp f{IBV_QPT_UD, make_cap(8, 2, 64)};
	fake_qp ref{IBV_QPT_UD, make_cap(8, 2, 64)};
	sroce::ah a{};

	void SetUp() override
	{
		set_qp_ex_ops(*f.q, IBV_QP_EX_WITH_SEND |
					    IBV_QP_EX_WITH_SEND_WITH_IMM);
		a.ibv_ah.handle = 0x77; /* the uverbs handle: never sent */
		a.ah_num = 0x4321;
	}
	ibv_qp_ex *x()
	{
		return f.qpx();
	}
};

TEST_F(WrApiUd, SetUdAddrWritesTheAhNumber)
{
	ibv_wr_start(x());
	x()->wr_id = 1;
	x()->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(x(), htonl(5));
	ibv_wr_set_ud_addr(x(), &a.ibv_ah, 0x123, 0x456);
	ibv_wr_set_sge(x(), 1, 0x1000, 10);
	ASSERT_EQ(ibv_wr_complete(x()), 0);

	sroce_send_wqe h;
	memset(&h, 0, sizeof(h));
	h.wr_id = 1;
	h.opcode = SROCE_WR_SEND_WITH_IMM;
	h.flags = SROCE_SEND_SIGNALED;
	h.num_sge = 1;
	h.imm_or_inv = htonl(5);
	h.ah = 0x4321;
	h.remote_qpn = 0x123;
	h.remote_qkey = 0x456;
	EXPECT_TRUE(same_bytes(f.wqe(0), &h, sizeof(h)));
}

TEST_F(WrApiUd, MatchesPostSend)
{
	std::vector<unsigned char> d(64, 0x3c);
	ibv_sge sg{0x2000, 20, 7};
	ibv_sge isg{reinterpret_cast<uintptr_t>(d.data()), 64, 0};

	ibv_wr_start(x());
	x()->wr_id = 10;
	x()->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	ibv_wr_send(x());
	/* Address after the data: the setters go in any order. */
	ibv_wr_set_sge(x(), sg.lkey, sg.addr, sg.length);
	ibv_wr_set_ud_addr(x(), &a.ibv_ah, 0xffffff, 0x11111111);
	x()->wr_id = 11;
	x()->wr_flags = 0;
	ibv_wr_send_imm(x(), htonl(0xfeed));
	ibv_wr_set_ud_addr(x(), &a.ibv_ah, 2, 3);
	ibv_wr_set_inline_data(x(), d.data(), d.size());
	ASSERT_EQ(ibv_wr_complete(x()), 0);

	std::vector<ibv_send_wr> wrs(2);
	wrs[0].wr_id = 10;
	wrs[0].opcode = IBV_WR_SEND;
	wrs[0].send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	wrs[0].sg_list = &sg;
	wrs[0].num_sge = 1;
	wrs[0].wr.ud.ah = &a.ibv_ah;
	wrs[0].wr.ud.remote_qpn = 0xffffff;
	wrs[0].wr.ud.remote_qkey = 0x11111111;
	wrs[0].next = &wrs[1];
	wrs[1].wr_id = 11;
	wrs[1].opcode = IBV_WR_SEND_WITH_IMM;
	wrs[1].imm_data = htonl(0xfeed);
	wrs[1].send_flags = IBV_SEND_INLINE;
	wrs[1].sg_list = &isg;
	wrs[1].num_sge = 1;
	wrs[1].wr.ud.ah = &a.ibv_ah;
	wrs[1].wr.ud.remote_qpn = 2;
	wrs[1].wr.ud.remote_qkey = 3;
	ibv_send_wr *bad = nullptr;
	ASSERT_EQ(post_send(ref.ibqp(), wrs.data(), &bad), 0);

	EXPECT_EQ(f.sq.producer(), 2U);
	EXPECT_EQ(ref.sq.producer(), 2U);
	for (uint32_t i = 0; i < 2; i++)
		EXPECT_TRUE(same_bytes(f.sq.slot(i), ref.sq.slot(i),
				       f.sq.slot_size()))
			<< "slot " << i;
	EXPECT_EQ(f.wqe(1)->ah, 0x4321U);
}

TEST_F(WrApiUd, NeedsAnAddressPerWr)
{
	/* The second WR forgot its address: the batch fails. */
	ibv_wr_start(x());
	ibv_wr_send(x());
	ibv_wr_set_ud_addr(x(), &a.ibv_ah, 1, 2);
	ibv_wr_send(x());
	EXPECT_EQ(ibv_wr_complete(x()), EINVAL);
	EXPECT_EQ(f.sq.producer(), 0U);

	/* A null AH. */
	ibv_wr_start(x());
	ibv_wr_send(x());
	ibv_wr_set_ud_addr(x(), nullptr, 1, 2);
	EXPECT_EQ(ibv_wr_complete(x()), EINVAL);

	/* An AH of another device. */
	ibv_context other{};
	sroce::ah foreign{};
	foreign.ibv_ah.context = &other;
	ibv_wr_start(x());
	ibv_wr_send(x());
	ibv_wr_set_ud_addr(x(), &foreign.ibv_ah, 1, 2);
	EXPECT_EQ(ibv_wr_complete(x()), EINVAL);

	/* The last WR of the batch without an address. */
	ibv_wr_start(x());
	ibv_wr_send(x());
	EXPECT_EQ(ibv_wr_complete(x()), EINVAL);
	EXPECT_EQ(f.sq.producer(), 0U);
	EXPECT_EQ(doorbells.load(), 0);
}

} // namespace
