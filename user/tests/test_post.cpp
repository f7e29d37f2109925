// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ibv_post_send / ibv_post_recv into fake rings: the bytes each work
 * request becomes (checked against struct sroce_send_wqe field by field and
 * as raw memory), the rejects and their errno/bad_wr, and the ring limits.
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

/* An opcode no verbs.h names, the way a C caller could pass one. */
ibv_wr_opcode out_of_range_op()
{
	ibv_wr_opcode op{};
	const int v = 40;
	static_assert(sizeof(op) == sizeof(v));
	memcpy(&op, &v, sizeof(op));
	return op;
}

/* The header the kernel must find for wr, built independently. */
sroce_send_wqe expected_hdr(uint64_t wr_id, uint8_t op, uint8_t flags,
			    uint16_t nsge)
{
	sroce_send_wqe h;
	memset(&h, 0, sizeof(h));
	h.wr_id = wr_id;
	h.opcode = op;
	h.flags = flags;
	h.num_sge = nsge;
	return h;
}

struct PostSend : ::testing::Test {
	fake_qp f{IBV_QPT_RC, make_cap(16, 4, 128)};
	std::array<ibv_sge, 4> sg{{
		{0x1000, 8, 0x11},
		{0x2000, 16, 0x22},
		{0x3000, 24, 0x33},
		{0x4000, 32, 0x44},
	}};

	int post(ibv_send_wr &wr, ibv_send_wr **bad)
	{
		return post_send(f.ibqp(), &wr, bad);
	}
	void expect_slot(uint32_t idx, const sroce_send_wqe &h, size_t nsge)
	{
		EXPECT_TRUE(same_bytes(f.wqe(idx), &h, sizeof(h)))
			<< "header of slot " << idx;
		for (size_t i = 0; i < nsge; i++) {
			const sroce_sge want = {sg[i].addr, sg[i].length,
						sg[i].lkey};
			EXPECT_TRUE(same_bytes(&f.sges(idx)[i], &want,
					       sizeof(want)))
				<< "sge " << i << " of slot " << idx;
		}
	}
};

TEST_F(PostSend, CapsFromTheKernelAndTheSlot)
{
	EXPECT_EQ(f.q->sq.max_sge, 4U);
	EXPECT_EQ(f.q->sq.max_inline, 128U);
	EXPECT_EQ(f.sq.slot_size(), 256U); /* 64 + max(4 * 16, 128) -> 256 */
	EXPECT_EQ(f.q->rq.max_sge, 2U);
}

TEST_F(PostSend, SendWithSges)
{
	ibv_send_wr wr = make_wr(IBV_WR_SEND, 0xabcdef0123456789ULL, sg.data(),
				 3, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
	ibv_send_wr *bad = nullptr;

	ASSERT_EQ(post(wr, &bad), 0);
	EXPECT_EQ(bad, nullptr);
	EXPECT_EQ(f.sq.producer(), 1U);
	EXPECT_EQ(doorbells.load(), 1);
	expect_slot(0,
		    expected_hdr(wr.wr_id, SROCE_WR_SEND,
				 SROCE_SEND_SIGNALED | SROCE_SEND_SOLICITED, 3),
		    3);

	/* Raw bytes, in case the struct and the test agree on a mistake. */
	const unsigned char *s = f.sq.slot(0);
	uint64_t v64 = 0;
	memcpy(&v64, s, 8);
	EXPECT_EQ(v64, wr.wr_id);
	EXPECT_EQ(s[8], 2);		    /* opcode SEND */
	EXPECT_EQ(s[9], 0x6);		    /* SIGNALED | SOLICITED */
	EXPECT_EQ(s[10] | (s[11] << 8), 3); /* num_sge */
	memcpy(&v64, s + 64, 8);
	EXPECT_EQ(v64, 0x1000U); /* first SGE right after the header */
	uint32_t v32 = 0;
	memcpy(&v32, s + 64 + 8, 4);
	EXPECT_EQ(v32, 8U);
	memcpy(&v32, s + 64 + 12, 4);
	EXPECT_EQ(v32, 0x11U);
}

TEST_F(PostSend, EveryRcOpcode)
{
	std::vector<ibv_send_wr> wrs;
	std::vector<sroce_send_wqe> want;

	{
		auto w = make_wr(IBV_WR_RDMA_WRITE, 1, sg.data(), 2);
		w.wr.rdma.remote_addr = 0x1122334455667788ULL;
		w.wr.rdma.rkey = 0xdeadbeef;
		auto h = expected_hdr(1, SROCE_WR_RDMA_WRITE,
				      SROCE_SEND_SIGNALED, 2);
		h.remote_addr = 0x1122334455667788ULL;
		h.rkey = 0xdeadbeef;
		wrs.push_back(w);
		want.push_back(h);
	}
	{
		auto w = make_wr(IBV_WR_RDMA_WRITE_WITH_IMM, 2, sg.data(), 1);
		w.wr.rdma.remote_addr = 0x10;
		w.wr.rdma.rkey = 7;
		w.imm_data = htonl(0x01020304);
		auto h = expected_hdr(2, SROCE_WR_RDMA_WRITE_WITH_IMM,
				      SROCE_SEND_SIGNALED, 1);
		h.remote_addr = 0x10;
		h.rkey = 7;
		h.imm_or_inv = htonl(0x01020304);
		wrs.push_back(w);
		want.push_back(h);
	}
	{
		auto w = make_wr(IBV_WR_SEND, 3, sg.data(), 4, 0);
		wrs.push_back(w);
		want.push_back(expected_hdr(3, SROCE_WR_SEND, 0, 4));
	}
	{
		auto w = make_wr(IBV_WR_SEND_WITH_IMM, 4, sg.data(), 1);
		w.imm_data = htonl(0xcafef00d);
		auto h = expected_hdr(4, SROCE_WR_SEND_WITH_IMM,
				      SROCE_SEND_SIGNALED, 1);
		h.imm_or_inv = htonl(0xcafef00d);
		wrs.push_back(w);
		want.push_back(h);
	}
	{
		auto w = make_wr(IBV_WR_RDMA_READ, 5, sg.data(), 2,
				 IBV_SEND_SIGNALED | IBV_SEND_FENCE);
		w.wr.rdma.remote_addr = 0x7000;
		w.wr.rdma.rkey = 0x55;
		auto h =
			expected_hdr(5, SROCE_WR_RDMA_READ,
				     SROCE_SEND_SIGNALED | SROCE_SEND_FENCE, 2);
		h.remote_addr = 0x7000;
		h.rkey = 0x55;
		wrs.push_back(w);
		want.push_back(h);
	}
	{
		auto w = make_wr(IBV_WR_ATOMIC_CMP_AND_SWP, 6, sg.data(), 1);
		w.wr.atomic.remote_addr = 0x8008;
		w.wr.atomic.rkey = 0x66;
		w.wr.atomic.compare_add = 0x1111;
		w.wr.atomic.swap = 0x2222;
		auto h = expected_hdr(6, SROCE_WR_ATOMIC_CMP_AND_SWP,
				      SROCE_SEND_SIGNALED, 1);
		h.remote_addr = 0x8008;
		h.rkey = 0x66;
		h.compare_add = 0x1111;
		h.swap = 0x2222;
		wrs.push_back(w);
		want.push_back(h);
	}
	{
		auto w = make_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, 7, sg.data(), 1);
		w.wr.atomic.remote_addr = 0x9000;
		w.wr.atomic.rkey = 0x77;
		w.wr.atomic.compare_add = 5;
		auto h = expected_hdr(7, SROCE_WR_ATOMIC_FETCH_AND_ADD,
				      SROCE_SEND_SIGNALED, 1);
		h.remote_addr = 0x9000;
		h.rkey = 0x77;
		h.compare_add = 5;
		wrs.push_back(w);
		want.push_back(h);
	}
	{
		auto w = make_wr(IBV_WR_SEND_WITH_INV, 9, sg.data(), 1);
		w.invalidate_rkey = 0x9abc;
		auto h = expected_hdr(9, SROCE_WR_SEND_WITH_INV,
				      SROCE_SEND_SIGNALED, 1);
		h.imm_or_inv = 0x9abc;
		wrs.push_back(w);
		want.push_back(h);
	}
	chain(wrs);

	ibv_send_wr *bad = nullptr;
	ASSERT_EQ(post_send(f.ibqp(), wrs.data(), &bad), 0);
	EXPECT_EQ(bad, nullptr);
	EXPECT_EQ(f.sq.producer(), wrs.size());
	EXPECT_EQ(doorbells.load(), 1) << "one doorbell per call";
	for (uint32_t i = 0; i < want.size(); i++)
		expect_slot(i, want[i], want[i].num_sge);
}

/* A provider AH whose uverbs handle and AH number differ. */
sroce::ah make_ah(uint32_t handle, uint32_t ah_num)
{
	sroce::ah a;
	memset(&a, 0, sizeof(a));
	a.ibv_ah.handle = handle;
	a.ah_num = ah_num;
	return a;
}

struct PostSendUd : ::testing::Test {
	fake_qp f{IBV_QPT_UD, make_cap(8, 2, 64)};
	sroce::ah a = make_ah(0x42, 0x1234);
	ibv_sge sg{0x5000, 100, 9};

	ibv_send_wr make_ud_wr(ibv_wr_opcode op, uint64_t wr_id)
	{
		ibv_send_wr wr = make_wr(op, wr_id, &sg, 1);
		wr.wr.ud.ah = &a.ibv_ah;
		wr.wr.ud.remote_qpn = 0xabcdef;
		wr.wr.ud.remote_qkey = 0x11111111;
		return wr;
	}
};

TEST_F(PostSendUd, AddressIsTheAhNumberNotTheHandle)
{
	ibv_send_wr wr = make_ud_wr(IBV_WR_SEND_WITH_IMM, 77);
	wr.imm_data = htonl(0xa0b0c0d0);
	ibv_send_wr *bad = nullptr;

	ASSERT_EQ(post_send(f.ibqp(), &wr, &bad), 0);
	EXPECT_EQ(bad, nullptr);
	EXPECT_EQ(doorbells.load(), 1);
	auto h = expected_hdr(77, SROCE_WR_SEND_WITH_IMM, SROCE_SEND_SIGNALED,
			      1);
	h.imm_or_inv = htonl(0xa0b0c0d0);
	h.ah = 0x1234;
	h.remote_qpn = 0xabcdef;
	h.remote_qkey = 0x11111111;
	EXPECT_TRUE(same_bytes(f.wqe(0), &h, sizeof(h)));

	/* The raw words at 48/52/56, as the kernel reads them. */
	const unsigned char *s = f.sq.slot(0);
	uint32_t v32 = 0;
	memcpy(&v32, s + 48, 4);
	EXPECT_EQ(v32, 0x1234U);
	memcpy(&v32, s + 52, 4);
	EXPECT_EQ(v32, 0xabcdefU);
	memcpy(&v32, s + 56, 4);
	EXPECT_EQ(v32, 0x11111111U);

	/* A plain SEND: no immediate. */
	wr = make_ud_wr(IBV_WR_SEND, 78);
	wr.wr.ud.remote_qkey = 0x80010000; /* a controlled qkey goes as is */
	ASSERT_EQ(post_send(f.ibqp(), &wr, &bad), 0);
	h = expected_hdr(78, SROCE_WR_SEND, SROCE_SEND_SIGNALED, 1);
	h.ah = 0x1234;
	h.remote_qpn = 0xabcdef;
	h.remote_qkey = 0x80010000;
	EXPECT_TRUE(same_bytes(f.wqe(1), &h, sizeof(h)));
}

TEST_F(PostSendUd, OnlySendAndSendWithImm)
{
	for (auto op :
	     {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
	      IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
	      IBV_WR_LOCAL_INV, IBV_WR_BIND_MW, IBV_WR_SEND_WITH_INV,
	      IBV_WR_TSO, IBV_WR_DRIVER1, IBV_WR_ATOMIC_WRITE}) {
		/* A good WR first: posted; the bad one stops the list. */
		ibv_send_wr good = make_ud_wr(IBV_WR_SEND, 1);
		ibv_send_wr wr = make_ud_wr(op, 2);
		wr.wr.atomic.remote_addr = 0x1000; /* whatever the union */
		good.next = &wr;
		const uint32_t before = f.sq.producer();
		ibv_send_wr *bad = nullptr;

		EXPECT_EQ(post_send(f.ibqp(), &good, &bad), EINVAL) << op;
		EXPECT_EQ(bad, &wr) << op;
		EXPECT_EQ(f.sq.producer(), before + 1) << op;
		f.sq.set_consumer(f.sq.producer());
	}
}

TEST_F(PostSendUd, NeedsAnAhOfThisContext)
{
	ibv_send_wr wr = make_ud_wr(IBV_WR_SEND, 1);
	ibv_send_wr *bad = nullptr;

	wr.wr.ud.ah = nullptr;
	EXPECT_EQ(post_send(f.ibqp(), &wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);

	/* An AH from another device (another provider's object). */
	ibv_context other{};
	sroce::ah foreign = make_ah(1, 2);
	foreign.ibv_ah.context = &other;
	wr.wr.ud.ah = &foreign.ibv_ah;
	bad = nullptr;
	EXPECT_EQ(post_send(f.ibqp(), &wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);
	EXPECT_EQ(f.sq.producer(), 0U);
	EXPECT_EQ(doorbells.load(), 0);
}

TEST_F(PostSendUd, InlineSend)
{
	std::vector<unsigned char> d(64);
	for (size_t i = 0; i < d.size(); i++)
		d[i] = static_cast<unsigned char>(0x80 + i);
	ibv_sge isg{reinterpret_cast<uintptr_t>(d.data()), 64, 0};
	ibv_send_wr wr = make_ud_wr(IBV_WR_SEND, 5);
	wr.sg_list = &isg;
	wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	ibv_send_wr *bad = nullptr;

	ASSERT_EQ(post_send(f.ibqp(), &wr, &bad), 0);
	auto h = expected_hdr(5, SROCE_WR_SEND,
			      SROCE_SEND_INLINE | SROCE_SEND_SIGNALED, 0);
	h.inline_len = 64;
	h.ah = 0x1234;
	h.remote_qpn = 0xabcdef;
	h.remote_qkey = 0x11111111;
	EXPECT_TRUE(same_bytes(f.wqe(0), &h, sizeof(h)));
	EXPECT_TRUE(same_bytes(f.sq.slot(0) + SROCE_SEND_WQE_HDR_SIZE, d.data(),
			       d.size()));

	isg.length = 65; /* over max_inline */
	EXPECT_EQ(post_send(f.ibqp(), &wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);
	EXPECT_EQ(f.sq.producer(), 1U);
}

/*
 * UC carries SENDs and WRITEs only: no READ, no atomics, and no SEND with
 * Invalidate (the IBTA has no UC opcode for it; the kernel refused such a
 * WQE only when it fetched it, completing it in error).
 */
TEST(PostSendUc, NoReadsAtomicsOrSendWithInvalidate)
{
	fake_qp f{IBV_QPT_UC, make_cap(8, 2, 64)};
	ibv_sge sg{0x5000, 8, 9};
	ibv_send_wr *bad = nullptr;

	for (auto op : {IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
			IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_WRITE,
			IBV_WR_SEND_WITH_INV}) {
		ibv_send_wr wr = make_wr(op, 1, &sg, 1);
		EXPECT_EQ(post_send(f.ibqp(), &wr, &bad), EINVAL) << op;
		EXPECT_EQ(bad, &wr);
	}
	ibv_send_wr wr = make_wr(IBV_WR_RDMA_WRITE_WITH_IMM, 2, &sg, 1);
	EXPECT_EQ(post_send(f.ibqp(), &wr, &bad), 0);
	EXPECT_EQ(f.sq.producer(), 1U);
}

TEST_F(PostSend, InlineCopiesAcrossSges)
{
	std::vector<unsigned char> a(5), b(0), c(70);
	for (size_t i = 0; i < a.size(); i++)
		a[i] = static_cast<unsigned char>(0xa0 + i);
	for (size_t i = 0; i < c.size(); i++)
		c[i] = static_cast<unsigned char>(i);
	ibv_sge isg[3] = {
		{reinterpret_cast<uintptr_t>(a.data()), 5, 0},
		{0, 0, 0}, /* empty and never dereferenced */
		{reinterpret_cast<uintptr_t>(c.data()), 70, 0},
	};
	ibv_send_wr wr = make_wr(IBV_WR_RDMA_WRITE, 5, isg, 3,
				 IBV_SEND_INLINE | IBV_SEND_SIGNALED);
	wr.wr.rdma.remote_addr = 0x100;
	wr.wr.rdma.rkey = 3;
	ibv_send_wr *bad = nullptr;

	ASSERT_EQ(post(wr, &bad), 0);
	auto h = expected_hdr(5, SROCE_WR_RDMA_WRITE,
			      SROCE_SEND_INLINE | SROCE_SEND_SIGNALED, 0);
	h.inline_len = 75;
	h.remote_addr = 0x100;
	h.rkey = 3;
	EXPECT_TRUE(same_bytes(f.wqe(0), &h, sizeof(h)));
	const unsigned char *data = f.sq.slot(0) + SROCE_SEND_WQE_HDR_SIZE;
	EXPECT_TRUE(same_bytes(data, a.data(), 5));
	EXPECT_TRUE(same_bytes(data + 5, c.data(), 70));

	/* Exactly max_inline fits; one byte more does not. */
	std::vector<unsigned char> big(129, 0x5a);
	ibv_sge bsg{reinterpret_cast<uintptr_t>(big.data()), 128, 0};
	ibv_send_wr w2 = make_wr(IBV_WR_SEND, 6, &bsg, 1, IBV_SEND_INLINE);
	ASSERT_EQ(post(w2, &bad), 0);
	EXPECT_EQ(f.wqe(1)->inline_len, 128U);
	EXPECT_TRUE(same_bytes(f.sq.slot(1) + 64, big.data(), 128));
	bsg.length = 129;
	EXPECT_EQ(post(w2, &bad), EINVAL);
	EXPECT_EQ(bad, &w2);
	EXPECT_EQ(f.sq.producer(), 2U);
}

TEST_F(PostSend, RejectsWithTheRightErrnoAndBadWr)
{
	ibv_send_wr *bad = nullptr;
	std::array<ibv_sge, 5> five{};
	ibv_sge shortsg{0x1000, 4, 1};

	struct bad_case {
		const char *what;
		ibv_send_wr wr;
	};
	std::vector<bad_case> cases;
	cases.push_back(
		{"too many SGEs", make_wr(IBV_WR_SEND, 1, five.data(), 5)});
	cases.push_back(
		{"negative num_sge", make_wr(IBV_WR_SEND, 1, sg.data(), -1)});
	cases.push_back(
		{"bind_mw without a window", make_wr(IBV_WR_BIND_MW, 1)});
	cases.push_back({"opcode out of range", make_wr(out_of_range_op(), 1)});
	cases.push_back({"TSO", make_wr(IBV_WR_TSO, 1)});
	cases.push_back({"inline read", make_wr(IBV_WR_RDMA_READ, 1, sg.data(),
						1, IBV_SEND_INLINE)});
	cases.push_back({"unknown send flag", make_wr(IBV_WR_SEND, 1, sg.data(),
						      1, IBV_SEND_IP_CSUM)});
	cases.push_back({"short atomic",
			 make_wr(IBV_WR_ATOMIC_CMP_AND_SWP, 1, &shortsg, 1)});
	cases.push_back(
		{"SGEs without a list", make_wr(IBV_WR_SEND, 1, nullptr, 1)});

	for (auto &c : cases) {
		/* A good WR first: it is posted, the bad one stops the list. */
		ibv_send_wr good = make_wr(IBV_WR_SEND, 9, sg.data(), 1);
		good.next = &c.wr;
		const uint32_t before = f.sq.producer();
		const int db = doorbells.load();

		bad = nullptr;
		EXPECT_EQ(post_send(f.ibqp(), &good, &bad), EINVAL) << c.what;
		EXPECT_EQ(bad, &c.wr) << c.what;
		EXPECT_EQ(f.sq.producer(), before + 1) << c.what;
		EXPECT_EQ(doorbells.load(), db + 1) << c.what;
		f.sq.set_consumer(f.sq.producer()); /* the kernel catches up */
	}

	/* A bad first WR: nothing published, no doorbell. */
	const int db = doorbells.load();
	const uint32_t before = f.sq.producer();
	EXPECT_EQ(post_send(f.ibqp(), &cases[0].wr, &bad), EINVAL);
	EXPECT_EQ(bad, &cases[0].wr);
	EXPECT_EQ(f.sq.producer(), before);
	EXPECT_EQ(doorbells.load(), db);
}

TEST_F(PostSend, FullRingIsEnomem)
{
	std::vector<ibv_send_wr> wrs(20);
	for (size_t i = 0; i < wrs.size(); i++)
		wrs[i] = make_wr(IBV_WR_SEND, i, sg.data(), 1);
	chain(wrs);
	ibv_send_wr *bad = nullptr;

	EXPECT_EQ(post_send(f.ibqp(), wrs.data(), &bad), ENOMEM);
	EXPECT_EQ(bad, &wrs[16]);
	EXPECT_EQ(f.sq.producer(), 16U);
	EXPECT_EQ(doorbells.load(), 1);

	EXPECT_EQ(post_send(f.ibqp(), &wrs[16], &bad), ENOMEM);
	EXPECT_EQ(bad, &wrs[16]);
	EXPECT_EQ(doorbells.load(), 1) << "nothing posted, no doorbell";

	/* The kernel frees three slots; the rest waits for more. */
	f.sq.set_consumer(3);
	EXPECT_EQ(post_send(f.ibqp(), &wrs[16], &bad), ENOMEM);
	EXPECT_EQ(bad, &wrs[19]);
	EXPECT_EQ(f.sq.producer(), 19U);
	EXPECT_EQ(f.wqe(16)->wr_id, 16U); /* slot 0 again */
	EXPECT_EQ(f.wqe(0)->wr_id, 16U);
}

TEST(PostSendWrap, IndicesWrapAt2To32)
{
	const uint32_t start = 0xfffffffdU;
	fake_qp f{IBV_QPT_RC, make_cap(4, 1, 0), start};
	ibv_sge sg{0x1000, 1, 1};
	ibv_send_wr *bad = nullptr;

	for (uint64_t i = 0; i < 12; i++) {
		ibv_send_wr wr = make_wr(IBV_WR_SEND, i, &sg, 1);
		ASSERT_EQ(post_send(f.ibqp(), &wr, &bad), 0) << i;
		const uint32_t idx = start + static_cast<uint32_t>(i);
		EXPECT_EQ(f.sq.producer(), idx + 1);
		EXPECT_EQ(f.wqe(idx)->wr_id, i);
		f.sq.set_consumer(idx + 1);
	}
	EXPECT_EQ(f.sq.producer(), start + 12); /* == 9 */
}

/*
 * While the kernel's requester runs or is queued (it set the SQ header's
 * polling word), it reads the producer index again anyway: the post
 * publishes its WQEs and leaves the doorbell out. Once it has stopped, a
 * post rings again; and a QP the kernel marked in error is rung whatever
 * polling says, since only a doorbell flushes it.
 */
TEST_F(PostSend, NoDoorbellWhileTheRequesterLooksAnyway)
{
	ibv_send_wr wr = make_wr(IBV_WR_SEND, 1, sg.data(), 1);
	ibv_send_wr *bad = nullptr;

	f.sq.hdr()->polling = 1;
	ASSERT_EQ(post(wr, &bad), 0);
	EXPECT_EQ(f.sq.producer(), 1U) << "published";
	EXPECT_EQ(doorbells.load(), 0) << "the requester is polling";

	f.sq.hdr()->polling = 0;
	ASSERT_EQ(post(wr, &bad), 0);
	EXPECT_EQ(f.sq.producer(), 2U);
	EXPECT_EQ(doorbells.load(), 1) << "the requester stopped";

	f.sq.hdr()->polling = 1;
	f.sq.hdr()->flags = SROCE_QUEUE_F_QP_ERR;
	ASSERT_EQ(post(wr, &bad), 0);
	EXPECT_EQ(f.sq.producer(), 3U);
	EXPECT_EQ(doorbells.load(), 2) << "in error: only a doorbell flushes";
}

TEST_F(PostSend, DoorbellFailureIsReported)
{
	ibv_send_wr wr = make_wr(IBV_WR_SEND, 1, sg.data(), 1);
	ibv_send_wr *bad = nullptr;

	doorbell_result = EBADF;
	EXPECT_EQ(post(wr, &bad), EBADF);
	EXPECT_EQ(bad, &wr);
	EXPECT_EQ(doorbells.load(), 1);
}

TEST(PostState, SendBeforeRtsAndRecvInResetAreEinval)
{
	fake_qp f(IBV_QPT_RC, make_cap(8, 2, 0));
	ibv_send_wr wr = make_wr(IBV_WR_SEND, 1);
	ibv_send_wr *bad = nullptr;
	ibv_recv_wr rwr = {};
	ibv_recv_wr *rbad = nullptr;

	for (auto st : {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR}) {
		f.ibqp()->state = st;
		bad = nullptr;
		EXPECT_EQ(post_send(f.ibqp(), &wr, &bad), EINVAL);
		EXPECT_EQ(bad, &wr);
	}
	f.ibqp()->state = IBV_QPS_RESET;
	EXPECT_EQ(post_recv(f.ibqp(), &rwr, &rbad), EINVAL);
	EXPECT_EQ(rbad, &rwr);
	/* Receives may be posted from INIT on. */
	f.ibqp()->state = IBV_QPS_INIT;
	rbad = nullptr;
	EXPECT_EQ(post_recv(f.ibqp(), &rwr, &rbad), 0);
	EXPECT_EQ(doorbells.load(), 0);
}

TEST(PostSendNoSq, Einval)
{
	auto q = c_new<qp>();
	ibv_send_wr wr = make_wr(IBV_WR_SEND, 1);
	ibv_send_wr *bad = nullptr;

	q->vqp.qp.qp_type = IBV_QPT_RC;
	EXPECT_EQ(post_send(&q->vqp.qp, &wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);
}

TEST(Attach, ChecksTheRingAgainstTheCaps)
{
	const ibv_qp_cap cap = make_cap(8, 4, 64);
	fake_queue small(8, 6); /* 64-byte slots: no room for 4 SGEs */
	fake_queue few(4, 7);	/* 128-byte slots but only 4 of 8 WRs */
	fake_queue ok(8, 7);
	send_queue sq;

	EXPECT_FALSE(sq.attach(small.base(), small.len(), cap));
	EXPECT_FALSE(sq.attach(few.base(), few.len(), cap));
	EXPECT_FALSE(sq.attach(ok.base(), ok.len() - 1, cap));
	EXPECT_FALSE(sq.ring.has_value());
	EXPECT_TRUE(sq.attach(ok.base(), ok.len(), cap));
	EXPECT_EQ(sq.max_sge, 4U);
	EXPECT_EQ(sq.max_inline, 64U);

	/* A bigger slot than needed: the caps still bound what we post. */
	fake_queue roomy(8, 9);
	EXPECT_TRUE(sq.attach(roomy.base(), roomy.len(), cap));
	EXPECT_EQ(sq.max_sge, 4U);
	EXPECT_EQ(sq.max_inline, 64U);

	recv_queue rq;
	fake_queue rsmall(8, 5); /* 32 bytes: 16 + 1 SGE */
	EXPECT_FALSE(rq.attach(rsmall.base(), rsmall.len(),
			       make_cap(8, 1, 0, 8, 2)));
	EXPECT_TRUE(rq.attach(rsmall.base(), rsmall.len(),
			      make_cap(8, 1, 0, 8, 1)));
	EXPECT_EQ(rq.max_sge, 1U);
}

TEST(PostRecv, EncodesAndNeverRingsADoorbell)
{
	fake_qp f{IBV_QPT_RC, make_cap(4, 1, 0, 4, 3)};
	ibv_sge sg[3] = {{0x10, 1, 2}, {0x20, 3, 4}, {0x30, 5, 6}};
	ibv_recv_wr wr[2] = {make_recv_wr(0x1234, sg, 3), make_recv_wr(0x5678)};
	chain(wr);
	ibv_recv_wr *bad = nullptr;

	ASSERT_EQ(post_recv(f.ibqp(), wr, &bad), 0);
	EXPECT_EQ(f.rq.producer(), 2U);
	EXPECT_EQ(doorbells.load(), 0);

	const sroce_recv_wqe h0 = {0x1234, 3, 0};
	EXPECT_TRUE(same_bytes(f.rq.slot(0), &h0, sizeof(h0)));
	for (size_t i = 0; i < 3; i++) {
		const sroce_sge s = {sg[i].addr, sg[i].length, sg[i].lkey};
		EXPECT_TRUE(
			same_bytes(f.rq.slot(0) + 16 + 16 * i, &s, sizeof(s)));
	}
	const sroce_recv_wqe h1 = {0x5678, 0, 0};
	EXPECT_TRUE(same_bytes(f.rq.slot(1), &h1, sizeof(h1)));

	/* Too many SGEs. */
	ibv_sge four[4] = {};
	ibv_recv_wr w4{};
	w4.sg_list = four;
	w4.num_sge = 4;
	EXPECT_EQ(post_recv(f.ibqp(), &w4, &bad), EINVAL);
	EXPECT_EQ(bad, &w4);

	/* Full after two more; ENOMEM points at the first that missed. */
	ibv_recv_wr more[3] = {};
	chain(more);
	EXPECT_EQ(post_recv(f.ibqp(), more, &bad), ENOMEM);
	EXPECT_EQ(bad, &more[2]);
	EXPECT_EQ(f.rq.producer(), 4U);
	EXPECT_EQ(doorbells.load(), 0);
}

TEST(PostRecv, QpOnAnSrqHasNoRq)
{
	fake_qp f{IBV_QPT_RC, make_cap(4, 1, 0), 0, false};
	ibv_recv_wr wr{};
	ibv_recv_wr *bad = nullptr;

	EXPECT_EQ(post_recv(f.ibqp(), &wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr);
}

TEST(QpAttr, CreateQpExChecks)
{
	ibv_qp_init_attr_ex a{};
	a.qp_type = IBV_QPT_RC;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ |
			   IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			   IBV_QP_EX_WITH_SEND_WITH_INV;
	EXPECT_EQ(check_qp_init_attr(a), 0);

	/* Memory windows: both window operations. */
	a.send_ops_flags |= IBV_QP_EX_WITH_BIND_MW;
	EXPECT_EQ(check_qp_init_attr(a), 0);
	a.send_ops_flags = IBV_QP_EX_WITH_LOCAL_INV;
	EXPECT_EQ(check_qp_init_attr(a), 0);
	a.send_ops_flags = IBV_QP_EX_WITH_TSO;
	EXPECT_EQ(check_qp_init_attr(a), EOPNOTSUPP);

	a.qp_type = IBV_QPT_UD;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	EXPECT_EQ(check_qp_init_attr(a), 0);
	a.send_ops_flags |= IBV_QP_EX_WITH_RDMA_WRITE;
	EXPECT_EQ(check_qp_init_attr(a), EOPNOTSUPP);

	a.qp_type = IBV_QPT_UC;
	a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	EXPECT_EQ(check_qp_init_attr(a), 0);
	a.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	EXPECT_EQ(check_qp_init_attr(a), EOPNOTSUPP);
	a.send_ops_flags = IBV_QP_EX_WITH_SEND_WITH_INV;
	EXPECT_EQ(check_qp_init_attr(a), EOPNOTSUPP);

	/* XRC INI: RC's operations (test_xrc.cpp). */
	a.qp_type = IBV_QPT_XRC_SEND;
	a.send_ops_flags = 0;
	EXPECT_EQ(check_qp_init_attr(a), 0);
	a.send_ops_flags = IBV_QP_EX_WITH_TSO;
	EXPECT_EQ(check_qp_init_attr(a), EOPNOTSUPP);
	a.send_ops_flags = 0;

	a.qp_type = IBV_QPT_RC;
	a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
	a.create_flags = 0;
	EXPECT_EQ(check_qp_init_attr(a), 0);
	a.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	EXPECT_EQ(check_qp_init_attr(a), EOPNOTSUPP);
	a.create_flags = 0;
	a.comp_mask |= IBV_QP_INIT_ATTR_MAX_TSO_HEADER;
	EXPECT_EQ(check_qp_init_attr(a), EOPNOTSUPP);
}

} // namespace

/*
 * A misaligned remote atomic address is the responder's to refuse (NAK
 * invalid request -> IBV_WC_REM_INV_REQ_ERR), so it must reach the ring.
 */
TEST(PostSendAtomic, MisalignedRemoteGoesOnTheWire)
{
	fake_qp f(IBV_QPT_RC, make_cap(8, 4, 64));
	uint64_t result = 0;
	ibv_sge sge{reinterpret_cast<uintptr_t>(&result), 8, 0x42};
	auto w = make_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, 7, &sge, 1);
	w.wr.atomic.remote_addr = 0x1004;
	w.wr.atomic.rkey = 0x77;
	ibv_send_wr *bad = nullptr;
	const uint32_t before = f.sq.producer();
	ASSERT_EQ(sroce::post_send(f.ibqp(), &w, &bad), 0);
	EXPECT_EQ(f.sq.producer(), before + 1);
	const sroce_send_wqe *h = f.wqe(before);
	EXPECT_EQ(h->remote_addr, 0x1004u);
	EXPECT_EQ(h->opcode, IBV_WR_ATOMIC_FETCH_AND_ADD);
}

TEST(BindMw, ArgumentChecks)
{
	ibv_context ctx{}, other{};
	ibv_mw mw{};
	mw.context = &ctx;
	mw.rkey = 0x1234;
	ibv_mr mr{}, foreign{};
	mr.context = &ctx;
	foreign.context = &other;
	ibv_mw_bind_info b{};
	b.mr = &mr;
	b.length = 64;

	EXPECT_TRUE(bind_ok(&ctx, &mw, 0x1235, b));
	EXPECT_FALSE(bind_ok(&ctx, nullptr, 0x1235, b));
	EXPECT_FALSE(bind_ok(&other, &mw, 0x1235, b));
	EXPECT_FALSE(bind_ok(&ctx, &mw, 0x1335, b)) << "another window's key";
	b.mr = &foreign;
	EXPECT_FALSE(bind_ok(&ctx, &mw, 0x1235, b));
	b.mr = nullptr;
	EXPECT_FALSE(bind_ok(&ctx, &mw, 0x1235, b)) << "a range without an MR";
	b.length = 0;
	EXPECT_TRUE(bind_ok(&ctx, &mw, 0x1235, b)) << "type 1 unbind";
	b.mw_access_flags = IBV_ACCESS_ZERO_BASED;
	EXPECT_FALSE(bind_ok(&ctx, &mw, 0x1235, b));
}
