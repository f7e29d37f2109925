// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// sec_local's read_modify_race: the responder's READ resources are
// reallocated by modify_qp(IBV_QP_MAX_DEST_RD_ATOMIC) while long READ
// responses are being streamed from them; and IBV_QP_CUR_STATE naming a
// state the QP is not in must not let a modify_qp skip the state machine.
#include "sec_local.h"

#include "pattern.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <thread>

using namespace vt;
using namespace std::chrono_literals;

namespace sl {

namespace {

// --- IBV_QP_CUR_STATE -----------------------------------------------------------------

struct Lie {
	const char *what;
	ibv_qp_state real;   // the state the QP is brought to first
	ibv_qp_state claim;  // cur_qp_state
	ibv_qp_state next;
	int mask;            // besides IBV_QP_STATE | IBV_QP_CUR_STATE
};

// Required attributes of the claimed transitions (the values do not matter:
// the call must be refused before any is applied).
void fill_lie_attrs(ibv_qp_attr &a, const Endpoint &ep)
{
	a.pkey_index = 0;
	a.port_num = ep.port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0x777777;
	a.max_rd_atomic = 1;
}

// Bring a fresh QP of ep to st (connected to peer when st >= RTR).
void bring_to(Endpoint &ep, ibv_qp *qp, const Endpoint &peer, ibv_qp_state st, const ConnParams &p)
{
	if (st == IBV_QPS_RESET)
		return;
	if (st == IBV_QPS_INIT) {
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_INIT;
		a.port_num = ep.port;
		a.qp_access_flags = p.access;
		if (int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			throw_errno("ibv_modify_qp(RESET -> INIT)", rc);
		return;
	}
	connect_qp(ep, qp, peer, peer.qpn(), p, 0);
	if (st != IBV_QPS_RTS)
		modify_state(qp, st);
}

void cur_state_lies(const Options &o, Verdict &v, Endpoint &a, Endpoint &b, const ConnParams &pa,
		    const ConnParams &pb)
{
	const Lie lies[] = {
		{"claims RESET -> INIT while in RTS", IBV_QPS_RTS, IBV_QPS_RESET, IBV_QPS_INIT,
		 IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
		{"claims RTR -> RTS (new SQ PSN) while in RTS", IBV_QPS_RTS, IBV_QPS_RTR, IBV_QPS_RTS,
		 IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC},
		{"claims RTR -> RTS while in INIT (skipping RTR: no path, no peer)", IBV_QPS_INIT, IBV_QPS_RTR,
		 IBV_QPS_RTS,
		 IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC},
		{"claims SQD -> RTS while in RESET", IBV_QPS_RESET, IBV_QPS_SQD, IBV_QPS_RTS, 0},
		{"claims SQD -> RTS while in ERR (reviving a flushed QP)", IBV_QPS_ERR, IBV_QPS_SQD, IBV_QPS_RTS, 0},
	};
	for (auto &l : lies) {
		// B's side of a fresh pair, in the real state.
		a.create_qp(QpCaps{});
		b.create_qp(QpCaps{});
		if (l.real >= IBV_QPS_RTR)
			connect_qp(a, b, pa, pb.psn);
		bring_to(b, b.qp.get(), a, l.real == IBV_QPS_ERR ? IBV_QPS_RTS : l.real, pb);
		if (l.real == IBV_QPS_ERR)
			modify_state(b.qp.get(), IBV_QPS_ERR);
		ibv_qp_attr before{};
		ibv_qp_init_attr ia{};
		ibv_query_qp(b.qp.get(), &before, IBV_QP_STATE | IBV_QP_SQ_PSN, &ia);

		ibv_qp_attr at{};
		fill_lie_attrs(at, b);
		at.qp_state = l.next;
		at.cur_qp_state = l.claim;
		int rc = ibv_modify_qp(b.qp.get(), &at, IBV_QP_STATE | IBV_QP_CUR_STATE | l.mask);
		ibv_qp_attr after{};
		ibv_query_qp(b.qp.get(), &after, IBV_QP_STATE | IBV_QP_SQ_PSN, &ia);
		v.check(rc == EINVAL && after.qp_state == l.real && after.sq_psn == before.sq_psn,
			"modify_qp with IBV_QP_CUR_STATE that %s: %s (want EINVAL), state %s -> %s, SQ PSN 0x%x -> 0x%x",
			l.what, errno_name(rc), qp_state_str(before.qp_state), qp_state_str(after.qp_state),
			before.sq_psn, after.sq_psn);
		b.qp.reset();
		a.qp.reset();
	}
	(void)o;
}

// --- the race -------------------------------------------------------------------------------

struct Shared {
	std::shared_mutex qm; // exclusive while the pair is being replaced
	ibv_qp *bqp = nullptr;
	ibv_ah_attr av{};
	std::atomic<bool> stop{false};
	// Set while the pair is replaced: glibc's rwlock prefers readers, and
	// two modifiers re-taking it back to back would starve the writer.
	std::atomic<bool> pause{false};
	std::atomic<uint64_t> cycles{0}, ok{0}, einval{0}, other{0}, rd_changes{0};
	std::mutex emu;
	std::map<std::string, uint64_t> other_errs;
};

void modifier(Shared &s, uint64_t seed)
{
	static const uint8_t kDest[] = {4, 8, 16};
	Rng rng(seed);
	auto count = [&](int rc, const char *step) {
		if (!rc)
			s.ok++;
		else if (rc == EINVAL)
			s.einval++;
		else {
			s.other++;
			std::lock_guard<std::mutex> g(s.emu);
			s.other_errs[strf("%s: %s", step, errno_name(rc))]++;
		}
		return rc == 0;
	};
	while (!s.stop) {
		if (s.pause) {
			std::this_thread::sleep_for(1ms);
			continue;
		}
		std::shared_lock<std::shared_mutex> l(s.qm);
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_SQD;
		count(ibv_modify_qp(s.bqp, &a, IBV_QP_STATE), "-> SQD");
		a = {};
		a.qp_state = IBV_QPS_SQD;
		a.max_dest_rd_atomic = kDest[rng.range(0, 2)];
		a.ah_attr = s.av;
		if (count(ibv_modify_qp(s.bqp, &a, IBV_QP_STATE | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_AV),
			  "SQD -> SQD (max_dest_rd_atomic, AV)"))
			s.rd_changes++;
		a = {};
		a.qp_state = IBV_QPS_RTS;
		count(ibv_modify_qp(s.bqp, &a, IBV_QP_STATE), "-> RTS");
		s.cycles++;
	}
}

struct Slot {
	bool busy = false;
	uint64_t off = 0, len = 0;
	uint64_t rd_changes_at_post = 0;
};

} // namespace

void case_read_modify_race(const Options &o, Verdict &v)
{
	const double secs = o.seconds > 0 ? o.seconds : 20;
	// "The READs made progress", not a rate: the stock TCG guest verified 16
	// in the 20 s (330 MiB); 3 leaves a factor of 5 for a loaded host.
	const unsigned min_reads = o.min_ops ? o.min_ops : 3;
	auto a = open_endpoint("A", o.a, o.ipv6, false, 64);
	auto b = open_endpoint("B", o.b, o.ipv6, false, 64);
	ConnParams pa, pb;
	pa.mtu = pb.mtu = pick_mtu(*a, *b, o.mtu);
	pa.timeout = pb.timeout = o.ack_timeout;
	pa.max_rd_atomic = 4;  // A's initiator depth (and its own responder side)
	pb.max_rd_atomic = 16; // B's responder resources, changed between 4 and 16 below
	pa.psn = 0x123456, pb.psn = 0xabcdef;

	// B's source: a stream; A reads ranges of it into its slots.
	const size_t src_len = o.read_max + 4096;
	Buffer src(src_len), sink(o.read_max * o.depth);
	const uint64_t tag = mix64(o.seed ^ 0x4eadu);
	fill_stream(src.data(), src_len, tag, 0);
	auto smr = reg_mr(b->pd.get(), src.data(), src_len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	auto dmr = reg_mr(a->pd.get(), sink.data(), sink.size(), IBV_ACCESS_LOCAL_WRITE);

	Shared sh;
	auto connect = [&] {
		a->create_qp(QpCaps{});
		b->create_qp(QpCaps{});
		connect_pair(*a, *b, pa, pb);
		sh.bqp = b->qp.get();
		sh.av = ah_to(*b, a->gid);
		pa.psn = (pa.psn + 0x1001) & 0xffffff;
		pb.psn = (pb.psn + 0x2002) & 0xffffff;
	};
	connect();
	std::thread m1(modifier, std::ref(sh), o.seed + 1), m2(modifier, std::ref(sh), o.seed + 2);

	Rng rng(o.seed ^ 0x7ead);
	std::vector<Slot> slots(o.depth);
	std::deque<size_t> order; // slots in posting order
	uint64_t reads_ok = 0, bytes_ok = 0, bad = 0, reconnects = 0, explained = 0, unexplained = 0, flushed = 0;
	unsigned async_n = 0;
	std::map<std::string, uint64_t> errs;
	auto t0 = Clock::now();
	auto last = Clock::now();
	bool draining = false;
	try {
		for (;;) {
			bool time_up = secs_since(t0) >= secs;
			if (time_up && !draining) {
				draining = true;
				sh.stop = true;
			}
			if (draining && order.empty())
				break;
			// Keep depth READs in flight.
			for (size_t i = 0; i < slots.size() && !draining; i++) {
				Slot &sl = slots[i];
				if (sl.busy)
					continue;
				sl.len = rng.range(o.read_min, o.read_max);
				sl.off = rng.range(0, src_len - sl.len);
				uint8_t *d = sink.data() + i * o.read_max;
				std::memset(d, 0xcd, sl.len);
				ibv_sge sge{reinterpret_cast<uintptr_t>(d), static_cast<uint32_t>(sl.len), dmr->lkey};
				ibv_send_wr w = signaled_wr(i, sge, IBV_WR_RDMA_READ);
				w.wr.rdma.remote_addr = src.addr() + sl.off;
				w.wr.rdma.rkey = smr->rkey;
				ibv_send_wr *badw;
				if (int rc = ibv_post_send(a->qp.get(), &w, &badw))
					throw_errno("ibv_post_send(RDMA_READ)", rc);
				sl.busy = true;
				sl.rd_changes_at_post = sh.rd_changes.load();
				order.push_back(i);
			}
			ibv_wc wc[8];
			int n = ibv_poll_cq(a->scq.get(), 8, wc);
			if (n < 0)
				throw Error("ibv_poll_cq on A failed");
			bool failed = false;
			for (int k = 0; k < n; k++) {
				last = Clock::now();
				size_t i = wc[k].wr_id;
				if (order.empty() || i != order.front()) {
					v.fail("A: READ completion for slot %zu out of order", i);
					throw Error("completion order broken");
				}
				order.pop_front();
				Slot &sl = slots[i];
				sl.busy = false;
				if (wc[k].status == IBV_WC_SUCCESS) {
					const uint8_t *d = sink.data() + i * o.read_max;
					size_t at = check_stream(d, sl.len, tag, sl.off);
					if (at != sl.len || wc[k].opcode != IBV_WC_RDMA_READ) {
						if (bad++ < 5)
							v.fail("READ of %llu bytes at offset %llu completed, but byte %zu is "
							       "wrong (%zu bytes differ)",
							       static_cast<unsigned long long>(sl.len),
							       static_cast<unsigned long long>(sl.off), at,
							       count_mismatch(d, sl.len, tag, sl.off));
					} else {
						reads_ok++;
						bytes_ok += sl.len;
					}
					continue;
				}
				errs[wc_status(wc[k].status)]++;
				if (wc[k].status == IBV_WC_WR_FLUSH_ERR && failed) {
					flushed++;
					continue;
				}
				failed = true;
				// The responder dropped its READ resources under this READ
				// (a max_dest_rd_atomic change while it was outstanding):
				// its retransmitted request is unknown to B, and A runs out
				// of retries. Anything else is not explained.
				bool rd_changed = sh.rd_changes.load() != sl.rd_changes_at_post;
				if (rd_changed && (wc[k].status == IBV_WC_RETRY_EXC_ERR ||
						   wc[k].status == IBV_WC_REM_INV_REQ_ERR)) {
					explained++;
				} else {
					unexplained++;
					v.fail("READ of %llu bytes: %s (vendor_err 0x%x)%s",
					       static_cast<unsigned long long>(sl.len), wc_status(wc[k].status),
					       wc[k].vendor_err,
					       rd_changed ? "" : " with no max_dest_rd_atomic change while it was outstanding");
				}
			}
			if (!failed && !order.empty() && secs_since(last) > 120) {
				v.fail("no READ completion for 120 s");
				throw Error("READs stalled");
			}
			if (failed) {
				// Flush the rest, then a fresh pair (the modifiers wait).
				modify_state(a->qp.get(), IBV_QPS_ERR);
				auto rest = collect(*a, a->scq.get(), order.size(), 30s);
				for (auto &w : rest) {
					errs[wc_status(w.status)]++;
					slots[w.wr_id].busy = false;
					flushed += w.status == IBV_WC_WR_FLUSH_ERR;
				}
				if (rest.size() != order.size())
					throw Error("READs never flushed");
				order.clear();
				sh.pause = true;
				{
					std::unique_lock<std::shared_mutex> l(sh.qm);
					drain_async(b->ctx.get(), &async_n);
					connect();
				}
				sh.pause = false;
				reconnects++;
			}
			if (!n)
				std::this_thread::sleep_for(50us);
			if (!n && rng.chance(1))
				drain_async(b->ctx.get(), &async_n);
		}
	} catch (const std::exception &e) {
		v.fail("A: %s", e.what());
	}
	sh.stop = true;
	m1.join();
	m2.join();
	std::string ev = drain_async(b->ctx.get(), &async_n);
	std::string es;
	for (auto &[k, c] : errs)
		es += strf("%s%s %llu", es.empty() ? "" : ", ", k.c_str(), static_cast<unsigned long long>(c));
	std::string oe;
	for (auto &[k, c] : sh.other_errs)
		oe += strf("%s%s %llu", oe.empty() ? "" : ", ", k.c_str(), static_cast<unsigned long long>(c));
	v.info("%.1f s: %llu READs verified (%.1f MiB), error completions: %s; %llu pairs replaced, %llu READs "
	       "flushed behind a failed one",
	       secs_since(t0), static_cast<unsigned long long>(reads_ok), bytes_ok / 1048576.0,
	       es.empty() ? "none" : es.c_str(), static_cast<unsigned long long>(reconnects),
	       static_cast<unsigned long long>(flushed));
	v.info("B modify_qp: %llu cycles, %llu calls succeeded, %llu EINVAL (state changed by the other thread), "
	       "%llu other errors%s%s; %llu max_dest_rd_atomic changes; %u async events on B (%s)",
	       static_cast<unsigned long long>(sh.cycles.load()), static_cast<unsigned long long>(sh.ok.load()),
	       static_cast<unsigned long long>(sh.einval.load()), static_cast<unsigned long long>(sh.other.load()),
	       oe.empty() ? "" : ": ", oe.c_str(), static_cast<unsigned long long>(sh.rd_changes.load()), async_n,
	       ev.empty() ? "last batch: none" : ev.c_str());
	if (explained)
		v.info("%llu READs failed after B replaced its READ resources under them (max_dest_rd_atomic changed "
		       "while outstanding: B does not know the retransmitted request, A runs out of retries)",
		       static_cast<unsigned long long>(explained));
	v.check(bad == 0, "every READ that completed successfully has the right data (%llu wrong)",
		static_cast<unsigned long long>(bad));
	v.check(unexplained == 0, "no READ failed without an explanation (%llu)", static_cast<unsigned long long>(unexplained));
	v.check(reads_ok >= min_reads, "at least %u READs completed and verified (%llu)", min_reads,
		static_cast<unsigned long long>(reads_ok));
	v.check(sh.other == 0, "B's modify_qp calls failed with EINVAL only (%llu other failures%s%s)",
		static_cast<unsigned long long>(sh.other.load()), oe.empty() ? "" : ": ", oe.c_str());
	v.check(sh.rd_changes > 0, "B's max_dest_rd_atomic changed under the READs (%llu times)",
		static_cast<unsigned long long>(sh.rd_changes.load()));
	a->qp.reset();
	b->qp.reset();
	std::string why = rc_send_check(o, o.a, o.b);
	v.check(why.empty(), "after the race an RC pair %s <-> %s passes a verified SEND each way%s%s", o.a.name.c_str(),
		o.b.name.c_str(), why.empty() ? "" : ": ", why.c_str());

	// Last: on a kernel that accepts them, these leave QPs in states
	// they never reached properly.
	cur_state_lies(o, v, *a, *b, pa, pb);
	why = rc_send_check(o, o.a, o.b);
	v.check(why.empty(), "afterwards an RC pair %s <-> %s passes a verified SEND each way%s%s", o.a.name.c_str(),
		o.b.name.c_str(), why.empty() ? "" : ": ", why.c_str());
}

} // namespace sl
