// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// hostile_ring's random cases: the fuzz (random WQEs among valid traffic,
// random indices, CQ consumers and state changes, WQEs rewritten while they
// run) and the opt-in shadow_race (the kernel's shadow copy of a WQE
// refetched under a running requester).
#include "hostile_ring.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstring>
#include <map>
#include <thread>

using namespace vt;
using namespace std::chrono_literals;

namespace hr {

// --- fuzz ------------------------------------------------------------------------------

namespace {

uint32_t pick(Rng &r, std::initializer_list<uint32_t> v) { return *(v.begin() + r.range(0, v.size() - 1)); }

Wqe random_wqe(Ctx &c, Conn &k, Rng &r)
{
	Wqe w;
	const VictimInfo &v = c.vic;
	w.h.wr_id = r.next();
	static const uint8_t ops[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 0x20};
	w.h.opcode = r.chance(85) ? ops[r.range(0, sizeof(ops) - 1)] : static_cast<uint8_t>(r.next());
	w.h.flags = r.chance(80) ? static_cast<uint8_t>(r.next() & 0xf) : static_cast<uint8_t>(r.next());
	uint32_t maxs = k.acap.max_send_sge;
	w.h.num_sge = static_cast<uint16_t>(
		r.chance(80) ? r.range(0, maxs) : pick(r, {maxs + 1, 0xffff, 255, static_cast<uint32_t>(r.next())}));
	w.h.inline_len = r.chance(70) ? static_cast<uint32_t>(r.range(0, k.acap.max_inline_data))
				      : pick(r, {k.acap.max_inline_data + 1, 0xffffffff, 0x80000000,
						 static_cast<uint32_t>(r.next())});
	auto lkey = [&] {
		return pick(r, {c.amr->lkey, c.amr->lkey, c.have_victim ? v.lkey[0] : 0, 0, c.amr->lkey ^ 0x100,
				static_cast<uint32_t>(r.next())});
	};
	auto len = [&] {
		return r.chance(70) ? static_cast<uint32_t>(r.range(0, 3 * c.mtu_bytes))
				    : pick(r, {0xffffffff, 0x80000000, static_cast<uint32_t>(kScratch),
					       static_cast<uint32_t>(kScratch) + 1, static_cast<uint32_t>(r.next())});
	};
	auto addr = [&](uint64_t base) {
		return r.chance(75) ? base + r.range(0, kScratch - 1)
				    : (r.chance(50) ? base - r.range(1, 4096) : r.next());
	};
	for (uint32_t i = 0; i < maxs + 1; i++)
		w.sge.push_back({addr(c.abuf.addr()), len(), lkey()});
	if (w.h.flags & SROCE_SEND_INLINE) {
		w.inl.resize(k.sq.slot_size());
		for (auto &b : w.inl)
			b = static_cast<uint8_t>(r.next());
	}
	w.h.rkey = pick(r, {c.bmr->rkey, c.bmr->rkey, c.have_victim ? v.rkey[1] : 0, static_cast<uint32_t>(r.next())});
	w.h.remote_addr = addr(c.bbuf.addr()) & (r.chance(80) ? ~7ULL : ~0ULL);
	w.h.imm_or_inv =
		pick(r, {c.bmr->rkey, c.amr->lkey, c.have_victim ? v.rkey[0] : 0, static_cast<uint32_t>(r.next())});
	w.h.compare_add = r.next();
	w.h.swap = r.next();
	w.h.ah = k.ah ? pick(r, {sroce::to_ah(k.ah)->ah_num, sroce::to_ah(k.ah)->ah_num, c.have_victim ? v.ah_num : 0,
				 0, static_cast<uint32_t>(r.next())})
		      : static_cast<uint32_t>(r.next() & 0xff);
	w.h.remote_qpn = r.chance(80) ? k.b->qp_num : static_cast<uint32_t>(r.next());
	w.h.remote_qkey = r.chance(80) ? kQkey : static_cast<uint32_t>(r.next());
	return w;
}

// A well-formed WQE for k's QP type: keys, addresses and lengths inside the
// scratch MRs (so the QP lives on and the WQEs behind it reach deeper: multi-
// packet messages, READs and atomics in flight, RNR, flushes of sent WQEs).
Wqe valid_wqe(Ctx &c, Conn &k, Rng &r)
{
	static const uint8_t rc_ops[] = {SROCE_WR_SEND,
					 SROCE_WR_SEND_WITH_IMM,
					 SROCE_WR_RDMA_WRITE,
					 SROCE_WR_RDMA_WRITE_WITH_IMM,
					 SROCE_WR_RDMA_READ,
					 SROCE_WR_ATOMIC_CMP_AND_SWP,
					 SROCE_WR_ATOMIC_FETCH_AND_ADD};
	uint8_t op;
	if (k.type == IBV_QPT_RC)
		op = rc_ops[r.range(0, 6)];
	else if (k.type == IBV_QPT_UC)
		op = rc_ops[r.range(0, 3)];
	else
		op = rc_ops[r.range(0, 1)];
	const bool atomic = op == SROCE_WR_ATOMIC_CMP_AND_SWP || op == SROCE_WR_ATOMIC_FETCH_AND_ADD;
	uint32_t len = atomic                 ? 8
		       : k.type == IBV_QPT_UD ? static_cast<uint32_t>(r.range(0, c.mtu_bytes))
		       : r.chance(90)         ? static_cast<uint32_t>(r.range(0, 3 * c.mtu_bytes))
					      : static_cast<uint32_t>(r.range(0, 64 * 1024));
	if (op == SROCE_WR_SEND || op == SROCE_WR_SEND_WITH_IMM)
		len = std::min<uint32_t>(len, 8192); // B's receives
	Wqe w;
	w.h.wr_id = r.next();
	w.h.opcode = op;
	w.h.flags = SROCE_SEND_SIGNALED;
	if (r.chance(10))
		w.h.flags |= SROCE_SEND_FENCE;
	if (r.chance(10))
		w.h.flags |= SROCE_SEND_SOLICITED;
	if (r.chance(20) && !atomic && op != SROCE_WR_RDMA_READ && len <= k.acap.max_inline_data) {
		w.h.flags |= SROCE_SEND_INLINE;
		w.h.inline_len = len;
		w.inl.resize(len);
		fill_stream(w.inl.data(), len, r.next(), 0);
	} else {
		uint32_t nsge =
			atomic ? 1 : static_cast<uint32_t>(r.range(1, std::min<uint32_t>(k.acap.max_send_sge, 3)));
		uint32_t left = len;
		for (uint32_t i = 0; i < nsge; i++) {
			uint32_t n = i + 1 == nsge ? left : static_cast<uint32_t>(r.range(0, left));
			uint64_t off = r.range(0, kScratch - 1 - n) & (atomic ? ~7ULL : ~0ULL);
			w.sge.push_back(a_sge(c, off, n));
			left -= n;
		}
		w.h.num_sge = static_cast<uint16_t>(nsge);
	}
	w.h.rkey = c.bmr->rkey;
	w.h.remote_addr = c.bbuf.addr() + (r.range(0, kScratch - 1 - len) & ~7ULL);
	w.h.imm_or_inv = static_cast<uint32_t>(r.next());
	w.h.compare_add = r.next();
	w.h.swap = r.next();
	if (k.ah) {
		w.h.ah = sroce::to_ah(k.ah)->ah_num;
		w.h.remote_qpn = k.b->qp_num;
		w.h.remote_qkey = kQkey;
	}
	return w;
}

// Mostly well-formed WQEs with one field made hostile, or garbage throughout.
Wqe fuzz_wqe(Ctx &c, Conn &k, Rng &r)
{
	if (r.chance(35))
		return random_wqe(c, k, r);
	Wqe w = valid_wqe(c, k, r);
	if (r.chance(60))
		return w;
	Wqe g = random_wqe(c, k, r);
	switch (r.range(0, 9)) {
	case 0: w.h.opcode = g.h.opcode; break;
	case 1: w.h.flags = g.h.flags, w.h.inline_len = g.h.inline_len, w.inl = g.inl; break;
	case 2: w.h.num_sge = g.h.num_sge, w.sge = g.sge; break;
	case 3: w.h.rkey = g.h.rkey; break;
	case 4: w.h.remote_addr = g.h.remote_addr; break;
	case 5: w.h.ah = g.h.ah; break;
	case 6: w.h.remote_qpn = g.h.remote_qpn, w.h.remote_qkey = g.h.remote_qkey; break;
	case 7:
		if (!w.sge.empty())
			w.sge[r.range(0, w.sge.size() - 1)].lkey = g.sge[0].lkey;
		break;
	case 8:
		if (!w.sge.empty())
			w.sge[r.range(0, w.sge.size() - 1)].length = g.sge[0].length;
		break;
	default: w.h.imm_or_inv = g.h.imm_or_inv; break;
	}
	return w;
}

// Without --known-bugs, every header put in the ring stays within its slot:
// a non-inline WQE has no more SGEs than the slot holds (kKnownBug), an
// inline one no more bytes - so that even a shadow slot refetched under a
// running requester (kShadowRace) cannot send it reading past the slot.
void known_bug_clamp(Ctx &c, Conn &k, Wqe &w)
{
	if (c.o.known_bugs)
		return;
	const uint32_t fit = (k.sq.slot_size() - SROCE_SEND_WQE_HDR_SIZE) / sizeof(sroce_sge);
	if (!(w.h.flags & SROCE_SEND_INLINE) && w.h.num_sge > fit)
		w.h.num_sge = static_cast<uint16_t>(fit);
	if ((w.h.flags & SROCE_SEND_INLINE) && w.h.inline_len > k.sq.slot_size() - SROCE_SEND_WQE_HDR_SIZE)
		w.h.inline_len = k.sq.slot_size() - SROCE_SEND_WQE_HDR_SIZE;
}

} // namespace

void case_fuzz(Ctx &c, Checker &chk)
{
	Rng r(c.o.seed ^ 0xf022);
	std::map<std::string, int> hist;
	uint64_t doorbells = 0, wqes = 0;
	double worst = 0;
	Mutator m;
	m.start();
	for (int round = 0; round < c.o.fuzz_rounds; round++) {
		ibv_qp_type t = r.chance(60) ? IBV_QPT_RC : r.chance(50) ? IBV_QPT_UC : IBV_QPT_UD;
		ConnCfg cfg;
		cfg.send_wr = pick(r, {2, 8, 32});
		cfg.recv_wr = 16;
		cfg.send_sge = pick(r, {1, 2, 4});
		cfg.cqe = 256;
		cfg.inline_data = pick(r, {0, 64, 200});
		cfg.timeout = 12;
		cfg.retry = 2;
		cfg.rnr_retry = 2;
		cfg.min_rnr = 1;
		auto k = make_conn(c, t, cfg);
		Ring acr = cq_ring(k->acq.get());
		// B: valid receives into B scratch, plus the odd corrupt one.
		for (int i = 0; i < 16; i++) {
			uint32_t n = r.chance(95) ? 1 : static_cast<uint32_t>(r.next());
			put_recv(k->brq, k->bprod, 0xb00 + static_cast<uint64_t>(i), n,
				 {b_sge(c, r.range(0, kScratch - 8192), 8192)});
			k->bprod++;
		}
		k->brq.set_producer(k->bprod);
		const bool mutate = r.chance(30);
		const int steps = static_cast<int>(r.range(4, 40));
		// Mostly valid traffic (messages in flight, READs and atomics
		// outstanding) with hostile steps among it.
		const unsigned hostile_pct = pick(r, {5, 15, 40});
		for (int s = 0; s < steps; s++) {
			if (!r.chance(hostile_pct)) {
				if (k->sq.flags() & SROCE_QUEUE_F_QP_ERR)
					break;
				// Room in the ring, as a well-behaved producer would wait for,
				// and receives on B for the SENDs.
				auto t1 = Clock::now();
				while (k->prod - k->sq.consumer() >= k->sq.n && secs_since(t1) < 2)
					for (auto &x : poll_window(k->acq.get(), 1ms))
						hist[ibv_wc_status_str(x.status)]++;
				while (k->bprod - k->brq.consumer() < 12)
					k->b_recv(0xb00, c.bbuf.addr() + r.range(0, kScratch - 8192 - 64), 8192 + 40,
						  c.bmr->lkey);
				put_wqe(k->sq, k->prod, valid_wqe(c, *k, r));
				wqes++;
				t1 = Clock::now();
				k->publish(1);
				doorbells++;
				worst = std::max(worst, secs_since(t1));
				for (auto &x : poll_window(k->acq.get(), 1ms))
					hist[ibv_wc_status_str(x.status)]++;
				continue;
			}
			// Publishing more WQEs to a QP in ERR/SQE makes the flush
			// refetch shadow slots a requester may still be reading
			// (kShadowRace): only with --known-bugs.
			if (!c.o.known_bugs && (k->sq.flags() & SROCE_QUEUE_F_QP_ERR)) {
				hist["round ended at the error"]++;
				break;
			}
			Wqe w = fuzz_wqe(c, *k, r);
			known_bug_clamp(c, *k, w);
			put_wqe(k->sq, k->prod, w);
			wqes++;
			if (mutate) {
				// The word at 8 holds opcode, flags, num_sge and inline_len:
				// random values there are a num_sge of up to 0xffff
				// (kKnownBug), so only with --known-bugs.
				uint64_t wi = r.range(0, 7);
				if (wi == 1 && !c.o.known_bugs)
					wi = 2;
				m.aim(reinterpret_cast<uint64_t *>(k->sq.slot(k->prod) + 8 * wi), r.next(), r.next());
			}
			uint32_t n = k->sq.n;
			switch (r.range(0, 19)) {
			case 0: k->prod += static_cast<uint32_t>(r.range(0, 2 * n)); break;
			case 1: k->prod -= static_cast<uint32_t>(r.range(1, n)); break;
			case 2: k->prod = static_cast<uint32_t>(r.next()); break;
			case 3:
				if (r.chance(30))
					Ring::st(k->sq.hdr->consumer, static_cast<uint32_t>(r.next()));
				else
					acr.set_consumer(static_cast<uint32_t>(r.next()));
				k->prod++;
				break;
			case 4:
				if (r.chance(20))
					modify_state(k->a.get(), IBV_QPS_ERR);
				k->prod++;
				break;
			default: k->prod++; break;
			}
			k->sq.set_producer(k->prod);
			auto t1 = Clock::now();
			int rc = doorbell(k->a.get());
			worst = std::max(worst, secs_since(t1));
			doorbells++;
			if (rc)
				hist[strf("doorbell rc %d", rc)]++;
			for (auto &x : poll_window(k->acq.get(), 2ms))
				hist[ibv_wc_status_str(x.status)]++;
		}
		m.idle();
		for (auto &x : poll_window(k->acq.get(), 150ms))
			hist[ibv_wc_status_str(x.status)]++;
		poll_window(k->bcq.get(), 10ms);
		hist[strf("A ends in %s", qp_state_str(qp_state(k->a.get())))]++;
	}
	m.stop();
	std::string h;
	for (auto &[kk, vv] : hist)
		h += strf("%s%s: %d", h.empty() ? "" : ", ", kk.c_str(), vv);
	if (!c.o.known_bugs) {
		chk.note(std::string("non-inline WQEs had at most as many SGEs as their slot holds (") + kKnownBug +
			 ")");
		chk.note(std::string("a round ended once its QP was in error (") + kShadowRace + ")");
	}
	chk.note(strf("%d rounds, %" PRIu64 " WQEs, %" PRIu64 " doorbells (slowest %.1f ms); %s", c.o.fuzz_rounds, wqes,
		      doorbells, worst * 1000, h.c_str()));
	chk.expect(worst < 5.0, "every doorbell returned in bounded time");
	c.canaries_intact(chk);
}

// --- opt-in: the kernel's shadow copy reused under a running requester ------------------

// The requester builds each packet from the kernel's shadow copy of the WQE
// after dropping sq_lock; a flush (QP to ERR) followed by a doorbell with the
// producer a ring ahead refetches every shadow slot - including the one the
// requester is still reading - from the ring, where this program has put a
// WQE with an impossible inline length. The requester then copies "inline
// data" from the shadow at the old message offset: past the shadow
// allocation. A byte of B's buffer that is neither A's data nor zero is
// kernel memory that went out on the wire (or the kernel oopses).
void case_shadow_race(Ctx &c, Checker &chk)
{
	const uint32_t len = 512 * 1024;
	fill_stream(c.abuf.data(), len, 0x5bad, 0);
	std::atomic<bool> hog_stop{false};
	std::vector<std::thread> hogs;
	for (int i = 0; i < 2; i++)
		hogs.emplace_back([&] {
			volatile uint64_t x = 0;
			while (!hog_stop)
				x = x + 1;
		});
	Rng r(c.o.seed ^ 0x5bad);
	int tries = 0, hit_err = 0, leaks = 0;
	size_t leak_off = 0;
	auto t0 = Clock::now();
	while (secs_since(t0) < c.o.race_seconds && !leaks) {
		ConnCfg cfg;
		cfg.send_wr = 2;
		cfg.send_sge = 1;
		cfg.inline_data = 0;
		auto k = make_conn(c, IBV_QPT_RC, cfg);
		std::memset(c.bbuf.data(), 0, len);
		Wqe poison = wqe(SROCE_WR_SEND, 0xdead, {}, SROCE_SEND_SIGNALED | SROCE_SEND_INLINE);
		poison.h.inline_len = 0xfffffff0U;
		poison.h.num_sge = 0xffff;
		Wqe w = wqe(SROCE_WR_RDMA_WRITE, 1, {a_sge(c, 0, len)});
		w.h.rkey = c.bmr->rkey;
		w.h.remote_addr = c.bbuf.addr();
		k->post(w);
		for (uint32_t i = 1; i < k->sq.n; i++)
			put_wqe(k->sq, k->prod + i, poison);
		k->prod++;
		k->sq.set_producer(k->prod);
		std::thread db([&] { doorbell(k->a.get()); });
		// Wait until the message is under way, then strike.
		size_t at = r.range(16, 256) * c.mtu_bytes;
		static const uint8_t zero[16] = {};
		auto t1 = Clock::now();
		while (!std::memcmp(c.bbuf.data() + at, zero, sizeof(zero)) && secs_since(t1) < 5)
			;
		put_wqe(k->sq, k->prod - 1, poison);
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_ERR;
		ibv_modify_qp(k->a.get(), &a, IBV_QP_STATE);
		k->prod += k->sq.n;
		k->sq.set_producer(k->prod);
		doorbell(k->a.get());
		db.join();
		auto got = poll_window(k->acq.get(), 50ms);
		hit_err += !got.empty() && got[0].status != IBV_WC_SUCCESS;
		for (size_t i = 0; i < len; i++) {
			uint8_t b = c.bbuf.data()[i];
			if (b && b != c.abuf.data()[i]) {
				leaks++;
				leak_off = i;
				break;
			}
		}
		tries++;
	}
	hog_stop = true;
	for (auto &h : hogs)
		h.join();
	chk.expect(!leaks, strf("%d attempts in %.0f s: no foreign byte reached B", tries, secs_since(t0)),
		   strf("byte %zu of B's buffer is neither A's data nor zero: kernel memory went out in a packet",
			leak_off));
	chk.note(strf("%d attempts ended with the WRITE in error", hit_err));
}

} // namespace hr
