// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion queue polling over a fake ring: CQE -> ibv_wc decoding, the
 * consumer index the kernel gets back, index wrap, and the ibv_cq_ex
 * start_poll/next_poll/end_poll iterator with its read_* callbacks.
 */
#include "fake_rings.h"
#include "provider.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>

namespace
{

using namespace sroce;
using namespace sroce::test;

sroce_cqe make_cqe(uint64_t wr_id, uint32_t status = IBV_WC_SUCCESS,
		   uint32_t opcode = IBV_WC_RECV)
{
	sroce_cqe e;
	memset(&e, 0, sizeof(e));
	e.wr_id = wr_id;
	e.status = status;
	e.opcode = opcode;
	return e;
}

sroce_cqe full_cqe()
{
	sroce_cqe e = make_cqe(0x0102030405060708ULL, IBV_WC_SUCCESS,
			       IBV_WC_RECV_RDMA_WITH_IMM);
	e.vendor_err = 0x33;
	e.byte_len = 4096;
	e.imm_or_inv = htonl(0xdeadbeef);
	e.qp_num = 0x123456;
	e.src_qp = 0x654321;
	e.wc_flags = SROCE_WC_F_WITH_IMM | SROCE_WC_F_GRH;
	e.pkey_index = 3;
	e.slid = 0xbeef;
	e.sl = 5;
	e.dlid_path_bits = 0x7f;
	e.port_num = 1;
	e.network_hdr_type = 3;
	return e;
}

TEST(CqeToWc, EveryField)
{
	const sroce_cqe e = full_cqe();
	ibv_wc wc;
	memset(&wc, 0xff, sizeof(wc));

	cqe_to_wc(e, wc);
	EXPECT_EQ(wc.wr_id, 0x0102030405060708ULL);
	EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
	EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	EXPECT_EQ(wc.vendor_err, 0x33U);
	EXPECT_EQ(wc.byte_len, 4096U);
	EXPECT_EQ(ntohl(wc.imm_data), 0xdeadbeefU) << "stays network order";
	EXPECT_EQ(wc.qp_num, 0x123456U);
	EXPECT_EQ(wc.src_qp, 0x654321U);
	EXPECT_EQ(wc.wc_flags, unsigned{IBV_WC_WITH_IMM | IBV_WC_GRH});
	EXPECT_EQ(wc.pkey_index, 3U);
	EXPECT_EQ(wc.slid, 0xbeefU);
	EXPECT_EQ(wc.sl, 5U);
	EXPECT_EQ(wc.dlid_path_bits, 0x7fU);
}

TEST(CqeToWc, InvalidatedRkeyAndStatuses)
{
	sroce_cqe e = make_cqe(9, IBV_WC_SUCCESS, IBV_WC_RECV);
	e.wc_flags = SROCE_WC_F_WITH_INV;
	e.imm_or_inv = 0x11223344; /* an rkey, host order */
	ibv_wc wc{};

	cqe_to_wc(e, wc);
	EXPECT_EQ(wc.wc_flags, unsigned{IBV_WC_WITH_INV});
	EXPECT_EQ(wc.invalidated_rkey, 0x11223344U);

	/* Flag bits the ABI does not define are not passed on. */
	e.wc_flags = SROCE_WC_F_IP_CSUM_OK | (1U << 7) | (1U << 31);
	cqe_to_wc(e, wc);
	EXPECT_EQ(wc.wc_flags, unsigned{IBV_WC_IP_CSUM_OK});

	for (uint32_t st : {IBV_WC_LOC_LEN_ERR, IBV_WC_WR_FLUSH_ERR,
			    IBV_WC_RETRY_EXC_ERR, IBV_WC_REM_ACCESS_ERR}) {
		e = make_cqe(1, st, IBV_WC_RDMA_READ);
		cqe_to_wc(e, wc);
		EXPECT_EQ(wc.status, static_cast<ibv_wc_status>(st));
		EXPECT_EQ(wc.opcode, IBV_WC_RDMA_READ);
	}
}

/* A UD receive as sroce.ko writes it: 40-byte GRH counted, sender's QPN. */
sroce_cqe ud_recv_cqe(uint64_t wr_id)
{
	sroce_cqe e = make_cqe(wr_id, IBV_WC_SUCCESS, IBV_WC_RECV);
	e.byte_len = 40 + 1000;
	e.imm_or_inv = htonl(0x600df00d);
	e.qp_num = 0x12;
	e.src_qp = 0xabcdef;
	e.wc_flags = SROCE_WC_F_GRH | SROCE_WC_F_WITH_IMM;
	e.port_num = 1;
	e.network_hdr_type = 2; /* RDMA_NETWORK_IPV4 */
	e.smac[0] = 0x02;
	return e;
}

TEST(UdRecv, PollCqReportsTheSender)
{
	fake_cq f(4);
	f.push(ud_recv_cqe(21));
	ibv_wc wc;
	memset(&wc, 0xff, sizeof(wc));

	ASSERT_EQ(poll_cq(f.ibcq(), 1, &wc), 1);
	EXPECT_EQ(wc.wr_id, 21U);
	EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
	EXPECT_EQ(wc.opcode, IBV_WC_RECV);
	EXPECT_EQ(wc.byte_len, 1040U);
	EXPECT_EQ(wc.wc_flags, unsigned{IBV_WC_GRH | IBV_WC_WITH_IMM});
	EXPECT_EQ(ntohl(wc.imm_data), 0x600df00dU);
	EXPECT_EQ(wc.qp_num, 0x12U);
	EXPECT_EQ(wc.src_qp, 0xabcdefU);
	/* What the kernel wrote (a RoCE UD receive's sl is the packet's
	 * type; 0 here), nothing left over. */
	EXPECT_EQ(wc.pkey_index, 0U);
	EXPECT_EQ(wc.slid, 0U);
	EXPECT_EQ(wc.sl, 0U);
	EXPECT_EQ(wc.dlid_path_bits, 0U);
}

TEST(UdRecv, CqExReadersReportTheSender)
{
	fake_cq f(4);
	set_cq_ex_ops(*f.c, IBV_WC_STANDARD_FLAGS);
	ibv_cq_ex *x = f.ibcqx();
	f.push(ud_recv_cqe(22));
	ibv_poll_cq_attr attr{};

	ASSERT_EQ(ibv_start_poll(x, &attr), 0);
	EXPECT_EQ(x->wr_id, 22U);
	EXPECT_EQ(ibv_wc_read_opcode(x), IBV_WC_RECV);
	EXPECT_EQ(ibv_wc_read_byte_len(x), 1040U);
	EXPECT_EQ(ibv_wc_read_wc_flags(x),
		  unsigned{IBV_WC_GRH | IBV_WC_WITH_IMM});
	EXPECT_EQ(ntohl(ibv_wc_read_imm_data(x)), 0x600df00dU);
	EXPECT_EQ(ibv_wc_read_qp_num(x), 0x12U);
	EXPECT_EQ(ibv_wc_read_src_qp(x), 0xabcdefU);
	EXPECT_EQ(ibv_wc_read_slid(x), 0U);
	EXPECT_EQ(ibv_wc_read_sl(x), 0U);
	EXPECT_EQ(ibv_wc_read_dlid_path_bits(x), 0U);
	ibv_end_poll(x);
	EXPECT_EQ(f.ring.consumer(), 1U);
}

TEST(PollCq, ConsumesAndPublishesTheConsumerIndex)
{
	fake_cq f(8);
	ibv_wc wc[4] = {};

	EXPECT_EQ(poll_cq(f.ibcq(), 4, wc), 0);
	for (uint64_t i = 0; i < 3; i++)
		f.push(make_cqe(100 + i));

	EXPECT_EQ(poll_cq(f.ibcq(), 2, wc), 2);
	EXPECT_EQ(wc[0].wr_id, 100U);
	EXPECT_EQ(wc[1].wr_id, 101U);
	EXPECT_EQ(f.ring.consumer(), 2U);

	EXPECT_EQ(poll_cq(f.ibcq(), 4, wc), 1);
	EXPECT_EQ(wc[0].wr_id, 102U);
	EXPECT_EQ(f.ring.consumer(), 3U);
	EXPECT_EQ(poll_cq(f.ibcq(), 4, wc), 0);
	EXPECT_EQ(poll_cq(f.ibcq(), 0, wc), 0);
}

TEST(PollCq, FullRingAndWrap)
{
	const uint32_t start = 0xfffffffaU;
	fake_cq f(4, start);
	ibv_wc wc[8] = {};
	uint64_t next = 0;
	uint64_t expect = 0;

	for (int round = 0; round < 5; round++) {
		/* The kernel fills the ring completely... */
		while (f.kidx - f.ring.consumer() < 4)
			f.push(make_cqe(next++));
		/* ...and we drain it in two polls. */
		ASSERT_EQ(poll_cq(f.ibcq(), 3, wc), 3);
		for (int i = 0; i < 3; i++)
			EXPECT_EQ(wc[i].wr_id, expect++);
		ASSERT_EQ(poll_cq(f.ibcq(), 8, wc), 1);
		EXPECT_EQ(wc[0].wr_id, expect++);
	}
	EXPECT_EQ(f.ring.consumer(), start + 20);
	EXPECT_LT(f.ring.consumer(), start) << "wrapped past 2^32";
}

TEST(CqClean, DropsOneQpsEntriesKeepsTheRestInOrder)
{
	const uint32_t start = 0xfffffffcU; /* the ring index wraps meanwhile */
	fake_cq f(8, start);
	ibv_wc wc[8] = {};

	/* Interleaved completions of QPs 7 and 9; 2 polled already. */
	for (uint64_t i = 0; i < 7; i++) {
		sroce_cqe e = make_cqe(i);
		e.qp_num = i % 2 ? 9 : 7;
		f.push(e);
	}
	ASSERT_EQ(poll_cq(f.ibcq(), 2, wc), 2);
	cq_clean(*f.c, 7);
	/* Entries 2..6 were left: 3, 5 (QP 9) stay, 2, 4, 6 (QP 7) go. */
	EXPECT_EQ(f.ring.consumer(), start + 5);
	ASSERT_EQ(poll_cq(f.ibcq(), 8, wc), 2);
	EXPECT_EQ(wc[0].wr_id, 3U);
	EXPECT_EQ(wc[1].wr_id, 5U);
	EXPECT_EQ(wc[0].qp_num, 9U);
	/* Nothing to drop, and an empty ring: nothing moves. */
	cq_clean(*f.c, 9);
	EXPECT_EQ(f.ring.consumer(), start + 7);
	f.push(make_cqe(42));
	cq_clean(*f.c, 7);
	ASSERT_EQ(poll_cq(f.ibcq(), 8, wc), 1);
	EXPECT_EQ(wc[0].wr_id, 42U);
}

TEST(PollCq, CorruptProducerReadsNothing)
{
	fake_cq f(4);
	ibv_wc wc[8] = {};

	f.ring.set_producer(100); /* more than num_slots ahead */
	EXPECT_EQ(poll_cq(f.ibcq(), 8, wc), 0);
	EXPECT_EQ(f.ring.consumer(), 0U);
}

TEST(PollCq, SwitchesToANewRingOnResize)
{
	fake_cq f(4);
	ibv_wc wc[8] = {};
	f.push(make_cqe(1));
	f.push(make_cqe(2));
	ASSERT_EQ(poll_cq(f.ibcq(), 1, wc), 1);

	/* What resize_cq gets: a new ring, the pending entry at slot 0. */
	fake_queue bigger(16, 6);
	const sroce_cqe pending = make_cqe(2);
	memcpy(bigger.slot(0), &pending, sizeof(pending));
	bigger.set_producer(1);
	ASSERT_TRUE(f.c->attach(bigger.base(), bigger.len()));

	ASSERT_EQ(poll_cq(f.ibcq(), 8, wc), 1);
	EXPECT_EQ(wc[0].wr_id, 2U);
	EXPECT_EQ(bigger.consumer(), 1U);

	/* A header that does not fit its mapping is refused. */
	fake_queue broken(16, 6);
	EXPECT_FALSE(f.c->attach(broken.base(), broken.len() - 64));
	fake_queue tiny_slots(16, 5); /* 32-byte slots < sizeof(sroce_cqe) */
	EXPECT_FALSE(f.c->attach(tiny_slots.base(), tiny_slots.len()));
}

TEST(PollCq, NoRingIsAnError)
{
	auto c = c_new<cq>();
	ibv_wc wc{};
	EXPECT_LT(poll_cq(&c->vcq.cq, 1, &wc), 0);
}

TEST(CqEx, AttrChecks)
{
	ibv_cq_init_attr_ex a{};
	a.wc_flags = IBV_WC_STANDARD_FLAGS;
	EXPECT_EQ(check_cq_ex_attr(a), 0);
	for (uint64_t bad :
	     {uint64_t{IBV_WC_EX_WITH_COMPLETION_TIMESTAMP},
	      uint64_t{IBV_WC_EX_WITH_CVLAN}, uint64_t{IBV_WC_EX_WITH_FLOW_TAG},
	      uint64_t{IBV_WC_EX_WITH_TM_INFO},
	      uint64_t{IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK}}) {
		a.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | bad;
		EXPECT_EQ(check_cq_ex_attr(a), EOPNOTSUPP) << bad;
	}
	a.wc_flags = 0;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	EXPECT_EQ(check_cq_ex_attr(a), 0);
	a.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	EXPECT_EQ(check_cq_ex_attr(a), EOPNOTSUPP);
	a.flags = 0;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD << 1;
	EXPECT_EQ(check_cq_ex_attr(a), EOPNOTSUPP);
	/* IBV_CQ_INIT_ATTR_MASK_PD: test_parent_domain.cpp */
}

TEST(CqEx, OnlyTheRequestedReaders)
{
	fake_cq f(4);
	set_cq_ex_ops(*f.c, IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_SL);
	ibv_cq_ex *x = f.ibcqx();

	EXPECT_NE(x->start_poll, nullptr);
	EXPECT_NE(x->next_poll, nullptr);
	EXPECT_NE(x->end_poll, nullptr);
	EXPECT_NE(x->read_opcode, nullptr);
	EXPECT_NE(x->read_vendor_err, nullptr);
	EXPECT_NE(x->read_wc_flags, nullptr);
	EXPECT_NE(x->read_byte_len, nullptr);
	EXPECT_NE(x->read_sl, nullptr);
	EXPECT_EQ(x->read_imm_data, nullptr);
	EXPECT_EQ(x->read_qp_num, nullptr);
	EXPECT_EQ(x->read_src_qp, nullptr);
	EXPECT_EQ(x->read_slid, nullptr);
	EXPECT_EQ(x->read_dlid_path_bits, nullptr);
	EXPECT_EQ(x->read_completion_ts, nullptr);
	EXPECT_EQ(x->read_cvlan, nullptr);
}

TEST(CqEx, IteratesAndReadsEveryField)
{
	fake_cq f(8);
	set_cq_ex_ops(*f.c, IBV_WC_STANDARD_FLAGS);
	ibv_cq_ex *x = f.ibcqx();
	ibv_poll_cq_attr attr{};

	/* Empty: ENOENT, lock released, no end_poll. */
	EXPECT_EQ(ibv_start_poll(x, &attr), ENOENT);
	EXPECT_TRUE(f.c->lock.try_lock());
	f.c->lock.unlock();

	f.push(full_cqe());
	sroce_cqe inv = make_cqe(2, IBV_WC_SUCCESS, IBV_WC_RECV);
	inv.wc_flags = SROCE_WC_F_WITH_INV;
	inv.imm_or_inv = 0xaabbccdd;
	f.push(inv);
	f.push(make_cqe(3, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND));

	ASSERT_EQ(ibv_start_poll(x, &attr), 0);
	EXPECT_EQ(x->wr_id, 0x0102030405060708ULL);
	EXPECT_EQ(x->status, IBV_WC_SUCCESS);
	EXPECT_EQ(ibv_wc_read_opcode(x), IBV_WC_RECV_RDMA_WITH_IMM);
	EXPECT_EQ(ibv_wc_read_vendor_err(x), 0x33U);
	EXPECT_EQ(ibv_wc_read_byte_len(x), 4096U);
	EXPECT_EQ(ntohl(ibv_wc_read_imm_data(x)), 0xdeadbeefU);
	EXPECT_EQ(ibv_wc_read_qp_num(x), 0x123456U);
	EXPECT_EQ(ibv_wc_read_src_qp(x), 0x654321U);
	EXPECT_EQ(ibv_wc_read_wc_flags(x),
		  unsigned{IBV_WC_WITH_IMM | IBV_WC_GRH});
	EXPECT_EQ(ibv_wc_read_slid(x), 0xbeefU);
	EXPECT_EQ(ibv_wc_read_sl(x), 5U);
	EXPECT_EQ(ibv_wc_read_dlid_path_bits(x), 0x7fU);

	ASSERT_EQ(ibv_next_poll(x), 0);
	EXPECT_EQ(x->wr_id, 2U);
	EXPECT_EQ(ibv_wc_read_wc_flags(x), unsigned{IBV_WC_WITH_INV});
	EXPECT_EQ(ibv_wc_read_invalidated_rkey(x), 0xaabbccddU);

	/* Nothing is handed back before end_poll. */
	EXPECT_EQ(f.ring.consumer(), 0U);

	ASSERT_EQ(ibv_next_poll(x), 0);
	EXPECT_EQ(x->wr_id, 3U);
	EXPECT_EQ(x->status, IBV_WC_WR_FLUSH_ERR);
	EXPECT_EQ(ibv_wc_read_opcode(x), IBV_WC_SEND);

	EXPECT_EQ(ibv_next_poll(x), ENOENT);
	ibv_end_poll(x);
	EXPECT_EQ(f.ring.consumer(), 3U) << "exactly the three polled";
	EXPECT_TRUE(f.c->lock.try_lock());
	f.c->lock.unlock();

	/* end_poll right after start_poll consumes that one entry. */
	f.push(make_cqe(4));
	f.push(make_cqe(5));
	ASSERT_EQ(ibv_start_poll(x, &attr), 0);
	EXPECT_EQ(x->wr_id, 4U);
	ibv_end_poll(x);
	EXPECT_EQ(f.ring.consumer(), 4U);

	/* And the classic poll sees the rest. */
	ibv_wc wc{};
	EXPECT_EQ(poll_cq(f.ibcq(), 1, &wc), 1);
	EXPECT_EQ(wc.wr_id, 5U);
}

TEST(CqEx, PollAttrCompMaskIsEinval)
{
	fake_cq f(4);
	set_cq_ex_ops(*f.c, 0);
	ibv_poll_cq_attr attr{};
	attr.comp_mask = 1;
	f.push(make_cqe(1));
	EXPECT_EQ(ibv_start_poll(f.ibcqx(), &attr), EINVAL);
	EXPECT_TRUE(f.c->lock.try_lock());
	f.c->lock.unlock();
}

TEST(CqEx, WrapsAcrossBatches)
{
	fake_cq f(4, 0xfffffffeU);
	set_cq_ex_ops(*f.c, IBV_WC_EX_WITH_BYTE_LEN);
	ibv_cq_ex *x = f.ibcqx();
	ibv_poll_cq_attr attr{};
	uint64_t next = 0;
	uint64_t expect = 0;

	for (int round = 0; round < 6; round++) {
		while (f.kidx - f.ring.consumer() < 4)
			f.push(make_cqe(next++));
		ASSERT_EQ(ibv_start_poll(x, &attr), 0);
		int n = 0;
		do {
			EXPECT_EQ(x->wr_id, expect++);
			n++;
		} while (ibv_next_poll(x) == 0);
		ibv_end_poll(x);
		EXPECT_EQ(n, 4);
	}
	EXPECT_EQ(f.ring.consumer(), 0xfffffffeU + 24);
}

} // namespace
