// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// The RC requester's send queue (sroce_sendq.h): how a message is cut into
// packets, which WQEs an acknowledgment completes, where a rewind resumes;
// then all of it together, a requester against a model responder over a
// link that loses, duplicates and reorders packets, where every message
// must arrive exactly once and in order, and every WQE complete.
#include <deque>
#include <random>
#include <vector>

#include <gtest/gtest.h>

extern "C" {
#include "sroce_responder.h"
#include "sroce_sendq.h"
}

namespace {

constexpr uint32_t kMtu = 1024;

struct Wqe {
	sroce_wqe_kind kind;
	uint32_t len;
	uint32_t first, last;	// its PSNs, if it has them (@psns)
	bool psns;
	uint8_t state;
	uint32_t resid = 0;	// READ: bytes still to arrive
};

// A send queue in a ring of 8 slots, the oldest at @base (free-running).
struct Ring {
	sroce_wqe_st st[8] = {};
	sroce_sendq q = {st, 7, 0, 0};

	explicit Ring(uint32_t base, std::initializer_list<Wqe> wqes)
	{
		q.acked = q.fetched = base;
		for (const Wqe &w : wqes) {
			sroce_wqe_st *s = sroce_sendq_at(&q, q.fetched++);

			sroce_wqe_st_init(s, w.len, w.kind);
			s->state = w.state;
			s->psn_valid = w.psns;
			s->first_psn = w.first;
			s->last_psn = w.last;
			s->resid = w.resid;
		}
	}
	sroce_wqe_st &at(uint32_t i) { return *sroce_sendq_at(&q, q.acked + i); }
};

constexpr auto POSTED = SROCE_WQE_POSTED;
constexpr auto SENT = SROCE_WQE_SENT;
constexpr auto DONE = SROCE_WQE_DONE;
constexpr auto DATA = SROCE_WQEK_DATA;
constexpr auto READ = SROCE_WQEK_READ;
constexpr auto ATOMIC = SROCE_WQEK_ATOMIC;
constexpr auto LOCAL = SROCE_WQEK_LOCAL;

// A SEND or WRITE goes out an MTU at a time, the last packet carrying the
// rest; an empty message is one packet. A READ is one request packet
// without payload for all of its responses' PSNs; an atomic takes one PSN.
TEST(SendqPos, MessagesAreCutIntoMtuPackets)
{
	struct {
		sroce_wqe_kind kind;
		uint32_t len, off;
		uint32_t plen, npsn;
		bool first, last;
	} cases[] = {
		{DATA, 2500, 0, 1024, 3, true, false},
		{DATA, 2500, 1024, 1024, 3, false, false},
		{DATA, 2500, 2048, 452, 3, false, true},
		{DATA, 1024, 0, 1024, 1, true, true},
		{DATA, 2048, 1024, 1024, 2, false, true},
		{DATA, 0, 0, 0, 1, true, true},
		{READ, 2500, 0, 0, 3, true, true},
		{READ, 2500, 2048, 0, 3, false, true},	// resumed: the rest
		{READ, 0, 0, 0, 1, true, true},
		{ATOMIC, 8, 0, 0, 1, true, true},
	};
	for (const auto &c : cases) {
		sroce_wqe_st st;

		sroce_wqe_st_init(&st, c.len, c.kind);
		sroce_send_pos p = sroce_send_pos_at(&st, c.off, kMtu);
		SCOPED_TRACE(testing::Message() << "kind " << c.kind << " len "
						<< c.len << " off " << c.off);
		EXPECT_EQ(p.off, c.off);
		EXPECT_EQ(p.plen, c.plen);
		EXPECT_EQ(p.npsn, c.npsn);
		EXPECT_EQ(p.first, c.first);
		EXPECT_EQ(p.last, c.last);
	}
}

// A READ resumed at its first missing response asks for the rest only:
// the RETH's address and length move with it (C9-106).
TEST(SendqPos, ResumedReadAsksForTheRest)
{
	u64 va;
	u32 len;

	sroce_read_rereq(0x10000, 5000, 0, &va, &len);
	EXPECT_EQ(va, 0x10000u);
	EXPECT_EQ(len, 5000u);
	sroce_read_rereq(0x10000, 5000, 3 * kMtu, &va, &len);
	EXPECT_EQ(va, 0x10000u + 3 * kMtu);
	EXPECT_EQ(len, 5000u - 3 * kMtu);
}

// An ACK completes the SENDs and WRITEs whose last PSN it covers, in
// order, and stops at the first it does not wholly cover.
TEST(SendqAck, CompletesWhatItWhollyCovers)
{
	struct {
		uint32_t next;		// acknowledges everything before
		int done;		// WQEs now done
		uint32_t covers;	// returned
	} cases[] = {
		{10, 0, 10},	// nothing yet
		{12, 0, 12},	// part of the first message
		{13, 1, 13},	// all of the first
		{14, 2, 14},	// and the second
		{17, 3, 17},
	};
	for (const auto &c : cases) {
		Ring r(5, {{DATA, 3000, 10, 12, true, SENT},
			   {DATA, 100, 13, 13, true, SENT},
			   {DATA, 3000, 14, 16, true, SENT}});

		SCOPED_TRACE(testing::Message() << "next " << c.next);
		EXPECT_EQ(sroce_sendq_ack(&r.q, c.next), c.covers);
		for (int i = 0; i < 3; i++) {
			EXPECT_EQ(r.at(i).state, i < c.done ? DONE : SENT);
			if (i < c.done) {
				EXPECT_EQ(r.at(i).status, SROCE_WC_SUCCESS);
			}
		}
	}
}

// A READ or atomic completes with its response only. An ACK past it means
// its response was lost (C9-150): the ACK covers only what is before it,
// and what follows it waits, acknowledged or not.
TEST(SendqAck, AnAckPastAReadOrAtomicStopsAtIt)
{
	for (auto kind : {READ, ATOMIC}) {
		Ring r(0, {{DATA, 100, 20, 20, true, SENT},
			   {kind, 8, 21, 21, true, SENT},
			   {DATA, 100, 22, 22, true, SENT}});

		EXPECT_EQ(sroce_sendq_ack(&r.q, 23), 21u);
		EXPECT_EQ(r.at(0).state, DONE);
		EXPECT_EQ(r.at(1).state, SENT);
		EXPECT_EQ(r.at(2).state, SENT);
	}
	// Not past it: the READ waits for its responses, and nothing is lost.
	Ring r(0, {{DATA, 100, 20, 20, true, SENT},
		   {READ, 3000, 21, 23, true, SENT}});
	EXPECT_EQ(sroce_sendq_ack(&r.q, 21), 21u);
	EXPECT_EQ(r.at(1).state, SENT);
}

// Done WQEs not yet retired (a READ whose data came, one that failed) are
// passed over as they are; one that never started stops the walk (the ACK
// cannot be for it).
TEST(SendqAck, SkipsDoneAndStopsAtUnsent)
{
	Ring r(0, {{READ, 1000, 30, 30, true, DONE},
		   {DATA, 100, 31, 31, true, SENT},
		   {DATA, 100, 0, 0, false, POSTED}});

	r.at(0).status = SROCE_WC_REM_ACCESS_ERR;
	EXPECT_EQ(sroce_sendq_ack(&r.q, 40), 40u);
	EXPECT_EQ(r.at(0).status, SROCE_WC_REM_ACCESS_ERR);
	EXPECT_EQ(r.at(1).state, DONE);
	EXPECT_EQ(r.at(2).state, POSTED);
}

// PSNs are 24 bits: a message across the wrap completes like any other.
TEST(SendqAck, AcrossThePsnWrap)
{
	Ring r(0, {{DATA, 3000, 0xfffffe, 0x000000, true, SENT},
		   {DATA, 100, 0x000001, 0x000001, true, SENT}});

	EXPECT_EQ(sroce_sendq_ack(&r.q, 0x000000), 0u);
	EXPECT_EQ(r.at(0).state, SENT);
	EXPECT_EQ(sroce_sendq_ack(&r.q, 0x000001), 1u);
	EXPECT_EQ(r.at(0).state, DONE);
	EXPECT_EQ(r.at(1).state, SENT);
}

// Going back to the oldest unacknowledged PSN: done WQEs are skipped (and
// stay done: a local WQE ran once); the first WQE left resumes at that
// PSN's packet if it started (a SEND or WRITE mid-message), every later one
// starts over.
TEST(SendqRewind, ResumesAtTheOldestUnacknowledgedPacket)
{
	struct {
		const char *rule;
		uint32_t oldest;
		uint32_t cur, psn, offset;	// relative cur
	} cases[] = {
		{"mid-message: at the lost packet", 12, 1, 12, 2 * kMtu},
		{"at its first PSN: from the start", 10, 1, 10, 0},
	};
	for (const auto &c : cases) {
		Ring r(3, {{DATA, 100, 9, 9, true, DONE},
			   {DATA, 5000, 10, 14, true, SENT},
			   {DATA, 100, 15, 15, true, SENT},
			   {DATA, 100, 0, 0, false, POSTED},
			   {LOCAL, 0, 0, 0, false, DONE}});
		SCOPED_TRACE(c.rule);
		sroce_sendq_resume res = sroce_sendq_rewind(&r.q, c.oldest, kMtu);

		EXPECT_EQ(res.cur, 3 + c.cur);
		EXPECT_EQ(res.psn, c.psn);
		EXPECT_EQ(res.offset, c.offset);
		EXPECT_EQ(r.at(0).state, DONE);
		EXPECT_EQ(r.at(1).state, POSTED);
		EXPECT_TRUE(r.at(1).psn_valid);	// its PSNs never change
		EXPECT_EQ(r.at(2).state, POSTED);
		EXPECT_EQ(r.at(2).first_psn, 15u);
		EXPECT_EQ(r.at(3).state, POSTED);
		EXPECT_EQ(r.at(4).state, DONE);	// a local WQE ran once
	}
}

// A READ of which whole MTUs arrived asks for the rest, from its first
// missing response (C9-106); a READ with nothing in yet starts over whole,
// whatever the oldest PSN inside it (an ACK never covers part of a READ:
// here, one named a PSN inside it); so does an atomic.
TEST(SendqRewind, ReadResumesAtItsFirstMissingResponse)
{
	Ring read(0, {{READ, 4096, 50, 53, true, SENT, 4096 - 2 * kMtu}});
	sroce_sendq_resume r = sroce_sendq_rewind(&read.q, 50, kMtu);

	EXPECT_EQ(r.psn, 52u);
	EXPECT_EQ(r.offset, 2 * kMtu);

	for (uint32_t oldest : {50u, 52u}) {
		Ring none(0, {{READ, 4096, 50, 53, true, SENT, 4096}});

		r = sroce_sendq_rewind(&none.q, oldest, kMtu);
		EXPECT_EQ(r.psn, 50u);
		EXPECT_EQ(r.offset, 0u);
	}

	Ring atomic(0, {{ATOMIC, 8, 60, 60, true, SENT}});
	r = sroce_sendq_rewind(&atomic.q, 60, kMtu);
	EXPECT_EQ(r.psn, 60u);
	EXPECT_EQ(r.offset, 0u);
}

// Nothing started: the requester goes on at the oldest PSN with the first
// WQE not done; all done: nothing left to send.
TEST(SendqRewind, NothingStartedOrAllDone)
{
	Ring fresh(0, {{DATA, 100, 0, 0, false, POSTED}});
	sroce_sendq_resume r = sroce_sendq_rewind(&fresh.q, 70, kMtu);

	EXPECT_EQ(r.cur, 0u);
	EXPECT_EQ(r.psn, 70u);
	EXPECT_EQ(r.offset, 0u);

	Ring done(4, {{DATA, 100, 69, 69, true, DONE}});
	r = sroce_sendq_rewind(&done.q, 70, kMtu);
	EXPECT_EQ(r.cur, 5u);
	EXPECT_EQ(r.psn, 70u);
}

// SQD is drained only when nothing that started is still outstanding,
// though a rewind put the requester back as if nothing were sent.
TEST(SendqRewind, StartedAndNotDoneIsOutstanding)
{
	Ring r(0, {{DATA, 100, 1, 1, true, DONE},
		   {DATA, 100, 2, 2, true, SENT}});

	EXPECT_TRUE(sroce_sendq_outstanding(&r.q));
	sroce_sendq_rewind(&r.q, 2, kMtu);
	EXPECT_TRUE(sroce_sendq_outstanding(&r.q));
	sroce_sendq_ack(&r.q, 3);
	EXPECT_FALSE(sroce_sendq_outstanding(&r.q));
	Ring unsent(0, {{DATA, 100, 0, 0, false, POSTED}});
	EXPECT_FALSE(sroce_sendq_outstanding(&unsent.q));
}

// ---------------------------------------------------------------------
// The model: a requester built from these rules and the completer's
// (sroce_completer.h, sroce_gbn.h), a responder built from the
// responder's (sroce_responder.h), and a link between them.

struct Pkt {
	bool resp;		// a response (ACK, NAK, atomic ACK)
	uint32_t psn;
	// request
	uint32_t wqe, off, plen;
	bool last, ack_req;
	sroce_wqe_kind kind;
	// response
	uint8_t syndrome;
	bool atomic_ack;
};

struct Link {
	std::deque<Pkt> q;
	double loss, dup, reorder;
	size_t reach;	// places a reordered packet overtakes, at most

	void put(std::mt19937 &rng, const Pkt &p)
	{
		std::uniform_real_distribution<double> u(0, 1);

		if (u(rng) < loss)
			return;
		q.push_back(p);
		if (u(rng) < dup)
			q.push_back(p);
	}
	bool take(std::mt19937 &rng, Pkt *p)
	{
		std::uniform_real_distribution<double> u(0, 1);
		size_t i = 0;

		if (q.empty())
			return false;
		// Jitter: a packet overtakes up to @reach before it.
		if (u(rng) < reorder)
			i = std::uniform_int_distribution<size_t>(
				0, std::min<size_t>(reach, q.size() - 1))(rng);
		*p = q[i];
		q.erase(q.begin() + (long)i);
		return true;
	}
};

struct Responder {
	uint32_t epsn;
	bool nak_sent = false;
	bool newest_rd = false;
	std::vector<std::pair<uint32_t, uint32_t>> got;	// (wqe, off), in order
	std::vector<int> atomics;			// executions per WQE

	void rcv(std::mt19937 &rng, Link &back, const Pkt &p)
	{
		sroce_psn_class c = sroce_resp_classify(p.psn, epsn);
		bool gap_end = sroce_resp_gap_ends(c, nak_sent);
		Pkt r = {};

		r.resp = true;
		r.syndrome = sroce_aeth_ack(0);
		if (sroce_resp_gap_nak(c, &nak_sent)) {
			r.psn = epsn;
			r.syndrome = sroce_aeth_nak(SROCE_NAK_PSN_SEQ_ERR);
			back.put(rng, r);
			return;
		}
		if (c == SROCE_PSN_AHEAD)
			return;
		if (c == SROCE_PSN_DUPLICATE) {
			// An atomic's result is replayed, never executed again.
			if (p.kind == ATOMIC) {
				r.psn = p.psn;
				r.atomic_ack = true;
				back.put(rng, r);
			} else if (sroce_resp_dup_ack(p.ack_req, newest_rd, p.psn,
						      epsn, &r.psn)) {
				back.put(rng, r);
			}
			return;
		}
		got.emplace_back(p.wqe, p.off);
		epsn = sroce_psn_add(epsn, 1);
		newest_rd = p.kind == ATOMIC;
		r.psn = p.psn;
		if (p.kind == ATOMIC) {
			atomics.at(p.wqe)++;
			r.atomic_ack = true;
			back.put(rng, r);
		} else if (p.ack_req || gap_end) {
			back.put(rng, r);
		}
	}
};

struct Requester {
	std::vector<sroce_wqe_st> ring;
	std::vector<std::pair<sroce_wqe_kind, uint32_t>> posted;
	sroce_sendq q;
	uint32_t base;
	uint32_t cur, psn, offset = 0, oldest, sent_hi;
	uint32_t window = 16;
	bool nak_rewound = false;
	uint32_t nak_psn = 0;
	std::vector<uint32_t> completed;
	unsigned rewinds = 0;

	// A ring of 32 slots, from index @base: the WQEs are fetched as
	// retiring makes room, so the ring wraps many times.
	Requester(uint32_t isn, uint32_t first_idx,
		  const std::vector<std::pair<sroce_wqe_kind, uint32_t>> &wqes)
		: ring(32), posted(wqes), q{ring.data(), 31, first_idx, first_idx},
		  base(first_idx), cur(first_idx), psn(isn), oldest(isn),
		  sent_hi(isn)
	{
		fetch();
	}
	// What was posted, as far as the ring has room.
	void fetch()
	{
		while (q.fetched - q.acked < ring.size() &&
		       q.fetched - base < posted.size()) {
			const auto &w = posted[q.fetched - base];

			sroce_wqe_st_init(sroce_sendq_at(&q, q.fetched++),
					  w.second, w.first);
		}
	}
	void rewind()
	{
		sroce_sendq_resume r = sroce_sendq_rewind(&q, oldest, kMtu);

		cur = r.cur;
		psn = r.psn;
		offset = r.offset;
		rewinds++;
	}
	void progress(uint32_t next)
	{
		oldest = next;
		nak_rewound = false;
	}
	// The completer's sroce_comp_ack_upto().
	bool ack_upto(uint32_t p, bool inclusive)
	{
		uint32_t next = sroce_ack_next(p, inclusive);

		if (!sroce_ack_valid(next, oldest, sent_hi, inclusive))
			return false;
		next = sroce_sendq_ack(&q, next);
		if (sroce_psn_after(next, oldest)) {
			progress(next);
			if (sroce_psn_after(next, psn))
				rewind();
		}
		return true;
	}
	void retire()
	{
		while (q.acked != q.fetched &&
		       sroce_sendq_at(&q, q.acked)->state == SROCE_WQE_DONE) {
			ASSERT_EQ(sroce_sendq_at(&q, q.acked)->status,
				  SROCE_WC_SUCCESS);
			completed.push_back(q.acked++ - base);
		}
		fetch();
		if ((int32_t)(q.acked - cur) > 0) {
			cur = q.acked;
			offset = 0;
		}
	}
	void rcv(const Pkt &p)
	{
		if (p.atomic_ack) {
			uint32_t idx;

			for (idx = q.acked; idx != q.fetched; idx++)
				if (sroce_sendq_at(&q, idx)->state != SROCE_WQE_DONE)
					break;
			sroce_wqe_st *st = sroce_sendq_at(&q, idx);
			if (idx == q.fetched || st->state != SROCE_WQE_SENT ||
			    st->kind != ATOMIC || p.psn != st->first_psn)
				return;
			ack_upto(st->first_psn, false);
			st->state = SROCE_WQE_DONE;
			st->status = SROCE_WC_SUCCESS;
			progress(sroce_psn_add(st->first_psn, 1));
		} else {
			sroce_ack_fate fate = sroce_ack_classify(p.syndrome);

			if (!ack_upto(p.psn, fate == SROCE_ACK_PROGRESS))
				return;
			if (fate == SROCE_ACK_PROGRESS &&
			    sroce_ack_implies_nak(p.psn, oldest))
				rewind();
			if (fate == SROCE_ACK_SEQ &&
			    !sroce_nak_repeats(nak_rewound, nak_psn, oldest)) {
				nak_rewound = true;
				nak_psn = oldest;
				rewind();
			}
		}
		retire();
	}
	// The requester's sroce_req_one(): one packet, if it may.
	bool send(std::mt19937 &rng, Link &out)
	{
		while (cur != q.fetched &&
		       sroce_sendq_at(&q, cur)->state == SROCE_WQE_DONE)
			cur++;
		if (cur == q.fetched ||
		    sroce_gbn_window_full(psn, oldest, window))
			return false;
		sroce_wqe_st *st = sroce_sendq_at(&q, cur);
		sroce_send_pos pos = sroce_send_pos_at(st, offset, kMtu);
		Pkt p = {};

		if (pos.first) {
			st->psn_valid = 1;
			st->first_psn = psn;
			st->last_psn = sroce_psn_add(psn, pos.npsn - 1);
			st->resid = st->len;
		}
		p.psn = psn;
		p.wqe = cur - base;
		p.off = offset;
		p.plen = pos.plen;
		p.last = pos.last;
		p.kind = (sroce_wqe_kind)st->kind;
		p.ack_req = sroce_gbn_ack_req(psn, st->first_psn, oldest, window,
					      SROCE_ACKREQ_EVERY, pos.last);
		if (pos.last) {
			psn = sroce_psn_add(st->first_psn, pos.npsn);
			offset = 0;
			cur++;
			st->state = SROCE_WQE_SENT;
		} else {
			psn = sroce_psn_add(psn, 1);
			offset += pos.plen;
		}
		if (sroce_psn_after(psn, sent_hi))
			sent_hi = psn;
		out.put(rng, p);
		return true;
	}
	bool idle() const { return completed.size() == posted.size(); }
};

struct ModelCase {
	const char *name;
	double loss, dup, reorder;
	size_t reach;	// places a reordered packet overtakes, at most
};

// Whatever the link does, go-back-N delivers every message exactly once
// and in order (each packet of it, each atomic executed once), and every
// WQE completes successfully in posting order. An ACK timeout (here: both
// directions quiet while work is outstanding) rewinds to the oldest
// unacknowledged PSN.
TEST(SendqModel, EveryMessageOnceInOrderWhateverTheLinkDoes)
{
	const ModelCase cases[] = {
		{"lossless", 0, 0, 0, 3},
		{"loss 5%", 0.05, 0, 0, 3},
		{"duplicates 5%", 0, 0.05, 0, 3},
		{"jitter 30%", 0, 0, 0.3, 3},
		{"loss 2%, duplicates 2%, jitter 30%", 0.02, 0.02, 0.3, 3},
		{"loss 20%, jitter 50%", 0.2, 0, 0.5, 3},
		{"jitter 90%, 12 places", 0, 0, 0.9, 12},
		{"loss 1%, jitter 90%, 12 places", 0.01, 0, 0.9, 12},
		{"loss 10%", 0.1, 0, 0, 3},
	};
	for (const auto &c : cases) {
		for (uint32_t seed = 1; seed <= 20; seed++) {
			std::mt19937 rng(seed);
			std::vector<std::pair<sroce_wqe_kind, uint32_t>> wqes;
			const uint32_t isn = 0xffff00 + seed;

			for (int i = 0; i < 200; i++) {
				if (rng() % 6 == 0)
					wqes.emplace_back(ATOMIC, 8);
				else
					wqes.emplace_back(DATA, rng() % 5000);
			}
			// Ring indices near the wrap of a u32, too.
			Requester req(isn, seed * 0x0fffffffu, wqes);
			Responder resp{isn, false, false, {}, {}};
			Link fwd{{}, c.loss, c.dup, c.reorder, c.reach};
			Link back{{}, c.loss, c.dup, c.reorder, c.reach};
			unsigned steps = 0, timeouts = 0;
			Pkt p;

			SCOPED_TRACE(testing::Message() << c.name << ", seed "
							<< seed);
			resp.atomics.resize(wqes.size());
			while (!req.idle() && steps++ < 2000000) {
				switch (rng() % 3) {
				case 0:
					req.send(rng, fwd);
					break;
				case 1:
					if (fwd.take(rng, &p))
						resp.rcv(rng, back, p);
					break;
				default:
					if (back.take(rng, &p))
						req.rcv(p);
					break;
				}
				if (fwd.q.empty() && back.q.empty() &&
				    !req.send(rng, fwd) && !req.idle()) {
					timeouts++;
					req.rewind();
				}
			}
			ASSERT_TRUE(req.idle()) << req.completed.size()
						<< " of " << wqes.size()
						<< " completed";
			for (uint32_t i = 0; i < wqes.size(); i++)
				ASSERT_EQ(req.completed[i], i);
			// The responder took each packet of each message once,
			// in order.
			size_t k = 0;

			for (uint32_t i = 0; i < wqes.size(); i++) {
				uint32_t npkt = wqes[i].first == ATOMIC ? 1 :
						sroce_msg_pkts(wqes[i].second, kMtu);

				for (uint32_t n = 0; n < npkt; n++, k++) {
					ASSERT_LT(k, resp.got.size());
					ASSERT_EQ(resp.got[k].first, i);
					ASSERT_EQ(resp.got[k].second,
						  wqes[i].first == ATOMIC ? 0 : n * kMtu);
				}
				if (wqes[i].first == ATOMIC) {
					ASSERT_EQ(resp.atomics[i], 1);
				}
			}
			ASSERT_EQ(k, resp.got.size());
			// A perfect link needs no going back at all.
			if (c.loss == 0 && c.dup == 0 && c.reorder == 0) {
				EXPECT_EQ(req.rewinds, 0u);
				EXPECT_EQ(timeouts, 0u);
			}
		}
	}
}

} // namespace
