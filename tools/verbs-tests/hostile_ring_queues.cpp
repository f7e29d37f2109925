// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// hostile_ring's other queue cases: garbage CQ consumer indices and CQ
// headers (cq_consumer), receive queue and SRQ producers past the ring or
// backwards and corrupt receive WQEs (rq_index, srq_ring), garbage SQ/RQ
// headers (hdr_garbage), doorbell floods (doorbell_flood) and a producer
// index that never stops moving (producer_spin).
#include "hostile_ring.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

using namespace vt;
using namespace std::chrono_literals;

namespace hr {

// --- cases: completion queues ---------------------------------------------------------

void case_cq_consumer(Ctx &c, Checker &chk)
{
	struct V {
		const char *name;
		std::function<uint32_t(uint32_t prod, uint32_t n)> f;
	};
	const V vs[] = {
		{"consumer 5 ahead of the producer", [](uint32_t p, uint32_t) { return p + 5; }},
		{"consumer more than a ring behind", [](uint32_t p, uint32_t n) { return p - n - 1; }},
		{"consumer 0xdeadbeef", [](uint32_t, uint32_t) { return 0xdeadbeefU; }},
	};
	auto send_once = [&](Conn &k, uint64_t tag) {
		fill_stream(c.abuf.data(), 512, tag, 0);
		k.b_recv(tag, c.bbuf.addr(), 512, c.bmr->lkey);
		ibv_sge s{c.abuf.addr(), 512, c.amr->lkey};
		ibv_send_wr w = signaled_wr(tag, s, IBV_WR_SEND), *bad = nullptr;
		return ibv_post_send(k.a.get(), &w, &bad);
	};
	for (auto &v : vs) {
		chk.note(std::string("- ") + v.name);
		ConnCfg cfg;
		cfg.cqe = 16;
		auto k = make_conn(c, IBV_QPT_RC, cfg);
		Ring cr = cq_ring(k->acq.get());
		if (send_once(*k, 0x401) || poll_n(k->acq.get(), 1, 15s).size() != 1 ||
		    poll_n(k->bcq.get(), 1, 15s).size() != 1) {
			chk.fail("the first SEND did not complete");
			continue;
		}
		uint32_t p = cr.producer();
		cr.fill_slots(0x5a);
		cr.set_consumer(v.f(p, cr.n));
		std::memset(c.bbuf.data(), 0, 512);
		chk.expect(send_once(*k, 0x402) == 0, "ibv_post_send succeeds");
		auto rb = poll_n(k->bcq.get(), 1, 15s);
		chk.expect(rb.size() == 1 && rb[0].status == IBV_WC_SUCCESS &&
				   check_stream(c.bbuf.data(), 512, 0x402, 0) == 512,
			   "B still receives the SEND intact", wcs_str(rb));
		chk.expect(c.alog.wait(IBV_EVENT_CQ_ERR, k->acq.get(), 5s), "IBV_EVENT_CQ_ERR for A's CQ",
			   "events: " + c.alog.of(k->acq.get()));
		bool canary =
			std::all_of(cr.data, cr.data + (size_t{cr.n} << cr.shift), [](uint8_t b) { return b == 0x5a; });
		chk.expect(canary && cr.producer() == p, "the kernel wrote no CQE and left the producer index alone",
			   strf("producer %u (was %u), slots %s", cr.producer(), p, canary ? "intact" : "written"));
		int rc = ibv_resize_cq(k->acq.get(), 64);
		chk.expect(rc != 0, "ibv_resize_cq refuses the corrupt CQ", "it succeeded");
		if (rc)
			chk.note(strf("ibv_resize_cq: %s", std::strerror(rc)));
		else
			cr = cq_ring(k->acq.get());
		auto v2 = poll_window(k->acq.get(), 100ms);
		chk.expect(v2.empty(), "polling the CQ returns nothing", wcs_str(v2));
		chk.expect(c.blog.of(k->b.get()) == "none" && qp_state(k->b.get()) == IBV_QPS_RTS,
			   "B unaffected (RTS, no event)");
	}
	{
		chk.note("- garbage in the CQ header's geometry, flags and notify words");
		ConnCfg cfg;
		cfg.cqe = 16;
		auto k = make_conn(c, IBV_QPT_RC, cfg);
		Ring cr = cq_ring(k->acq.get());
		cr.hdr->num_slots = 0x7fffffff;
		cr.hdr->slot_shift = 31;
		cr.hdr->flags = 0xffffffff;
		cr.hdr->notify = 0xffffffff;
		std::memset(cr.hdr->reserved0, 0xee, sizeof(cr.hdr->reserved0));
		int ok = 0;
		for (uint64_t t = 0x501; t < 0x501 + 20; t++) {
			if (send_once(*k, t))
				break;
			auto a = poll_n(k->acq.get(), 1, 15s);
			auto b = poll_n(k->bcq.get(), 1, 15s);
			if (a.size() == 1 && b.size() == 1 && a[0].status == IBV_WC_SUCCESS && a[0].wr_id == t &&
			    b[0].status == IBV_WC_SUCCESS && check_stream(c.bbuf.data(), 512, t, 0) == 512)
				ok++;
		}
		chk.expect(ok == 20, "20 SENDs (more than the ring holds) complete normally", strf("%d of 20", ok));
		chk.expect(!c.alog.has(IBV_EVENT_CQ_ERR, k->acq.get()), "no CQ error");
	}
}

// --- cases: receive queues --------------------------------------------------------------

void case_rq_index(Ctx &c, Checker &chk)
{
	struct V {
		const char *name;
		std::function<uint32_t(uint32_t kidx, uint32_t n)> f;
	};
	const V vs[] = {
		{"producer one past the ring", [](uint32_t k, uint32_t n) { return k + n + 1; }},
		{"producer moved back", [](uint32_t k, uint32_t) { return k - 1; }},
		{"producer 0x80000000 ahead", [](uint32_t k, uint32_t) { return k + 0x80000000U; }},
	};
	for (auto &v : vs) {
		BadOne x = responder_fatal();
		x.before = [&](Ctx &cc, Conn &k) {
			// One receive consumed by a valid SEND first.
			warmup_sends(cc, chk, k, 1, 0x600);
			k.brq.fill_slots(0xcc);
			k.brq.set_producer(v.f(k.bprod, k.brq.n));
		};
		x.make = [](Ctx &cc, Conn &) { return wqe(SROCE_WR_SEND, 0, {a_sge(cc, 0, 64)}); };
		run_bad_one(c, chk, std::string("B's receive queue: ") + v.name, x);
	}
	{
		// An SGE claiming 4 GiB of a 1 MiB MR: the SEND fills the MR and
		// then fails at the responder, never writing past it.
		BadOne x = responder_fatal();
		x.before = [](Ctx &cc, Conn &k) { k.b_recv(0xb0, cc.bbuf.addr(), 0xffffffffU, cc.bmr->lkey); };
		x.make = [](Ctx &cc, Conn &) {
			return wqe(SROCE_WR_SEND, 0, {a_sge(cc, 0, kScratch), a_sge(cc, 0, 4096)});
		};
		run_bad_one(c, chk, "receive SGE of 0xffffffff bytes, SEND longer than its MR", x);
	}
}

void case_srq_ring(Ctx &c, Checker &chk)
{
	const struct {
		const char *label;
		bool past_ring; // else: a WQE with more SGEs than the SRQ allows
	} kinds[] = {
		{"SRQ producer past the ring", true},
		{"SRQ WQE with more SGEs than the SRQ allows", false},
	};
	for (auto &kind : kinds) {
		ibv_srq_init_attr sa{};
		sa.attr.max_wr = 8;
		sa.attr.max_sge = 2;
		ibv_srq *srq = ibv_create_srq(c.B->pd.get(), &sa);
		if (!srq)
			throw_errno("ibv_create_srq", errno);
		{
			Ring sr = srq_ring(srq, sa.attr.max_wr, sa.attr.max_sge);
			BadOne x = responder_fatal();
			x.before = [&](Ctx &cc, Conn &) {
				uint32_t p = sr.producer();
				if (kind.past_ring) {
					sr.fill_slots(0xcc);
					sr.set_producer(p + sr.n + 1);
				} else {
					std::vector<sroce_sge> sg(4, b_sge(cc, 0, 64));
					put_recv(sr, p, 0xb5, 3, sg);
					sr.set_producer(p + 1);
				}
			};
			x.make = [](Ctx &cc, Conn &) { return wqe(SROCE_WR_SEND, 0, {a_sge(cc, 0, 64)}); };
			ConnCfg cfg;
			cfg.srq = srq;
			run_bad_one(c, chk, kind.label, x, cfg);
			if (kind.past_ring) {
				ibv_srq_attr at{};
				at.max_wr = 16;
				int rc = ibv_modify_srq(srq, &at, IBV_SRQ_MAX_WR);
				chk.expect(rc != 0, "resizing the corrupt SRQ is refused", "it succeeded");
			}
		}
		c.blog.forget(srq);
		if (ibv_destroy_srq(srq))
			chk.fail("ibv_destroy_srq failed");
	}
}

// --- cases: ring headers, doorbells ------------------------------------------------------

void case_hdr_garbage(Ctx &c, Checker &chk)
{
	auto k = make_conn(c, IBV_QPT_RC);
	for (Ring *r : {&k->sq, &k->brq}) {
		r->hdr->num_slots = 0xffffffff;
		r->hdr->slot_shift = 0xffffffff;
		r->hdr->flags = 0xffffffff;
		r->hdr->notify = 0xffffffff;
		std::memset(r->hdr->reserved1, 0xee, sizeof(r->hdr->reserved1));
	}
	k->sq.hdr->consumer = 0x12345678;
	k->brq.hdr->consumer = 0x9abcdef0;
	if (!warmup_sends(c, chk, *k, 5, 0x700))
		return;
	chk.expect(k->sq.consumer() == k->prod, "the kernel keeps publishing its own SQ consumer index",
		   strf("%#x", k->sq.consumer()));
	chk.expect(k->brq.consumer() == k->bprod, "... and its own RQ consumer index", strf("%#x", k->brq.consumer()));
	chk.expect(qp_state(k->a.get()) == IBV_QPS_RTS && qp_state(k->b.get()) == IBV_QPS_RTS, "both QPs stay RTS");
}

void case_doorbell_flood(Ctx &c, Checker &chk)
{
	auto k = make_conn(c, IBV_QPT_RC);
	const int n = 1000;
	bool all0 = true;
	// n doorbells on A (all0: each returned 0 so far); the slowest's time.
	auto ring_n = [&] {
		double worst = 0;
		for (int i = 0; i < n; i++) {
			auto t1 = Clock::now();
			all0 &= doorbell(k->a.get()) == 0;
			worst = std::max(worst, secs_since(t1));
		}
		return worst;
	};
	auto t0 = Clock::now();
	double worst = ring_n();
	chk.expect(all0 && worst < 2.0,
		   strf("%d doorbells with nothing posted: %.3f s, slowest %.1f ms", n, secs_since(t0), worst * 1000));
	expect_quiet(chk, k->acq.get(), "A", 100ms);
	chk.expect(qp_state(k->a.get()) == IBV_QPS_RTS, "A stays RTS");
	// In ERR: each doorbell flushes; with nothing to flush, bounded too.
	modify_state(k->a.get(), IBV_QPS_ERR);
	t0 = Clock::now();
	worst = ring_n();
	chk.expect(all0 && worst < 2.0,
		   strf("%d doorbells on a QP in ERR: %.3f s, slowest %.1f ms", n, secs_since(t0), worst * 1000));
	// A WQE published in ERR is flushed by the doorbell, once.
	k->post(wqe(SROCE_WR_SEND, 0x801, {a_sge(c, 0, 64)}));
	k->publish(1);
	for (int i = 0; i < 20; i++)
		doorbell(k->a.get());
	auto got = poll_window(k->acq.get(), 300ms);
	chk.expect(got.size() == 1 && got[0].wr_id == 0x801 && got[0].status == IBV_WC_WR_FLUSH_ERR,
		   "a WQE published in ERR is flushed exactly once", wcs_str(got));
}

// The SQ's producer index is the process's own word, and the kernel's
// requester reads it once more before it stops (it may have left a post's
// doorbell out while it ran: sroce_queue_hdr.polling). A thread that moves
// the index all the time must not keep the requester running: with A in
// SQD (drained: nothing may be fetched), each doorbell, which runs the
// requester in the caller's own syscall, returns at once however the index
// moves. Then, the index put back, A goes back to RTS and sends again.
// (A review found that a requester which went round again whenever the
// index had moved since its last look could be kept running by such a
// thread; this case did not make that requester spin in a 6.1 guest under
// TCG - each doorbell took about 25 us against 10 - so it guards the rule
// that replaced it, that only a run that will fetch is repeated.)
void case_producer_spin(Ctx &c, Checker &chk)
{
	auto k = make_conn(c, IBV_QPT_RC);
	if (!warmup_sends(c, chk, *k, 2, 0x900))
		return;
	modify_state(k->a.get(), IBV_QPS_SQD);
	chk.expect(qp_state(k->a.get()) == IBV_QPS_SQD, "A is in SQD");
	std::atomic<bool> stop{false};
	std::atomic<uint32_t> moves{0};
	const auto limit = 4s;
	auto t0 = Clock::now();
	// The doorbells from one CPU, the thread on another: the kernel does
	// not give the CPU up to it in the middle of a syscall.
	const bool two_cpus = sysconf(_SC_NPROCESSORS_ONLN) >= 2;
	auto pin = [](int cpu) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
	};
	cpu_set_t saved;
	const bool have_saved = pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved) == 0;
	const bool pinned = two_cpus && pin(0);
	std::thread mover([&] {
		// A new value each time, as fast as it can (the clock is read
		// every 4096), until told or for the limit: a doorbell that
		// never returns still ends.
		if (pinned)
			pin(1);
		uint32_t i = 1;
		while (!stop.load(std::memory_order_relaxed) && Clock::now() - t0 < limit) {
			for (uint32_t j = 0; j < 4096; j++, i++)
				k->sq.set_producer(k->prod + i);
			moves.store(i, std::memory_order_relaxed);
		}
	});
	// The thread moves the index before the doorbells start, and for
	// all of the second they take.
	while (moves.load() < 100000 && Clock::now() - t0 < 1s)
		std::this_thread::yield();
	double worst = 0;
	bool all0 = true;
	int rung = 0;
	auto t1 = Clock::now();
	while ((rung < 50 || Clock::now() - t1 < 1s) && Clock::now() - t0 < limit) {
		auto t2 = Clock::now();
		all0 &= doorbell(k->a.get()) == 0;
		worst = std::max(worst, secs_since(t2));
		rung++;
	}
	const uint32_t moved = moves.load();
	stop = true;
	mover.join();
	if (have_saved)
		pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
	chk.note(pinned ? "the doorbells from CPU 0, the thread on CPU 1" :
			  "one CPU, or no pinning: the thread ran where the kernel put it");
	chk.expect(moved >= 100000, strf("the thread moved the producer index %u times", moved));
	chk.expect(all0 && worst < 0.5,
		   strf("%d doorbells on a drained QP while another thread moves its producer index: "
			"each returns at once (slowest %.1f ms)", rung, worst * 1000));
	expect_quiet(chk, k->acq.get(), "A (nothing was fetched in SQD)", 100ms);
	k->sq.set_producer(k->prod);
	modify_state(k->a.get(), IBV_QPS_RTS);
	chk.expect(qp_state(k->a.get()) == IBV_QPS_RTS, "A is back in RTS");
	warmup_sends(c, chk, *k, 2, 0x910);
}

} // namespace hr
