// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// hostile_ring's send queue cases: producer indices past the ring or moving
// backwards (sq_index, sq_full_ring), WQE contents - invalid opcodes, huge
// lengths, too many SGEs, the keys and AH number of another process
// (bad_opcode, huge_len, too_many_sge, foreign_keys) - and WQEs rewritten by
// another thread while the kernel runs them (mutate).
#include "hostile_ring.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>

using namespace vt;
using namespace std::chrono_literals;

namespace hr {

// --- cases: send queue indices ------------------------------------------------------

void case_sq_index(Ctx &c, Checker &chk)
{
	struct V {
		const char *name;
		std::function<uint32_t(uint32_t kidx, uint32_t n)> f;
	};
	const V vs[] = {
		{"producer one past the ring", [](uint32_t k, uint32_t n) { return k + n + 1; }},
		{"producer 2^31 ahead", [](uint32_t k, uint32_t) { return k + 0x80000000U; }},
		{"producer moved back by one", [](uint32_t k, uint32_t) { return k - 1; }},
		{"producer moved back by a whole ring", [](uint32_t k, uint32_t n) { return k - n; }},
		{"producer 0xffffffff", [](uint32_t, uint32_t) { return 0xffffffffU; }},
	};
	for (auto &v : vs) {
		chk.note(std::string("- ") + v.name);
		auto k = make_conn(c, IBV_QPT_RC);
		if (!warmup_sends(c, chk, *k, 2, 0x100))
			continue;
		// Recognisable garbage in every slot: none of it may run.
		k->sq.fill_slots(0xcc);
		uint32_t kidx = k->prod;
		k->sq.set_producer(v.f(kidx, k->sq.n));
		int rc = doorbell(k->a.get());
		chk.expect(rc == 0, "the doorbell returns 0", strf("rc %d", rc));
		expect_state(chk, "A", k->a.get(), IBV_QPS_ERR);
		chk.expect(c.alog.wait(IBV_EVENT_QP_FATAL, k->a.get(), 5s), "A got IBV_EVENT_QP_FATAL",
			   "events: " + c.alog.of(k->a.get()));
		expect_quiet(chk, k->acq.get(), "A (nothing of the ring was consumed)");
		expect_quiet(chk, k->bcq.get(), "B");
		chk.expect(k->sq.consumer() == kidx, "A's SQ consumer index did not move",
			   strf("%u, was %u", k->sq.consumer(), kidx));
		// A flood of doorbells on the broken ring: each one bounded.
		double worst = 0;
		auto t0 = Clock::now();
		bool all0 = true;
		for (int i = 0; i < 200; i++) {
			auto t1 = Clock::now();
			all0 &= doorbell(k->a.get()) == 0;
			worst = std::max(worst, secs_since(t1));
		}
		double tot = secs_since(t0);
		chk.expect(all0 && worst < 2.0,
			   strf("200 more doorbells return 0 (%.3f s, slowest %.1f ms)", tot, worst * 1000));
		expect_quiet(chk, k->acq.get(), "A after the doorbells", 100ms);
		chk.expect(qp_state(k->b.get()) == IBV_QPS_RTS, "B stays RTS");
	}
}

// The producer exactly one ring ahead is legal: every slot runs once, and
// re-ringing does not run anything again until the producer moves.
void case_sq_full_ring(Ctx &c, Checker &chk)
{
	ConnCfg cfg;
	cfg.send_wr = 8;
	cfg.recv_wr = 32;
	auto k = make_conn(c, IBV_QPT_RC, cfg);
	const uint32_t n = k->sq.n;
	chk.note(strf("SQ of %u slots", n));
	for (uint32_t i = 0; i < n; i++) {
		fill_stream(c.abuf.data() + 64 * i, 64, 0x200 + i, 0);
		put_wqe(k->sq, i, wqe(SROCE_WR_SEND, 0x200 + i, {a_sge(c, 64 * i, 64)}));
	}
	for (uint32_t i = 0; i < 2 * n; i++)
		k->b_recv(0x300 + i, c.bbuf.addr() + 256 * i, 256, c.bmr->lkey);
	for (int round = 0; round < 2; round++) {
		// Round 0: n fresh WQEs; round 1: the same n slots again (stale,
		// but published again, so they run again - once).
		k->publish(n);
		auto got = poll_n(k->acq.get(), n, 15s);
		bool ok = got.size() == n;
		for (uint32_t i = 0; ok && i < n; i++)
			ok &= got[i].status == IBV_WC_SUCCESS && got[i].wr_id == 0x200 + i;
		chk.expect(ok,
			   strf("round %d: producer %u slots ahead runs each slot exactly once, in order", round, n),
			   wcs_str(got));
		auto rb = poll_n(k->bcq.get(), n, 15s);
		ok = rb.size() == n;
		for (uint32_t i = 0; ok && i < n; i++)
			ok &= rb[i].status == IBV_WC_SUCCESS &&
			      check_stream(c.bbuf.data() + 256 * (round * n + i), 64, 0x200 + i, 0) == 64;
		chk.expect(ok, strf("round %d: B received the %u messages intact", round, n), wcs_str(rb));
		for (int d = 0; d < 3; d++)
			doorbell(k->a.get());
		expect_quiet(chk, k->acq.get(), "three more doorbells without a new producer");
		expect_quiet(chk, k->bcq.get(), "B", 100ms);
	}
	chk.expect(qp_state(k->a.get()) == IBV_QPS_RTS, "A stays RTS");
}

// --- cases: WQE contents -------------------------------------------------------------

void case_bad_opcode(Ctx &c, Checker &chk)
{
	const struct {
		const char *qp; // for the label
		ibv_qp_type type;
		ibv_qp_state a_state;
		std::vector<uint8_t> ops;
	} groups[] = {
		{"RC", IBV_QPT_RC, IBV_QPS_ERR, {10, 11, 12, 13, 14, 16, 31, SROCE_WR_REG_MR, 0x7f, 0xff}},
		// Valid opcodes the QP type does not allow: UC and UD stop their SQ (SQE).
		{"UC",
		 IBV_QPT_UC,
		 IBV_QPS_SQE,
		 {SROCE_WR_RDMA_READ, SROCE_WR_ATOMIC_FETCH_AND_ADD, SROCE_WR_ATOMIC_WRITE}},
		{"UD", IBV_QPT_UD, IBV_QPS_SQE, {SROCE_WR_RDMA_WRITE, SROCE_WR_RDMA_READ, SROCE_WR_LOCAL_INV, 0x55}},
	};
	for (auto &g : groups)
		for (uint8_t op : g.ops) {
			BadOne x;
			x.type = g.type;
			x.a_state = g.a_state;
			x.make = [op](Ctx &cc, Conn &k) {
				Wqe w = wqe(op, 0, {a_sge(cc, 0, 64)});
				if (k.type == IBV_QPT_UD) {
					w.h.ah = sroce::to_ah(k.ah)->ah_num;
					w.h.remote_qpn = k.b->qp_num;
					w.h.remote_qkey = kQkey;
				}
				return w;
			};
			run_bad_one(c, chk, strf("%s, opcode %u", g.qp, op), x);
		}
}

void case_huge_len(Ctx &c, Checker &chk)
{
	const BadCase rows[] = {
		{"SEND, one SGE of 0xffffffff bytes",
		 {.make = [](Ctx &cc, Conn &) { return wqe(SROCE_WR_SEND, 0, {a_sge(cc, 0, 0xffffffffU)}); }}},
		{"SEND, two SGEs adding up to 2 GiB + 2",
		 {.make =
			  [](Ctx &cc, Conn &) {
				  return wqe(SROCE_WR_SEND, 0, {a_sge(cc, 0, 0x40000001U), a_sge(cc, 0, 0x40000001U)});
			  }}},
		{"inline SEND, inline_len 0xffffffff",
		 {.make =
			  [](Ctx &, Conn &) {
				  Wqe w = wqe(SROCE_WR_SEND, 0, {}, SROCE_SEND_SIGNALED | SROCE_SEND_INLINE);
				  w.h.inline_len = 0xffffffffU;
				  return w;
			  }}},
		{"inline SEND, inline_len max_inline_data + 1",
		 {.make =
			  [](Ctx &, Conn &k) {
				  Wqe w = wqe(SROCE_WR_SEND, 0, {}, SROCE_SEND_SIGNALED | SROCE_SEND_INLINE);
				  w.h.inline_len = k.acap.max_inline_data + 1;
				  w.inl.assign(k.sq.slot_size(), 0x5a);
				  return w;
			  }}},
		{.label = "RDMA WRITE of 1 GiB into a 1 MiB MR",
		 .x = {.want = IBV_WC_REM_ACCESS_ERR,
		       .b_err = true,
		       .b_event = IBV_EVENT_QP_ACCESS_ERR,
		       .make =
			       [](Ctx &cc, Conn &) {
				       Wqe w = wqe(SROCE_WR_RDMA_WRITE, 0, {a_sge(cc, 0, 1U << 30)});
				       w.h.rkey = cc.bmr->rkey;
				       w.h.remote_addr = cc.bbuf.addr() + 512 * 1024;
				       return w;
			       }},
		 .after =
			 [](Ctx &cc, Checker &ck) {
				 ck.expect(b_untouched(cc, 512 * 1024, 512 * 1024, 0xbb), "B's MR untouched");
			 }},
		{"RDMA READ of 2 GiB - 1 from a 1 MiB MR",
		 {.want = IBV_WC_REM_ACCESS_ERR,
		  .b_err = true,
		  .b_event = IBV_EVENT_QP_ACCESS_ERR,
		  .make =
			  [](Ctx &cc, Conn &) {
				  Wqe w = wqe(SROCE_WR_RDMA_READ, 0, {a_sge(cc, 0, 0x7fffffffU)});
				  w.h.rkey = cc.bmr->rkey;
				  w.h.remote_addr = cc.bbuf.addr();
				  return w;
			  }}},
	};
	run_bad_cases(c, chk, rows);
	{
		// A 16 KiB local MR, an SGE claiming 1 GiB of it: the requester
		// sends what the MR holds, then fails locally.
		Buffer small(16 * 1024);
		fill_stream(small.data(), small.size(), 0x5111, 0);
		MrPtr smr = reg_mr(c.A->pd.get(), small.data(), small.size(), kAllAccess);
		BadOne x;
		x.want = IBV_WC_LOC_PROT_ERR;
		x.make = [&](Ctx &, Conn &) {
			return wqe(SROCE_WR_SEND, 0, {sroce_sge{small.addr(), 1U << 30, smr->lkey}});
		};
		run_bad_one(c, chk, "SEND of 1 GiB from a 16 KiB MR", x);
		size_t good = check_stream(c.bbuf.data(), 16 * 1024, 0x5111, 0);
		chk.expect(good == 16 * 1024, "what B received before the error is the MR's content",
			   strf("first bad byte %zu", good));
	}
}

void case_too_many_sge(Ctx &c, Checker &chk)
{
	// A receive WQE on B with nsge SGEs (0: max_recv_sge + 1).
	auto bad_recv = [](uint32_t nsge) {
		return [nsge](Ctx &cc, Conn &k) {
			uint32_t n = nsge ? nsge : k.bcap.max_recv_sge + 1;
			std::vector<sroce_sge> sg(k.bcap.max_recv_sge + 1, b_sge(cc, 0, 64));
			put_recv(k.brq, k.bprod, 0xb0, n, sg);
			k.brq.set_producer(++k.bprod);
		};
	};
	auto send = [](Ctx &cc, Conn &) { return wqe(SROCE_WR_SEND, 0, {a_sge(cc, 0, 64)}); };
	const BadCase rows[] = {
		{"SEND with max_send_sge + 1 SGEs",
		 {.make =
			  [](Ctx &cc, Conn &k) {
				  std::vector<sroce_sge> sg(k.acap.max_send_sge + 1, a_sge(cc, 0, 8));
				  return wqe(SROCE_WR_SEND, 0, sg);
			  }}},
		// One more SGE than the slot holds (the WQE sits in slot 0, so
		// even a kernel that reads the SGEs of the rejected WQE stays
		// inside its shadow ring).
		{"RDMA WRITE with one SGE more than the slot holds",
		 {.make =
			  [](Ctx &cc, Conn &k) {
				  Wqe w = wqe(SROCE_WR_RDMA_WRITE, 0, {a_sge(cc, 0, 8)});
				  w.h.num_sge = static_cast<uint16_t>(
					  (k.sq.slot_size() - SROCE_SEND_WQE_HDR_SIZE) / sizeof(sroce_sge) + 1);
				  w.h.rkey = cc.bmr->rkey;
				  w.h.remote_addr = cc.bbuf.addr();
				  return w;
			  }}},
		{.label = "RDMA WRITE with num_sge 0xffff",
		 .x = {.make =
			       [](Ctx &cc, Conn &) {
				       Wqe w = wqe(SROCE_WR_RDMA_WRITE, 0, {a_sge(cc, 0, 8)});
				       w.h.num_sge = 0xffff;
				       w.h.rkey = cc.bmr->rkey;
				       w.h.remote_addr = cc.bbuf.addr();
				       return w;
			       }},
		 .gentle = kKnownBug},
		// Receive WQEs: the responder refuses the request (NAK remote
		// operational error) and its QP goes to ERR with IBV_EVENT_QP_FATAL.
		{"receive WQE with max_recv_sge + 1 SGEs",
		 {.want = IBV_WC_REM_OP_ERR,
		  .b_err = true,
		  .b_event = IBV_EVENT_QP_FATAL,
		  .b_recvs = false,
		  .behind = false,
		  .before = bad_recv(0),
		  .make = send}},
		{"receive WQE with 0xffffffff SGEs",
		 {.want = IBV_WC_REM_OP_ERR,
		  .b_err = true,
		  .b_event = IBV_EVENT_QP_FATAL,
		  .b_recvs = false,
		  .behind = false,
		  .before = bad_recv(0xffffffffU),
		  .make = send}},
	};
	run_bad_cases(c, chk, rows);
	{
		// A's own receive queue flushed past a corrupt WQE: bounded, and
		// nothing after the corrupt WQE is completed.
		chk.note("- flush of a receive queue holding a corrupt WQE");
		auto k = make_conn(c, IBV_QPT_RC);
		uint32_t p = k->arq.producer();
		put_recv(k->arq, p, 0xa0, 1, {a_sge(c, 0, 64)});
		put_recv(k->arq, p + 1, 0xa1, 1, {a_sge(c, 64, 64)});
		put_recv(k->arq, p + 2, 0xa2, 0xffff, {});
		put_recv(k->arq, p + 3, 0xa3, 1, {a_sge(c, 128, 64)});
		k->arq.set_producer(p + 4);
		modify_state(k->a.get(), IBV_QPS_ERR);
		auto got = poll_window(k->acq.get(), 500ms);
		bool ok = got.size() == 2 && got[0].wr_id == 0xa0 && got[1].wr_id == 0xa1 &&
			  got[0].status == IBV_WC_WR_FLUSH_ERR && got[1].status == IBV_WC_WR_FLUSH_ERR;
		chk.expect(ok, "the two WQEs before it are flushed, nothing from it on", wcs_str(got));
		for (int i = 0; i < 50; i++)
			doorbell(k->a.get());
		expect_quiet(chk, k->acq.get(), "50 doorbells later");
	}
}

// The keys and AH number of another process.
void case_foreign_keys(Ctx &c, Checker &chk)
{
	if (!c.have_victim) {
		chk.note("no victim process (--no-victim): skipped");
		return;
	}
	const VictimInfo &v = c.vic;
	auto vsge_a = [&](uint32_t len) { return sroce_sge{v.addr[0], len, v.lkey[0]}; };
	const BadCase rows[] = {
		{"SEND from the other process's MR (its L_Key)",
		 {.want = IBV_WC_LOC_PROT_ERR,
		  .make = [&](Ctx &, Conn &) { return wqe(SROCE_WR_SEND, 0, {vsge_a(64)}); }}},
		{.label = "RDMA WRITE sourced from the other process's MR",
		 .x = {.want = IBV_WC_LOC_PROT_ERR,
		       .make =
			       [&](Ctx &cc, Conn &) {
				       Wqe w = wqe(SROCE_WR_RDMA_WRITE, 0, {vsge_a(4096)});
				       w.h.rkey = cc.bmr->rkey;
				       w.h.remote_addr = cc.bbuf.addr() + 200 * 1024;
				       return w;
			       }},
		 .after =
			 [](Ctx &cc, Checker &ck) {
				 ck.expect(b_untouched(cc, 200 * 1024, 4096, 0xbb), "B's target bytes untouched");
			 }},
		{"RDMA WRITE into the other process's MR (its R_Key)",
		 {.want = IBV_WC_REM_ACCESS_ERR,
		  .b_err = true,
		  .b_event = IBV_EVENT_QP_ACCESS_ERR,
		  .make =
			  [&](Ctx &cc, Conn &) {
				  Wqe w = wqe(SROCE_WR_RDMA_WRITE, 0, {a_sge(cc, 0, 4096)});
				  w.h.rkey = v.rkey[1];
				  w.h.remote_addr = v.addr[1];
				  return w;
			  }}},
		// Fails in the completer: a WQE behind it may already have reached B.
		{"RDMA READ into the other process's MR (its L_Key)",
		 {.want = IBV_WC_LOC_PROT_ERR,
		  .behind = false,
		  .make =
			  [&](Ctx &cc, Conn &) {
				  Wqe w = wqe(SROCE_WR_RDMA_READ, 0, {vsge_a(4096)});
				  w.h.rkey = cc.bmr->rkey;
				  w.h.remote_addr = cc.bbuf.addr();
				  return w;
			  }}},
		{"RDMA READ from the other process's MR (its R_Key)",
		 {.want = IBV_WC_REM_ACCESS_ERR,
		  .b_err = true,
		  .b_event = IBV_EVENT_QP_ACCESS_ERR,
		  .make =
			  [&](Ctx &cc, Conn &) {
				  Wqe w = wqe(SROCE_WR_RDMA_READ, 0, {a_sge(cc, 0, 4096)});
				  w.h.rkey = v.rkey[1];
				  w.h.remote_addr = v.addr[1];
				  return w;
			  }}},
		{"FETCH_ADD on the other process's MR",
		 {.want = IBV_WC_REM_ACCESS_ERR,
		  .b_err = true,
		  .b_event = IBV_EVENT_QP_ACCESS_ERR,
		  .make =
			  [&](Ctx &cc, Conn &) {
				  Wqe w = wqe(SROCE_WR_ATOMIC_FETCH_AND_ADD, 0, {a_sge(cc, 0, 8)});
				  w.h.rkey = v.rkey[1];
				  w.h.remote_addr = v.addr[1];
				  w.h.compare_add = 1;
				  return w;
			  }}},
		// Fails in the completer: a WQE behind it may already have reached B.
		{"CMP_SWAP returning its result into the other process's MR",
		 {.want = IBV_WC_LOC_PROT_ERR,
		  .behind = false,
		  .make =
			  [&](Ctx &cc, Conn &) {
				  Wqe w = wqe(SROCE_WR_ATOMIC_CMP_AND_SWP, 0, {vsge_a(8)});
				  w.h.rkey = cc.bmr->rkey;
				  w.h.remote_addr = cc.bbuf.addr() + 1024;
				  return w;
			  }}},
		// Fails in the completer: a WQE behind it may already have reached B.
		{"RDMA READ into unregistered memory through a valid L_Key",
		 {.want = IBV_WC_LOC_PROT_ERR,
		  .behind = false,
		  .make =
			  [&](Ctx &cc, Conn &) {
				  // This process's own L_Key, pointing at its unregistered memory.
				  Wqe w = wqe(SROCE_WR_RDMA_READ, 0, {sroce_sge{cc.araw.addr(), 4096, cc.amr->lkey}});
				  w.h.rkey = cc.bmr->rkey;
				  w.h.remote_addr = cc.bbuf.addr();
				  return w;
			  }}},
		{"SEND into a receive WQE naming the other process's MR",
		 {.want = IBV_WC_REM_OP_ERR,
		  .b_err = true,
		  .b_event = IBV_EVENT_QP_FATAL,
		  .b_recvs = false,
		  .behind = false,
		  .before = [&](Ctx &, Conn &k) { k.b_recv(0xb0, v.addr[1], 4096, v.lkey[1]); },
		  .make = [&](Ctx &cc, Conn &) { return wqe(SROCE_WR_SEND, 0, {a_sge(cc, 0, 256)}); }}},
		{"LOCAL_INV of the other process's MR",
		 {.make =
			  [&](Ctx &, Conn &) {
				  Wqe w = wqe(SROCE_WR_LOCAL_INV, 0);
				  w.h.imm_or_inv = v.rkey[0];
				  return w;
			  }}},
	};
	run_bad_cases(c, chk, rows);
	{
		ibv_mw *mw = ibv_alloc_mw(c.A->pd.get(), IBV_MW_TYPE_2);
		if (!mw) {
			chk.note(strf("ibv_alloc_mw(type 2) failed (%s): BIND_MW variant skipped",
				      std::strerror(errno)));
		} else {
			BadOne x;
			x.want = IBV_WC_MW_BIND_ERR;
			x.make = [&](Ctx &, Conn &) {
				Wqe w = wqe(SROCE_WR_BIND_MW, 0);
				w.h.imm_or_inv = (mw->rkey & ~0xffU) | ((mw->rkey + 1) & 0xff);
				w.h.rkey = v.lkey[0];
				w.h.remote_addr = v.addr[0];
				w.h.compare_add = 4096;
				w.h.swap = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
				return w;
			};
			run_bad_one(c, chk, "BIND_MW of this process's window onto the other process's MR", x);
			ibv_dealloc_mw(mw);
		}
	}
	{
		BadOne x;
		x.type = IBV_QPT_UD;
		x.a_state = IBV_QPS_SQE;
		x.make = [&](Ctx &cc, Conn &k) {
			Wqe w = wqe(SROCE_WR_SEND, 0, {a_sge(cc, 0, 64)});
			w.h.ah = v.ah_num;
			w.h.remote_qpn = k.b->qp_num;
			w.h.remote_qkey = kQkey;
			return w;
		};
		run_bad_one(c, chk, "UD SEND through the other process's AH number", x);
	}
}

// --- cases: WQEs changed after the doorbell ------------------------------------------

void case_mutate(Ctx &c, Checker &chk)
{
	const uint32_t len = 8 * c.mtu_bytes; // several packets
	const uint64_t t1 = 0x7e51, t2 = 0x7e52;
	uint8_t *src1 = c.abuf.data(), *src2 = c.abuf.data() + 256 * 1024;
	fill_stream(src1, len, t1, 0);
	fill_stream(src2, len, t2, 0);
	uint8_t *dst = c.bbuf.data();
	Mutator m;
	m.start();

	// 1: the SGE address flips between two valid buffers. The message must
	// be wholly one of them: a kernel that read the ring again while sending
	// would mix them.
	{
		chk.note(strf("- SGE address flipped between two sources during %d WRITEs of %u bytes",
			      c.o.mutate_iters, len));
		auto k = make_conn(c, IBV_QPT_RC);
		int n1 = 0, n2 = 0, bad = 0;
		std::string why;
		for (int i = 0; i < c.o.mutate_iters && !bad; i++) {
			std::memset(dst, 0, len);
			Wqe w = wqe(SROCE_WR_RDMA_WRITE, static_cast<uint64_t>(i), {a_sge(c, 0, len)});
			w.h.rkey = c.bmr->rkey;
			w.h.remote_addr = c.bbuf.addr();
			k->post(w);
			auto *addr = reinterpret_cast<uint64_t *>(k->sq.slot(k->prod) + SROCE_SEND_WQE_HDR_SIZE);
			m.aim(addr, c.abuf.addr(), c.abuf.addr() + 256 * 1024);
			k->publish(1);
			auto got = poll_n(k->acq.get(), 1, 15s);
			m.idle();
			if (got.size() != 1 || got[0].status != IBV_WC_SUCCESS || got[0].byte_len != len) {
				bad++;
				why = "completion " + wcs_str(got) +
				      (got.empty() ? "" : strf(" byte_len %u", got[0].byte_len));
				break;
			}
			if (check_stream(dst, len, t1, 0) == len)
				n1++;
			else if (check_stream(dst, len, t2, 0) == len)
				n2++;
			else {
				bad++;
				why = strf("iteration %d: the message mixes both sources (%zu bytes from the first, "
					   "%zu from "
					   "the second)",
					   i, len - count_mismatch(dst, len, t1, 0),
					   len - count_mismatch(dst, len, t2, 0));
			}
		}
		chk.expect(!bad,
			   strf("every message came wholly from one source (%d from the first, %d from the "
				"second; %" PRIu64 " flips)",
				n1, n2, m.flips()),
			   why);
	}

	// 2: the control word (opcode, flags, num_sge, inline_len) flips between
	// a valid WRITE and an inline one with an impossible length. Allowed:
	// the valid WRITE (whole message), an inline WRITE of 0 bytes (a byte
	// mix of the two words), or LOC_QP_OP_ERR with nothing written.
	{
		chk.note("- control word flipped between a valid WRITE and an invalid inline one");
		sroce_send_wqe v1{}, v2{};
		v1.opcode = v2.opcode = SROCE_WR_RDMA_WRITE;
		v1.flags = SROCE_SEND_SIGNALED;
		v2.flags = SROCE_SEND_SIGNALED | SROCE_SEND_INLINE;
		v1.num_sge = v2.num_sge = 1;
		v2.inline_len = 0xffffff00U;
		uint64_t w1, w2;
		std::memcpy(&w1, reinterpret_cast<uint8_t *>(&v1) + 8, 8);
		std::memcpy(&w2, reinterpret_cast<uint8_t *>(&v2) + 8, 8);
		auto k = make_conn(c, IBV_QPT_RC);
		int ok_full = 0, ok_zero = 0, refused = 0, bad = 0, conns = 1;
		std::string why;
		for (int i = 0; i < c.o.mutate_iters / 2 && !bad; i++) {
			std::memset(dst, 0, len);
			Wqe w = wqe(SROCE_WR_RDMA_WRITE, static_cast<uint64_t>(i), {a_sge(c, 0, len)});
			w.h.rkey = c.bmr->rkey;
			w.h.remote_addr = c.bbuf.addr();
			k->post(w);
			m.aim(reinterpret_cast<uint64_t *>(k->sq.slot(k->prod) + 8), w1, w2);
			k->publish(1);
			auto got = poll_n(k->acq.get(), 1, 15s);
			m.idle();
			bool untouched = std::all_of(dst, dst + len, [](uint8_t b) { return b == 0; });
			if (got.size() != 1) {
				bad++;
				why = "no completion";
			} else if (got[0].status == IBV_WC_SUCCESS && got[0].byte_len == len &&
				   check_stream(dst, len, t1, 0) == len) {
				ok_full++;
			} else if (got[0].status == IBV_WC_SUCCESS && got[0].byte_len == 0 && untouched) {
				ok_zero++;
			} else if (got[0].status == IBV_WC_LOC_QP_OP_ERR && untouched) {
				refused++;
				if (conns >= 12)
					break;
				k = make_conn(c, IBV_QPT_RC);
				conns++;
			} else {
				bad++;
				why = strf("iteration %d: %s, byte_len %u, destination %s", i,
					   ibv_wc_status_str(got[0].status), got[0].byte_len,
					   untouched ? "untouched" : "written");
			}
		}
		chk.expect(!bad,
			   strf("each WQE ran as one consistent version (%d valid, %d zero-length inline, %d "
				"refused on %d QPs)",
				ok_full, ok_zero, refused, conns),
			   why);
	}

	// 3: a receive WQE's SGE address flips between two places in B's MR
	// while a multi-packet SEND lands: the message must be wholly in one
	// place, the other untouched.
	{
		chk.note(
			strf("- receive SGE address flipped between two places during %d SENDs", c.o.mutate_iters / 2));
		ConnCfg cfg;
		cfg.recv_wr = 4;
		auto k = make_conn(c, IBV_QPT_RC, cfg);
		uint8_t *p1 = c.bbuf.data(), *p2 = c.bbuf.data() + 256 * 1024;
		int n1 = 0, n2 = 0, bad = 0;
		std::string why;
		for (int i = 0; i < c.o.mutate_iters / 2 && !bad; i++) {
			std::memset(p1, 0, len);
			std::memset(p2, 0, len);
			k->b_recv(static_cast<uint64_t>(i), c.bbuf.addr(), len, c.bmr->lkey);
			auto *addr = reinterpret_cast<uint64_t *>(k->brq.slot(k->bprod - 1) + sizeof(sroce_recv_wqe));
			m.aim(addr, c.bbuf.addr(), c.bbuf.addr() + 256 * 1024);
			k->post(wqe(SROCE_WR_SEND, static_cast<uint64_t>(i), {a_sge(c, 0, len)}));
			k->publish(1);
			auto ga = poll_n(k->acq.get(), 1, 15s);
			auto gb = poll_n(k->bcq.get(), 1, 15s);
			m.idle();
			bool z1 = std::all_of(p1, p1 + len, [](uint8_t b) { return b == 0; });
			bool z2 = std::all_of(p2, p2 + len, [](uint8_t b) { return b == 0; });
			if (ga.size() != 1 || gb.size() != 1 || ga[0].status != IBV_WC_SUCCESS ||
			    gb[0].status != IBV_WC_SUCCESS || gb[0].byte_len != len) {
				bad++;
				why = "completions: A " + wcs_str(ga) + ", B " + wcs_str(gb);
			} else if (check_stream(p1, len, t1, 0) == len && z2) {
				n1++;
			} else if (check_stream(p2, len, t1, 0) == len && z1) {
				n2++;
			} else {
				bad++;
				why = strf("iteration %d: the message is split between the two places", i);
			}
		}
		chk.expect(!bad,
			   strf("every message landed wholly in one place (%d in the first, %d in the second)", n1, n2),
			   why);
	}
	m.stop();
}

} // namespace hr
