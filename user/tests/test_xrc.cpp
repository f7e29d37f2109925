// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * XRC and ATOMIC_WRITE without a kernel:
 *  - XRC INI (IBV_QPT_XRC_SEND) posting, legacy and ibv_wr_*: the remote
 *    XRC SRQ number lands in the WQE's remote_qpn, the QP has no RQ;
 *  - XRC TGT QPs have no rings: post_send and post_recv are EINVAL;
 *  - XRCD / XRC SRQ / TGT QP / open_qp lifetimes against stand-in commands
 *    (the SRQ ring lives in a memfd the provider really mmap()s);
 *  - the commands the real libibverbs writes for OPEN_XRCD and CREATE_XSRQ
 *    (into a pipe);
 *  - ATOMIC_WRITE: refused with EOPNOTSUPP while kAtomicWriteSupported is
 *    false, accepted when true, and the WQE it produces.
 */
#include "fake_rings.h"
#include "provider.h"
#include "srq.h"
#include "test_util.h"
#include "uverbs_pipe.h"
#include "xrc.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace
{

using namespace sroce;
using namespace sroce::test;

/* ---- XRC INI posting ------------------------------------------------ */

struct XrcSend : ::testing::Test {
	ibv_qp_cap cap = make_cap(8, 2, 64, 0, 0);
	fake_qp f{IBV_QPT_XRC_SEND, cap, 0, /*with_rq=*/false};
	ibv_sge sg{0x1000, 16, 0x11};
};

TEST_F(XrcSend, RemoteSrqnGoesIntoRemoteQpn)
{
	ibv_send_wr wr[3] = {
		make_wr(IBV_WR_SEND, 1, &sg, 1, 0),
		make_wr(IBV_WR_RDMA_WRITE, 2, &sg, 1, 0),
		make_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, 3, &sg, 1, 0),
	};
	chain(wr);
	wr[0].qp_type.xrc.remote_srqn = 0x123456;
	wr[1].wr.rdma.rkey = 0x77;
	wr[1].wr.rdma.remote_addr = 0x9000;
	wr[1].qp_type.xrc.remote_srqn = 0x42;
	wr[2].wr.atomic.remote_addr = 0x8000;
	wr[2].wr.atomic.rkey = 0x66;
	wr[2].wr.atomic.compare_add = 5;
	wr[2].qp_type.xrc.remote_srqn = 0x43;
	ibv_send_wr *bad = nullptr;

	ASSERT_EQ(post_send(f.ibqp(), wr, &bad), 0);
	EXPECT_EQ(f.sq.producer(), 3U);
	EXPECT_EQ(doorbells.load(), 1);
	EXPECT_EQ(f.wqe(0)->opcode, SROCE_WR_SEND);
	EXPECT_EQ(f.wqe(0)->remote_qpn, 0x123456U);
	EXPECT_EQ(f.wqe(0)->ah, 0U);
	EXPECT_EQ(f.wqe(0)->remote_qkey, 0U);
	EXPECT_EQ(f.wqe(1)->remote_qpn, 0x42U);
	EXPECT_EQ(f.wqe(1)->rkey, 0x77U);
	EXPECT_EQ(f.wqe(2)->remote_qpn, 0x43U);
	EXPECT_EQ(f.wqe(2)->compare_add, 5U);
}

TEST_F(XrcSend, RcOpcodesAndNoRq)
{
	EXPECT_EQ(allowed_opcodes(IBV_QPT_XRC_SEND),
		  allowed_opcodes(IBV_QPT_RC));
	EXPECT_EQ(allowed_send_ops(IBV_QPT_XRC_SEND),
		  allowed_send_ops(IBV_QPT_RC));
	EXPECT_EQ(allowed_opcodes(IBV_QPT_XRC_RECV), 0U);

	ibv_recv_wr rwr{};
	ibv_recv_wr *bad = nullptr;
	EXPECT_EQ(post_recv(f.ibqp(), &rwr, &bad), EINVAL);
	EXPECT_EQ(bad, &rwr);

	ibv_qp_init_attr_ex a{};
	a.qp_type = IBV_QPT_XRC_SEND;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ;
	EXPECT_EQ(check_qp_init_attr(a), 0);
}

TEST_F(XrcSend, WrApiNeedsTheSrqn)
{
	set_qp_ex_ops(*f.q, allowed_send_ops(IBV_QPT_XRC_SEND));
	ibv_qp_ex *x = f.qpx();
	ASSERT_NE(x->wr_set_xrc_srqn, nullptr);

	ibv_wr_start(x);
	x->wr_id = 7;
	ibv_wr_send(x);
	ibv_wr_set_xrc_srqn(x, 0xabcdef);
	ibv_wr_set_sge(x, 0x11, 0x1000, 16);
	x->wr_id = 8;
	ibv_wr_rdma_write(x, 0x22, 0x2000);
	ibv_wr_set_sge(x, 0x11, 0x1000, 16);
	ibv_wr_set_xrc_srqn(x, 5); /* setters in any order */
	ASSERT_EQ(ibv_wr_complete(x), 0);
	EXPECT_EQ(f.sq.producer(), 2U);
	EXPECT_EQ(f.wqe(0)->wr_id, 7U);
	EXPECT_EQ(f.wqe(0)->remote_qpn, 0xabcdefU);
	EXPECT_EQ(f.wqe(1)->remote_qpn, 5U);
	EXPECT_EQ(f.wqe(1)->rkey, 0x22U);

	/* A WQE without its SRQ number: nothing is published. */
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_xrc_srqn(x, 1);
	ibv_wr_set_sge(x, 0x11, 0x1000, 16);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 0x11, 0x1000, 16);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	EXPECT_EQ(f.sq.producer(), 2U);
}

TEST(XrcSrqnOnOtherQps, Einval)
{
	fake_qp f(IBV_QPT_RC, make_cap(4, 1, 0));
	set_qp_ex_ops(*f.q, IBV_QP_EX_WITH_SEND);
	ibv_qp_ex *x = f.qpx();

	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_xrc_srqn(x, 1);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	EXPECT_EQ(f.sq.producer(), 0U);
}

/* ---- ATOMIC_WRITE ---------------------------------------------------- */

TEST(AtomicWrite, FollowsKAtomicWriteSupported)
{
	const uint32_t op = op_bit(IBV_WR_ATOMIC_WRITE);
	const uint64_t flag = IBV_QP_EX_WITH_ATOMIC_WRITE;

	ibv_qp_init_attr_ex a{};
	a.qp_type = IBV_QPT_RC;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_WRITE;

	fake_qp f(IBV_QPT_RC, make_cap(4, 1, 0));
	uint64_t value = 0x0123456789abcdef;
	ibv_sge sg{reinterpret_cast<uintptr_t>(&value), 8, 0x11};
	ibv_send_wr wr{};
	wr.opcode = IBV_WR_ATOMIC_WRITE;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.wr.rdma.rkey = 0x55;
	wr.wr.rdma.remote_addr = 0x1000;
	ibv_send_wr *bad = nullptr;

	if constexpr (kAtomicWriteSupported) {
		EXPECT_EQ(allowed_opcodes(IBV_QPT_RC) & op, op);
		EXPECT_EQ(allowed_opcodes(IBV_QPT_XRC_SEND) & op, op);
		EXPECT_EQ(allowed_send_ops(IBV_QPT_RC) & flag, flag);
		EXPECT_EQ(check_qp_init_attr(a), 0);
		ASSERT_EQ(post_send(f.ibqp(), &wr, &bad), 0);
		EXPECT_EQ(f.sq.producer(), 1U);
		EXPECT_EQ(f.wqe(0)->opcode, SROCE_WR_ATOMIC_WRITE);
		EXPECT_EQ(f.wqe(0)->compare_add, value);
		EXPECT_EQ(f.wqe(0)->num_sge, 0U);
	} else {
		EXPECT_EQ(allowed_opcodes(IBV_QPT_RC) & op, 0U);
		EXPECT_EQ(allowed_send_ops(IBV_QPT_RC) & flag, 0U);
		EXPECT_EQ(check_qp_init_attr(a), EOPNOTSUPP);
		EXPECT_EQ(post_send(f.ibqp(), &wr, &bad), EOPNOTSUPP);
		EXPECT_EQ(bad, &wr);
		EXPECT_EQ(f.sq.producer(), 0U);
		EXPECT_EQ(doorbells.load(), 0);
	}
	/* Never on UC or UD. */
	EXPECT_EQ(allowed_opcodes(IBV_QPT_UC) & op, 0U);
	EXPECT_EQ(allowed_opcodes(IBV_QPT_UD) & op, 0U);
	fake_qp uc(IBV_QPT_UC, make_cap(4, 1, 0));
	EXPECT_EQ(post_send(uc.ibqp(), &wr, &bad), EINVAL);
}

TEST(AtomicWrite, WqeOnceEnabled)
{
	fake_qp f(IBV_QPT_RC, make_cap(4, 2, 16));
	const unsigned char bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	ibv_sge sg[2] = {{reinterpret_cast<uintptr_t>(bytes), 3, 0x11},
			 {reinterpret_cast<uintptr_t>(bytes + 3), 5, 0x11}};
	ibv_send_wr wr{};
	wr.wr_id = 0x99;
	wr.opcode = IBV_WR_ATOMIC_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	wr.sg_list = sg;
	wr.num_sge = 2;
	wr.wr.rdma.rkey = 0x1234;
	wr.wr.rdma.remote_addr = 0x7f0000001000;
	alignas(8) unsigned char slot[128];
	memset(slot, 0xa5, sizeof(slot));

	ASSERT_EQ(encode_atomic_write_wqe(*f.q, wr, slot, true), 0);
	sroce_send_wqe h{};
	memcpy(&h, slot, sizeof(h));
	EXPECT_EQ(h.wr_id, 0x99U);
	EXPECT_EQ(h.opcode, SROCE_WR_ATOMIC_WRITE);
	EXPECT_EQ(h.flags, SROCE_SEND_SIGNALED | SROCE_SEND_FENCE);
	EXPECT_EQ(h.rkey, 0x1234U);
	EXPECT_EQ(h.remote_addr, 0x7f0000001000U);
	EXPECT_TRUE(same_bytes(&h.compare_add, bytes, 8))
		<< "gathered from the SGEs, byte for byte";
	EXPECT_EQ(h.num_sge, 0U);
	EXPECT_EQ(h.inline_len, 0U);
	EXPECT_EQ(h.swap, 0U);
	EXPECT_EQ(h.remote_qpn, 0U);

	/* Exactly 8 bytes; not inline; RC and XRC INI only. */
	sg[1].length = 4;
	EXPECT_EQ(encode_atomic_write_wqe(*f.q, wr, slot, true), EINVAL);
	sg[1].length = 6;
	EXPECT_EQ(encode_atomic_write_wqe(*f.q, wr, slot, true), EINVAL);
	sg[1].length = 5;
	wr.send_flags |= IBV_SEND_INLINE;
	EXPECT_EQ(encode_atomic_write_wqe(*f.q, wr, slot, true), EINVAL);
	wr.send_flags &= ~unsigned{IBV_SEND_INLINE};
	EXPECT_EQ(encode_atomic_write_wqe(*f.q, wr, slot, false), EOPNOTSUPP);
	fake_qp uc(IBV_QPT_UC, make_cap(4, 2, 16));
	EXPECT_EQ(encode_atomic_write_wqe(*uc.q, wr, slot, true), EINVAL);

	fake_qp x(IBV_QPT_XRC_SEND, make_cap(4, 2, 16, 0, 0), 0, false);
	wr.qp_type.xrc.remote_srqn = 0x321;
	ASSERT_EQ(encode_atomic_write_wqe(*x.q, wr, slot, true), 0);
	memcpy(&h, slot, sizeof(h));
	EXPECT_EQ(h.remote_qpn, 0x321U);
}

TEST(AtomicWrite, WrApiBuilder)
{
	/* Installed whatever kAtomicWriteSupported says; create_qp_ex gates. */
	fake_qp f(IBV_QPT_RC, make_cap(4, 2, 16));
	set_qp_ex_ops(*f.q, IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_SEND);
	ibv_qp_ex *x = f.qpx();
	ASSERT_NE(x->wr_atomic_write, nullptr);
	const unsigned char value[8] = {0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3};

	ibv_wr_start(x);
	x->wr_id = 5;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(x, 0x44, 0x8008, value);
	ASSERT_EQ(ibv_wr_complete(x), 0);
	EXPECT_EQ(f.sq.producer(), 1U);
	EXPECT_EQ(f.wqe(0)->opcode, SROCE_WR_ATOMIC_WRITE);
	EXPECT_EQ(f.wqe(0)->flags, SROCE_SEND_SIGNALED);
	EXPECT_EQ(f.wqe(0)->rkey, 0x44U);
	EXPECT_EQ(f.wqe(0)->remote_addr, 0x8008U);
	EXPECT_TRUE(same_bytes(&f.wqe(0)->compare_add, value, 8));
	EXPECT_EQ(f.wqe(0)->num_sge, 0U);

	/* The value is in the WQE: a scatter list is an error. */
	ibv_wr_start(x);
	ibv_wr_atomic_write(x, 0x44, 0x8008, value);
	ibv_wr_set_sge(x, 0x11, 0x1000, 8);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);
	ibv_wr_atomic_write(x, 0x44, 0x8008, nullptr);
	EXPECT_EQ(ibv_wr_complete(x), EINVAL);
	EXPECT_EQ(f.sq.producer(), 1U);
}

/* ---- XRC TGT QPs ---------------------------------------------------- */

TEST(XrcRecvQp, NoRingsNoPosting)
{
	auto q = c_new<qp>();
	q->vqp.qp.qp_type = IBV_QPT_XRC_RECV;
	q->vqp.qp.state = IBV_QPS_RTS;
	q->doorbell = counting_doorbell;
	doorbells = 0;

	ibv_sge sg{0x1000, 8, 1};
	ibv_send_wr swr{};
	swr.opcode = IBV_WR_SEND;
	swr.sg_list = &sg;
	swr.num_sge = 1;
	ibv_send_wr *sbad = nullptr;
	EXPECT_EQ(post_send(&q->vqp.qp, &swr, &sbad), EINVAL);
	EXPECT_EQ(sbad, &swr);
	ibv_recv_wr rwr{};
	ibv_recv_wr *rbad = nullptr;
	EXPECT_EQ(post_recv(&q->vqp.qp, &rwr, &rbad), EINVAL);
	EXPECT_EQ(rbad, &rwr);
	EXPECT_EQ(doorbells.load(), 0);
}

/* ---- lifetimes against stand-in commands ---------------------------- */

struct stand_in {
	int fd = -1;
	int opens = 0, closes = 0, xsrqs = 0, qps = 0, open_qps = 0;
	int srq_creates = 0, srq_destroys = 0;
	size_t resp_size = 0, cmd_size = 0;
	int vsize = 0;
	int ret = 0;
	uint32_t max_wr = 0, max_sge = 0;
};
stand_in *si;

constexpr size_t ring_bytes = 1 << 16;

/* A ring header as sroce.ko writes it, at offset 0 of the memfd. */
sroce_mmap_info make_ring(uint32_t max_wr, uint32_t max_sge)
{
	void *p = mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		       si->fd, 0);
	EXPECT_NE(p, MAP_FAILED);
	memset(p, 0, ring_bytes);
	auto *h = static_cast<sroce_queue_hdr *>(p);
	uint32_t n = 1;
	while (n < max_wr)
		n <<= 1;
	h->num_slots = n;
	h->slot_shift = log2_ceil(sizeof(sroce_recv_wqe) + 16ULL * max_sge);
	munmap(p, ring_bytes);
	sroce_mmap_info mi{};
	mi.offset = 0;
	mi.size = static_cast<__u32>(ring_bytes);
	return mi;
}

/*
 * A stand-in command was called: counted in count, with the sizes
 * libibverbs passed noted. What it answers: si->ret (nonzero: nothing done).
 */
int si_called(int &count, size_t cmd_size, size_t resp_size)
{
	count++;
	si->cmd_size = cmd_size;
	si->resp_size = resp_size;
	return si->ret;
}

int si_open_xrcd(ibv_context *ctx, verbs_xrcd *x, int vsize,
		 ibv_xrcd_init_attr * /*attr*/, struct ibv_open_xrcd * /*cmd*/,
		 size_t cmd_size, ib_uverbs_open_xrcd_resp * /*resp*/,
		 size_t resp_size)
{
	si->vsize = vsize;
	if (const int r = si_called(si->opens, cmd_size, resp_size))
		return r;
	x->xrcd.context = ctx;
	x->handle = 0x31;
	return 0;
}

int si_close_xrcd(verbs_xrcd *x)
{
	si->closes++;
	EXPECT_EQ(x->handle, 0x31U);
	return si->ret;
}

int si_create_xsrq(ibv_context *ctx, verbs_srq *s, ibv_srq_init_attr_ex *a,
		   ibv_create_xsrq * /*cmd*/, size_t cmd_size,
		   ib_uverbs_create_srq_resp *resp, size_t resp_size)
{
	if (const int r = si_called(si->xsrqs, cmd_size, resp_size))
		return r;
	EXPECT_EQ(a->srq_type, IBV_SRQT_XRC);
	s->srq.context = ctx;
	s->srq_type = IBV_SRQT_XRC;
	a->attr.max_sge = std::max(a->attr.max_sge, 1U);
	sroce_create_srq_resp drv{};
	drv.mi = make_ring(a->attr.max_wr, a->attr.max_sge);
	drv.srq_num = 0xabcde;
	a->attr.max_wr = 8;
	memcpy(reinterpret_cast<unsigned char *>(resp) + sizeof(*resp), &drv,
	       sizeof(drv));
	return 0;
}

int si_create_srq(ibv_pd *pd, ibv_srq *srq, ibv_srq_init_attr *a,
		  struct ibv_create_srq * /*cmd*/, size_t /*cmd_size*/,
		  ib_uverbs_create_srq_resp *resp, size_t /*resp_size*/)
{
	si->srq_creates++;
	srq->context = pd->context;
	sroce_create_srq_resp drv{};
	drv.mi = make_ring(a->attr.max_wr, a->attr.max_sge);
	drv.srq_num = 0x77;
	memcpy(reinterpret_cast<unsigned char *>(resp) + sizeof(*resp), &drv,
	       sizeof(drv));
	return 0;
}

int si_modify_srq(ibv_srq * /*srq*/, ibv_srq_attr * /*attr*/, int /*mask*/,
		  struct ibv_modify_srq * /*cmd*/, size_t /*cmd_size*/)
{
	return EINVAL;
}

int si_destroy_srq(ibv_srq * /*srq*/)
{
	si->srq_destroys++;
	return 0;
}

constexpr srq_cmds si_srq_cmds = {
	.create = si_create_srq,
	.modify = si_modify_srq,
	.destroy = si_destroy_srq,
};

int si_create_qp_ex2(ibv_context *ctx, verbs_qp *q, ibv_qp_init_attr_ex *a,
		     struct ibv_create_qp_ex * /*cmd*/, size_t cmd_size,
		     ib_uverbs_ex_create_qp_resp * /*resp*/, size_t resp_size)
{
	if (const int r = si_called(si->qps, cmd_size, resp_size))
		return r;
	q->qp.context = ctx;
	q->qp.qp_type = a->qp_type;
	q->qp.qp_num = 0x99;
	return 0;
}

int si_open_qp(ibv_context *ctx, verbs_qp *q, int vsize, ibv_qp_open_attr *a,
	       struct ibv_open_qp * /*cmd*/, size_t cmd_size,
	       ib_uverbs_create_qp_resp * /*resp*/, size_t resp_size)
{
	si->vsize = vsize;
	if (const int r = si_called(si->open_qps, cmd_size, resp_size))
		return r;
	q->qp.context = ctx;
	q->qp.qp_type = a->qp_type;
	q->qp.qp_num = a->qp_num;
	return 0;
}

/* What libibverbs gets to create an XRC SRQ of max_wr WQEs of 2 SGEs. */
ibv_srq_init_attr_ex xrc_srq_init_attr(ibv_pd *pd, ibv_xrcd *xrcd, ibv_cq *cq,
				       uint32_t max_wr)
{
	ibv_srq_init_attr_ex a{};
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		      IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	a.srq_type = IBV_SRQT_XRC;
	a.pd = pd;
	a.xrcd = xrcd;
	a.cq = cq;
	a.attr.max_wr = max_wr;
	a.attr.max_sge = 2;
	return a;
}

constexpr xrc_cmds si_cmds = {
	.open_xrcd = si_open_xrcd,
	.close_xrcd = si_close_xrcd,
	.create_srq_ex = si_create_xsrq,
	.create_qp_ex2 = si_create_qp_ex2,
	.open_qp = si_open_qp,
	.srq = &si_srq_cmds,
};

struct XrcLifetime : ::testing::Test {
	stand_in s;
	ibv_context ctx{};
	ibv_pd pd{};
	verbs_xrcd vx{};
	ibv_cq cq{};

	void SetUp() override
	{
		si = &s;
		s.fd = memfd_create("sroce-test-xrc", MFD_CLOEXEC);
		ASSERT_GE(s.fd, 0);
		ASSERT_EQ(ftruncate(s.fd, ring_bytes), 0);
		ctx.cmd_fd = s.fd;
		pd.context = &ctx;
		vx.xrcd.context = &ctx;
		cq.context = &ctx;
	}
	void TearDown() override
	{
		close(s.fd);
		si = nullptr;
	}
	ibv_srq_init_attr_ex xrc_srq_attr()
	{
		return xrc_srq_init_attr(&pd, &vx.xrcd, &cq, 5);
	}
};

TEST_F(XrcLifetime, OpenAndCloseXrcd)
{
	ibv_xrcd_init_attr a{};
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	a.fd = -1;
	a.oflags = O_CREAT;
	ibv_xrcd *x = open_xrcd_using(si_cmds, &ctx, &a);
	ASSERT_NE(x, nullptr);
	EXPECT_EQ(s.opens, 1);
	EXPECT_EQ(s.vsize, static_cast<int>(sizeof(verbs_xrcd)));
	EXPECT_EQ(s.cmd_size, sizeof(struct ibv_open_xrcd));
	EXPECT_EQ(s.resp_size, 4U) << "no driver data";
	EXPECT_EQ(x->context, &ctx);

	s.ret = EBUSY;
	EXPECT_EQ(close_xrcd_using(si_cmds, x), EBUSY) << "kept on failure";
	s.ret = 0;
	EXPECT_EQ(close_xrcd_using(si_cmds, x), 0);
	EXPECT_EQ(s.closes, 2);

	s.ret = ENOSYS;
	errno = 0;
	EXPECT_EQ(open_xrcd_using(si_cmds, &ctx, &a), nullptr);
	EXPECT_EQ(errno, ENOSYS);
}

TEST_F(XrcLifetime, XrcSrqMapsItsRingLikeABasicOne)
{
	ibv_srq_init_attr_ex a = xrc_srq_attr();
	ibv_srq *srq = create_srq_ex_using(si_cmds, &ctx, &a);
	ASSERT_NE(srq, nullptr);
	EXPECT_EQ(s.xsrqs, 1);
	EXPECT_EQ(s.cmd_size, sizeof(ibv_create_xsrq));
	EXPECT_EQ(s.resp_size, 40U) << "core response + sroce_create_srq_resp";
	uint32_t num = 0;
	EXPECT_EQ(get_srq_num(srq, &num), 0);
	EXPECT_EQ(num, 0xabcdeU);
	EXPECT_EQ(srq->pd, &pd);

	/* post_srq_recv works unchanged: the WQE lands in the "kernel". */
	ibv_sge sg{0x5000, 64, 0x9};
	ibv_recv_wr wr{};
	wr.wr_id = 0x1234;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	ibv_recv_wr *bad = nullptr;
	ASSERT_EQ(post_srq_recv(srq, &wr, &bad), 0);
	void *p = mmap(nullptr, ring_bytes, PROT_READ, MAP_SHARED, s.fd, 0);
	ASSERT_NE(p, MAP_FAILED);
	const auto *h = static_cast<const sroce_queue_hdr *>(p);
	EXPECT_EQ(h->producer, 1U);
	sroce_recv_wqe w{};
	memcpy(&w,
	       static_cast<const unsigned char *>(p) + SROCE_QUEUE_DATA_OFFSET,
	       sizeof(w));
	EXPECT_EQ(w.wr_id, 0x1234U);
	munmap(p, ring_bytes);

	EXPECT_EQ(destroy_srq_using(si_srq_cmds, srq), 0);
	EXPECT_EQ(s.srq_destroys, 1);
}

TEST_F(XrcLifetime, XrcSrqNeedsXrcdCqPd)
{
	for (uint32_t drop : {IBV_SRQ_INIT_ATTR_XRCD, IBV_SRQ_INIT_ATTR_CQ,
			      IBV_SRQ_INIT_ATTR_PD}) {
		ibv_srq_init_attr_ex a = xrc_srq_attr();
		a.comp_mask &= ~drop;
		errno = 0;
		EXPECT_EQ(create_srq_ex_using(si_cmds, &ctx, &a), nullptr);
		EXPECT_EQ(errno, EINVAL) << drop;
	}
	ibv_srq_init_attr_ex a = xrc_srq_attr();
	a.comp_mask |= IBV_SRQ_INIT_ATTR_TM;
	errno = 0;
	EXPECT_EQ(create_srq_ex_using(si_cmds, &ctx, &a), nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP);
	a = xrc_srq_attr();
	a.srq_type = IBV_SRQT_TM;
	errno = 0;
	EXPECT_EQ(create_srq_ex_using(si_cmds, &ctx, &a), nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP);
	EXPECT_EQ(s.xsrqs, 0);

	/* The kernel refusing (no XRC yet): its errno, nothing mapped. */
	s.ret = EOPNOTSUPP;
	a = xrc_srq_attr();
	errno = 0;
	EXPECT_EQ(create_srq_ex_using(si_cmds, &ctx, &a), nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(XrcLifetime, BasicSrqThroughCreateSrqEx)
{
	ibv_srq_init_attr_ex a{};
	int cookie = 0;
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	a.srq_type = IBV_SRQT_BASIC;
	a.pd = &pd;
	a.srq_context = &cookie;
	a.attr.max_wr = 3;
	a.attr.max_sge = 1;
	ibv_srq *srq = create_srq_ex_using(si_cmds, &ctx, &a);
	ASSERT_NE(srq, nullptr);
	EXPECT_EQ(s.srq_creates, 1);
	EXPECT_EQ(s.xsrqs, 0);
	EXPECT_EQ(srq->pd, &pd);
	EXPECT_EQ(srq->srq_context, &cookie);
	EXPECT_EQ(srq->context, &ctx);
	EXPECT_EQ(to_srq(srq)->vsrq.srq_type, IBV_SRQT_BASIC);
	uint32_t num = 0;
	EXPECT_EQ(get_srq_num(srq, &num), 0);
	EXPECT_EQ(num, 0x77U);
	EXPECT_EQ(destroy_srq_using(si_srq_cmds, srq), 0);

	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE; /* no PD */
	errno = 0;
	EXPECT_EQ(create_srq_ex_using(si_cmds, &ctx, &a), nullptr);
	EXPECT_EQ(errno, EINVAL);
}

TEST_F(XrcLifetime, XrcRecvQpHasNoRingsAndNoDriverData)
{
	ibv_qp_init_attr_ex a{};
	a.qp_type = IBV_QPT_XRC_RECV;
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	a.xrcd = &vx.xrcd;
	ibv_qp *q = create_xrc_recv_qp_using(si_cmds, &ctx, &a);
	ASSERT_NE(q, nullptr);
	EXPECT_EQ(s.qps, 1);
	EXPECT_EQ(s.cmd_size, sizeof(struct ibv_create_qp_ex));
	EXPECT_EQ(s.resp_size, sizeof(ib_uverbs_ex_create_qp_resp));
	EXPECT_FALSE(to_qp(q)->sq.ring.has_value());
	EXPECT_FALSE(to_qp(q)->rq.ring.has_value());
	q->state = IBV_QPS_RTS;
	ibv_send_wr swr{};
	ibv_send_wr *sbad = nullptr;
	EXPECT_EQ(post_send(q, &swr, &sbad), EINVAL);
	obj_ptr<qp> owned(to_qp(q));

	a.comp_mask = 0;
	errno = 0;
	EXPECT_EQ(create_xrc_recv_qp_using(si_cmds, &ctx, &a), nullptr);
	EXPECT_EQ(errno, EINVAL);
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	errno = 0;
	EXPECT_EQ(create_xrc_recv_qp_using(si_cmds, &ctx, &a), nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP);
	EXPECT_EQ(s.qps, 1);
}

TEST_F(XrcLifetime, OpenQp)
{
	ibv_qp_open_attr a{};
	a.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
		      IBV_QP_OPEN_ATTR_TYPE;
	a.qp_num = 0x4567;
	a.xrcd = &vx.xrcd;
	a.qp_type = IBV_QPT_XRC_RECV;
	ibv_qp *q = open_qp_using(si_cmds, &ctx, &a);
	ASSERT_NE(q, nullptr);
	EXPECT_EQ(s.open_qps, 1);
	EXPECT_EQ(s.vsize, static_cast<int>(sizeof(verbs_qp)));
	EXPECT_EQ(s.cmd_size, sizeof(struct ibv_open_qp));
	EXPECT_EQ(s.resp_size, sizeof(ib_uverbs_create_qp_resp));
	EXPECT_EQ(q->qp_num, 0x4567U);
	EXPECT_FALSE(to_qp(q)->sq.ring.has_value());
	obj_ptr<qp> owned(to_qp(q));

	a.qp_type = IBV_QPT_RC;
	errno = 0;
	EXPECT_EQ(open_qp_using(si_cmds, &ctx, &a), nullptr);
	EXPECT_EQ(errno, EOPNOTSUPP);
}

/* ---- what the real libibverbs writes -------------------------------- */

TEST(XrcCommands, OpenXrcdAsLibibverbsWritesIt)
{
	uverbs_pipe p;
	ibv_xrcd_init_attr a{};
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	a.fd = 17;
	a.oflags = O_CREAT;

	ibv_xrcd *x = open_xrcd_using(kernel_xrc_cmds, p.context(), &a);
	ASSERT_NE(x, nullptr) << errno;
	const std::vector<unsigned char> b = p.drain();
	ASSERT_GE(b.size(), sizeof(struct ibv_open_xrcd));
	const auto cmd =
		expect_cmd<ib_uverbs_open_xrcd>(b, IB_USER_VERBS_CMD_OPEN_XRCD);
	const ib_uverbs_open_xrcd &req = cmd.req;
	EXPECT_EQ(req.fd, 17U);
	EXPECT_EQ(req.oflags, static_cast<__u32>(O_CREAT));
	EXPECT_EQ(b.size(), sizeof(struct ibv_open_xrcd)) << "no driver udata";
	c_ptr<verbs_xrcd> owned(reinterpret_cast<verbs_xrcd *>(x));
}

TEST(XrcCommands, CreateXsrqAsLibibverbsWritesIt)
{
	uverbs_pipe p;
	ibv_pd pd{};
	pd.context = p.context();
	pd.handle = 0x21;
	verbs_xrcd vx{};
	vx.xrcd.context = p.context();
	vx.handle = 0x22;
	ibv_cq cq{};
	cq.context = p.context();
	cq.handle = 0x23;
	ibv_srq_init_attr_ex a = xrc_srq_init_attr(&pd, &vx.xrcd, &cq, 16);

	/*
	 * Nobody answers: no ring described, so EPROTO and a destroy (a
	 * stand-in: the real one would wait for an answer that never comes).
	 */
	stand_in st;
	si = &st;
	xrc_cmds cmds = kernel_xrc_cmds;
	cmds.srq = &si_srq_cmds;
	errno = 0;
	EXPECT_EQ(create_srq_ex_using(cmds, p.context(), &a), nullptr);
	EXPECT_EQ(errno, EPROTO);
	EXPECT_EQ(st.srq_destroys, 1);
	si = nullptr;
	const std::vector<unsigned char> b = p.drain();
	ASSERT_GE(b.size(), sizeof(ibv_create_xsrq));
	const auto cmd = expect_cmd<ib_uverbs_create_xsrq>(
		b, IB_USER_VERBS_CMD_CREATE_XSRQ);
	const ib_uverbs_create_xsrq &req = cmd.req;
	EXPECT_EQ(req.srq_type, static_cast<__u8>(IBV_SRQT_XRC));
	EXPECT_EQ(req.pd_handle, 0x21U);
	EXPECT_EQ(req.xrcd_handle, 0x22U);
	EXPECT_EQ(req.cq_handle, 0x23U);
	EXPECT_EQ(req.max_wr, 16U);
	EXPECT_EQ(req.max_sge, 2U);
}

} // namespace
