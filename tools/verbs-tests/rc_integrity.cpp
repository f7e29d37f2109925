// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// rc_integrity: one process, two RC QPs connected to each other (on two
// devices, or twice the same device), random traffic in both directions, and
// every byte and every completion checked.
//
// Memory model. Each side has one registered buffer cut into slots. A free
// slot always holds its "resting" stream (a pattern unique to the side, the
// slot and the byte position). An operation takes a slot on the requester
// (the local SGEs) and one on the responder (receive SGEs, RDMA target or
// source, atomic target), writes its message stream (unique to the seed and
// the operation) where the data comes from, and posts. Once the operation is
// complete, every byte of both slots around the touched range (plus guard
// bytes) must be either the message (where it belongs) or resting (everywhere
// else); then the message bytes are put back to resting and the slots are
// free again. Now and then, and at the end, whole slots are checked.
//
// Operations are generated from (seed, operation number) alone, so a seed
// reproduces the same sequence of work requests.
//
// SEND_WITH_INV invalidates a type 2 memory window of the responder: each
// side keeps a pool of windows bound (IBV_WR_BIND_MW on its own QP) to its
// buffer; a SEND_INV takes one, its receive completion must carry
// IBV_WC_WITH_INV and that R_Key, and the window is bound again later - which
// fails (MW_BIND_ERR) unless the invalidation really freed it.
//
// --sqd: each QP in turn is moved RTS -> SQD (asking for the SQ_DRAINED
// event) while it has work requests outstanding; once the event came, no
// send completion may arrive for it (nothing new starts in SQD), its ACK
// timeout and retry count are changed SQD -> SQD (and read back), and it goes
// back to RTS; the work requests left and new ones complete and are checked
// as all others, and at least one must complete after the cycle.
//
// --tap: one TAP line per operation kind and direction ("ok - SEND A->B # N
// verified"), per SQD cycle, and "not ok" with the reason for what failed,
// for the selftests to report as sub-cases (--tap-names renames A and B).

#include "common.h"
#include "pattern.h"

#include <endian.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstring>
#include <deque>
#include <map>
#include <random>

using namespace vt;

namespace {

enum Kind { K_SEND, K_SEND_IMM, K_WRITE, K_WRITE_IMM, K_READ, K_CAS, K_FADD, K_SEND_INV, K_NKINDS };
const char *const kind_name[K_NKINDS] = {"SEND", "SEND_IMM", "WRITE",     "WRITE_IMM",
					 "READ", "CMP_SWAP", "FETCH_ADD", "SEND_INV"};

bool is_send_kind(Kind k) { return k == K_SEND || k == K_SEND_IMM || k == K_SEND_INV; }

// What --tap reports when a check fails (set by fail_op, printed by main).
struct TapFailure {
	bool tap = false;
	std::string names[2] = {"A", "B"};
	std::string what, why;
} g_tap;

struct Options : CommonOptions {
	uint64_t iters = 1000;
	uint64_t seed = 0;
	bool seed_given = false;
	size_t max_size = 1 << 20;
	unsigned depth = 8;
	unsigned timeout = 60;             // seconds without progress
	size_t mem = 256u << 20;           // per side, for the slots
	unsigned kinds = (1u << K_NKINDS) - 1;
	unsigned max_sge = 16;
	unsigned signal_pct = 60;
	unsigned ack_timeout = 14; // IBTA encoding: 4.096 us * 2^N
	bool sqd = false;
	bool hop_cpus = false; // post each WR from the next CPU
	bool tap = false;
	int rxe_side = -1; // --rxe-side a|b: that side is an rdma_rxe device
	int verbose = 0;
};

constexpr size_t kGuard = 256;    // checked bytes either side of a range
constexpr size_t kJitter = 4096;  // random start offset within a slot
constexpr size_t kMaxGap = 64;    // random gap between SGEs
constexpr size_t kAux = 4096;     // per-slot area for WRITE_WITH_IMM's receive SGEs


// --hop-cpus: move this thread to the next CPU it was allowed at the start.
void hop_cpu()
{
	static cpu_set_t allowed;
	static bool known = false;
	static int next = 0;

	if (!known && sched_getaffinity(0, sizeof(allowed), &allowed))
		throw_errno("sched_getaffinity", errno);
	known = true;
	for (int i = 0; i < CPU_SETSIZE; i++) {
		int c = (next + i) % CPU_SETSIZE;
		if (!CPU_ISSET(c, &allowed))
			continue;
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			throw_errno(strf("sched_setaffinity(CPU %d)", c), errno);
		next = c + 1;
		return;
	}
}

// After the operation, slot bytes [lo, hi) must be the pieces / resting.
struct Check {
	int side, slot;
	size_t lo, hi;
	std::vector<Piece> pieces;
	const char *what;
};

struct Op {
	uint64_t id;
	int dir; // 0: A requests from B, 1: B from A
	Kind kind;
	size_t len = 0;
	bool signaled = true, inlined = false, flush = false, has_recv = false;
	bool send_done = false, recv_done = false;
	uint32_t imm = 0; // big endian, as in the WR
	int lslot = -1, rslot = -1;
	uint64_t tag = 0;
	std::vector<Piece> lpieces, rpieces; // SGE layout on requester / responder
	size_t recv_cap = 0;
	std::vector<Piece> recv_pieces; // receive SGEs (SEND: data; WRITE_IMM: must stay untouched)
	uint64_t roff = 0;
	uint64_t atom_orig = 0, atom_arg = 0, atom_swap = 0, atom_new = 0;
	size_t atom_loff = 0;
	int mw = -1;           // SEND_INV: the responder's window it invalidates
	uint32_t inv_rkey = 0;
	std::vector<Check> checks;
};

// A type 2 memory window of one side, for SEND_WITH_INV.
struct Window {
	ibv_mw *mw = nullptr;
	uint32_t rkey = 0; // while bound
	bool bound = false, in_use = false;
};

struct Side {
	Endpoint *ep;
	Buffer buf;
	MrPtr mr;
	size_t nslots = 0;
	std::vector<bool> busy;
	uint64_t next_slot = 0;
	uint64_t rest_tag(size_t slot) const { return mix64(0x5eed0000ULL ^ (slot * 0x10001ULL) ^ salt); }
	uint64_t salt = 0;
	uint8_t *slot_ptr(size_t slot) const { return buf.data() + slot * slot_size; }
	size_t slot_size = 0;
	std::vector<Window> mws;
	~Side()
	{
		for (auto &w : mws)
			if (w.mw && ibv_dealloc_mw(w.mw))
				std::fprintf(stderr, "warning: ibv_dealloc_mw failed: %m\n");
	}
};

// The SQD cycle of one QP (--sqd).
struct SqdCycle {
	enum { IDLE, DRAINING, DRAINED, DONE } state = IDLE;
	uint64_t at_op = 0;       // starts once this many operations were made
	size_t outstanding = 0;   // send WRs outstanding when it went to SQD
	uint64_t done_before = 0; // its operations verified before RTS
	uint64_t done_after = 0;  // and after
	Clock::time_point t0;
	uint8_t timeout_was = 0, retry_was = 0;
};

class Test {
public:
	explicit Test(const Options &o) : opt_(o) {}
	int run();

private:
	Options opt_;
	std::unique_ptr<Endpoint> ep_[2];
	Side side_[2];
	size_t data_area_ = 0; // per slot, before the aux area
	size_t max_len_ = 0;
	std::map<uint64_t, std::unique_ptr<Op>> ops_;
	std::deque<Op *> sq_[2];  // per direction: posted, send not complete
	std::deque<Op *> rq_[2];  // per direction: receives posted, not complete
	unsigned sq_used_[2] = {};
	uint64_t count_[K_NKINDS] = {}, inlined_ = 0, unsignaled_ = 0, flushes_ = 0;
	uint64_t verified_[2][K_NKINDS] = {}; // per direction and kind
	uint64_t binds_ = 0;
	uint64_t rxe_inv_flag_ = 0; // rxe's invalidations flagged with the kernel's bit
	SqdCycle sqd_[2];
	uint64_t bytes_verified_ = 0, msg_bytes_ = 0, full_scans_ = 0;
	uint64_t send_cqes_ = 0, recv_cqes_ = 0;
	bool failed_ = false;
	CqWaiter waiter_;

	[[noreturn]] void fail_op(const Op *op, const std::string &msg);
	std::unique_ptr<Op> make_op(uint64_t id);
	std::unique_ptr<Op> make_flush(uint64_t id, int dir);
	bool can_post(const Op &op) const;
	void post(Op &op);
	void handle_send_wc(int dir, const ibv_wc &wc);
	void handle_recv_wc(int dir, const ibv_wc &wc);
	void maybe_retire(Op *op);
	void verify(Op &op);
	void full_scan(int side, int slot, const char *when);
	size_t pick_size(Rng &r, bool zero_ok, size_t limit);
	std::vector<Piece> layout(Rng &r, size_t len, size_t max_sge, size_t cap, size_t base,
				  size_t *end);
	std::string describe(const Op &op) const;
	void setup();
	void drain_extra();
	void bind_windows(int side);
	void sqd_step(int dir);
	void sqd_start(int dir);
	bool sqd_holds(int dir) const
	{
		return sqd_[dir].state == SqdCycle::DRAINING || sqd_[dir].state == SqdCycle::DRAINED;
	}
	std::string dir_name(int dir) const { return g_tap.names[dir] + "->" + g_tap.names[!dir]; }
};

std::string Test::describe(const Op &op) const
{
	std::string s = strf("op %" PRIu64 " %s %s len %zu %s%s%s", op.id, op.dir ? "B->A" : "A->B",
			     op.flush ? "FLUSH(WRITE)" : kind_name[op.kind], op.len,
			     op.signaled ? "signaled" : "unsignaled", op.inlined ? " inline" : "",
			     op.has_recv ? strf(" recv_cap %zu", op.recv_cap).c_str() : "");
	s += strf(" lslot %d rslot %d", op.lslot, op.rslot);
	s += pieces_str(" lsge", op.lpieces);
	s += pieces_str(" rsge", op.recv_pieces);
	if (op.kind == K_WRITE || op.kind == K_WRITE_IMM || op.kind == K_READ || op.kind == K_CAS ||
	    op.kind == K_FADD)
		s += strf(" roff %" PRIu64, op.roff);
	if (op.kind == K_CAS || op.kind == K_FADD)
		s += strf(" orig 0x%" PRIx64 " arg 0x%" PRIx64 " swap 0x%" PRIx64, op.atom_orig,
			  op.atom_arg, op.atom_swap);
	if (op.kind == K_SEND_INV)
		s += strf(" window %d rkey 0x%x", op.mw, op.inv_rkey);
	return s;
}

void Test::fail_op(const Op *op, const std::string &msg)
{
	std::fprintf(stderr, "FAIL (seed %" PRIu64 "): %s\n", opt_.seed, msg.c_str());
	if (op)
		std::fprintf(stderr, "  %s\n", describe(*op).c_str());
	if (op && !op->flush)
		g_tap.what = strf("%s %s", kind_name[op->kind], dir_name(op->dir).c_str());
	else
		g_tap.what = "rc_integrity";
	g_tap.why = msg;
	std::fprintf(stderr, "  outstanding: A->B sq %zu rq %zu, B->A sq %zu rq %zu, ops %zu\n",
		     sq_[0].size(), rq_[0].size(), sq_[1].size(), rq_[1].size(), ops_.size());
	throw Error("verification failed");
}

size_t Test::pick_size(Rng &r, bool zero_ok, size_t limit)
{
	unsigned x = static_cast<unsigned>(r.range(0, 99));
	if (zero_ok && x < 3)
		return 0;
	if (x < 15) {
		size_t mtu = 128u << ep_[0]->pattr.active_mtu; // not the path MTU, close enough
		size_t inl = ep_[0]->cap.max_inline_data;
		const size_t edges[] = {1, 2, 7, 8, 9, mtu - 1, mtu, mtu + 1, 2 * mtu, 2 * mtu + 1,
					inl, inl + 1, 4095, 4096, 4097, limit - 1, limit};
		size_t v = edges[r.range(0, std::size(edges) - 1)];
		return std::clamp<size_t>(v, 1, limit);
	}
	// log-uniform
	unsigned maxbit = 63 - __builtin_clzll(std::max<size_t>(limit, 1));
	unsigned b = static_cast<unsigned>(r.range(0, maxbit));
	size_t lo = size_t{1} << b, hi = std::min(limit, (size_t{2} << b) - 1);
	return r.range(lo, hi);
}

// Cut len bytes into 1..max_sge pieces (each >= 1 byte) laid out from base
// with random gaps; cap >= len is the total the pieces may hold (the last
// piece gets the slack). Zero length: no pieces.
std::vector<Piece> Test::layout(Rng &r, size_t /*len*/, size_t max_sge, size_t cap, size_t base,
				size_t *end)
{
	// Cuts near the message edges and small pieces are the interesting ones.
	return random_pieces(r, cap, max_sge, base, end, {30, 50, 16, kMaxGap});
}

std::unique_ptr<Op> Test::make_flush(uint64_t id, int dir)
{
	auto op = std::make_unique<Op>();
	op->id = id;
	op->dir = dir;
	op->kind = K_WRITE;
	op->flush = true;
	op->signaled = true;
	return op;
}

std::unique_ptr<Op> Test::make_op(uint64_t id)
{
	Rng r(mix64(opt_.seed * 0x9e3779b97f4a7c15ULL + id));
	auto op = std::make_unique<Op>();
	op->id = id;
	op->dir = static_cast<int>(r.range(0, 1));
	std::vector<Kind> allowed;
	for (int k = 0; k < K_NKINDS; k++)
		if (opt_.kinds & (1u << k))
			allowed.push_back(static_cast<Kind>(k));
	op->kind = allowed[r.range(0, allowed.size() - 1)];
	op->signaled = r.chance(opt_.signal_pct);
	op->tag = mix64(opt_.seed ^ (id * 0xa0761d6478bd642fULL) ^ 0x6d657373616765ULL);
	const Endpoint &req = *ep_[op->dir], &resp = *ep_[!op->dir];
	int ls = static_cast<int>(side_[op->dir].next_slot++ % side_[op->dir].nslots);
	int rs = static_cast<int>(side_[!op->dir].next_slot++ % side_[!op->dir].nslots);
	op->lslot = ls;
	op->rslot = rs;
	size_t base_l = kGuard + r.range(0, kJitter - 1);
	size_t base_r = kGuard + r.range(0, kJitter - 1);
	size_t lend = 0, rend = 0;
	auto local_window = [&](const char *what, std::vector<Piece> pieces) {
		Check c{op->dir, ls, base_l - kGuard, std::min(lend + kGuard, data_area_), std::move(pieces),
			what};
		op->checks.push_back(std::move(c));
	};
	// Like local_window, on the responder's slot rs (base_r, rend).
	auto remote_window = [&](const char *what, std::vector<Piece> pieces) {
		op->checks.push_back({!op->dir, rs, base_r - kGuard, std::min(rend + kGuard, data_area_),
				      std::move(pieces), what});
	};
	// An RDMA WRITE's target or READ's source: op->len bytes at base_r.
	auto rdma_window = [&](const char *what) {
		op->roff = base_r;
		rend = base_r + op->len;
		std::vector<Piece> msg;
		if (op->len)
			msg.push_back({base_r, op->len, 0});
		remote_window(what, std::move(msg));
	};

	switch (op->kind) {
	case K_SEND:
	case K_SEND_IMM:
	case K_SEND_INV:
	case K_WRITE:
	case K_WRITE_IMM: {
		bool is_send = is_send_kind(op->kind);
		op->len = pick_size(r, true, max_len_);
		op->lpieces = layout(r, op->len, std::min(req.cap.max_send_sge, opt_.max_sge), op->len, base_l, &lend);
		op->inlined = op->len <= req.cap.max_inline_data && r.chance(50);
		if (op->kind == K_SEND_IMM || op->kind == K_WRITE_IMM)
			op->imm = static_cast<uint32_t>(r.next());
		if (is_send) {
			op->has_recv = true;
			op->recv_cap = op->len + (r.chance(50) ? r.range(1, kMaxGap) : 0);
			op->recv_pieces = layout(r, op->len, std::min(resp.cap.max_recv_sge, opt_.max_sge), op->recv_cap, base_r, &rend);
			// Only the first len bytes of the receive buffer get data.
			std::vector<Piece> data;
			for (auto p : op->recv_pieces) {
				if (p.msg_off >= op->len)
					continue;
				p.len = std::min<size_t>(p.len, op->len - p.msg_off);
				data.push_back(p);
			}
			remote_window("receive buffer", std::move(data));
		} else {
			rdma_window("RDMA write target");
			if (op->kind == K_WRITE_IMM) {
				op->has_recv = true;
				// Receive SGEs that a WRITE_WITH_IMM must leave alone.
				if (r.chance(60)) {
					size_t cap = r.range(1, kAux / 4), end;
					op->recv_cap = cap;
					op->recv_pieces = layout(r, cap, std::min(resp.cap.max_recv_sge, opt_.max_sge), cap,
								 data_area_ + r.range(0, kAux / 4), &end);
					op->checks.push_back({!op->dir, rs, data_area_, data_area_ + kAux, {},
							      "WRITE_WITH_IMM receive buffer"});
				}
			}
		}
		// Source bytes must be unchanged (inline: already restored).
		local_window("source buffer", op->inlined ? std::vector<Piece>{} : op->lpieces);
		break;
	}
	case K_READ: {
		op->len = pick_size(r, true, max_len_);
		op->lpieces = layout(r, op->len,
				     std::min<size_t>({req.cap.max_send_sge, opt_.max_sge,
						       static_cast<size_t>(std::max(req.dattr.max_sge_rd, 1))}),
				     op->len, base_l, &lend);
		rdma_window("RDMA read source");
		local_window("RDMA read sink", op->lpieces);
		break;
	}
	case K_CAS:
	case K_FADD: {
		op->len = 8;
		op->roff = (base_r + 7) & ~size_t{7};
		op->atom_loff = r.chance(50) ? (base_l + 7) & ~size_t{7} : base_l;
		op->atom_orig = r.chance(10) ? ~uint64_t{0} - r.range(0, 3) : r.next();
		if (op->kind == K_CAS) {
			op->atom_arg = r.chance(50) ? op->atom_orig : op->atom_orig ^ (uint64_t{1} << r.range(0, 63));
			op->atom_swap = r.next();
			op->atom_new = op->atom_arg == op->atom_orig ? op->atom_swap : op->atom_orig;
		} else {
			op->atom_arg = r.chance(20) ? r.range(1, 3) : r.next();
			op->atom_new = op->atom_orig + op->atom_arg;
		}
		Piece tp{op->roff, 8, 0, true, {}};
		std::memcpy(tp.lit, &op->atom_new, 8);
		op->checks.push_back({!op->dir, rs, op->roff - kGuard, op->roff + 8 + kGuard, {tp},
				      "atomic target"});
		Piece lp{op->atom_loff, 8, 0, true, {}};
		std::memcpy(lp.lit, &op->atom_orig, 8);
		op->lpieces = {lp};
		lend = op->atom_loff + 8;
		base_l = op->atom_loff;
		local_window("atomic result", {lp});
		break;
	}
	default:
		break;
	}
	return op;
}

bool Test::can_post(const Op &op) const
{
	if (sq_used_[op.dir] >= opt_.depth && !op.flush)
		return false;
	if (sq_used_[op.dir] >= ep_[op.dir]->cap.max_send_wr)
		return false;
	if (op.lslot >= 0 && side_[op.dir].busy[op.lslot])
		return false;
	if (op.rslot >= 0 && side_[!op.dir].busy[op.rslot])
		return false;
	if (op.has_recv && rq_[op.dir].size() >= ep_[!op.dir]->cap.max_recv_wr)
		return false;
	if (sqd_holds(op.dir))
		return false;
	if (op.kind == K_SEND_INV) {
		bool ready = false;
		for (auto &w : side_[!op.dir].mws)
			ready |= w.bound && !w.in_use;
		if (!ready)
			return false;
	}
	return true;
}

void Test::post(Op &op)
{
	Side &ls = side_[op.dir], &rs = side_[!op.dir];
	Endpoint &req = *ep_[op.dir], &resp = *ep_[!op.dir];
	uint8_t *lbase = op.lslot >= 0 ? ls.slot_ptr(op.lslot) : nullptr;
	uint8_t *rbase = op.rslot >= 0 ? rs.slot_ptr(op.rslot) : nullptr;
	if (op.lslot >= 0)
		ls.busy[op.lslot] = true;
	if (op.rslot >= 0)
		rs.busy[op.rslot] = true;

	// Enforce: the send queue never fills up with unsignaled WRs only.
	if (sq_used_[op.dir] + 1 >= opt_.depth)
		op.signaled = true;

	// Data where it comes from.
	switch (op.kind) {
	case K_SEND:
	case K_SEND_IMM:
	case K_SEND_INV:
	case K_WRITE:
	case K_WRITE_IMM:
		for (auto &p : op.lpieces)
			fill_stream(lbase + p.off, p.len, op.tag, p.msg_off);
		break;
	case K_READ:
		if (op.len)
			fill_stream(rbase + op.roff, op.len, op.tag, 0);
		break;
	case K_CAS:
	case K_FADD:
		std::memcpy(rbase + op.roff, &op.atom_orig, 8);
		break;
	default:
		break;
	}

	// The receive first (FIFO: it is the one this message will consume).
	if (op.has_recv) {
		std::vector<ibv_sge> sg;
		for (auto &p : op.recv_pieces)
			sg.push_back({rs.buf.addr() + op.rslot * rs.slot_size + p.off, static_cast<uint32_t>(p.len),
				      rs.mr->lkey});
		ibv_recv_wr wr{}, *bad = nullptr;
		wr.wr_id = op.id | (uint64_t{1} << 63);
		wr.sg_list = sg.empty() ? nullptr : sg.data();
		wr.num_sge = static_cast<int>(sg.size());
		int rc = ibv_post_recv(resp.qp.get(), &wr, &bad);
		if (rc)
			fail_op(&op, strf("ibv_post_recv: %s (%d)", strerror(rc), rc));
		rq_[op.dir].push_back(&op);
	}

	std::vector<ibv_sge> sg;
	ibv_send_wr wr{}, *bad = nullptr;
	wr.wr_id = op.id;
	if (op.kind == K_CAS || op.kind == K_FADD) {
		sg.push_back({ls.buf.addr() + op.lslot * ls.slot_size + op.atom_loff, 8, ls.mr->lkey});
	} else {
		for (auto &p : op.lpieces)
			sg.push_back({ls.buf.addr() + op.lslot * ls.slot_size + p.off,
				      static_cast<uint32_t>(p.len), ls.mr->lkey});
	}
	wr.sg_list = sg.empty() ? nullptr : sg.data();
	wr.num_sge = static_cast<int>(sg.size());
	wr.send_flags = (op.signaled ? IBV_SEND_SIGNALED : 0) | (op.inlined ? IBV_SEND_INLINE : 0);
	uint64_t raddr = rs.buf.addr() + (op.rslot >= 0 ? op.rslot * rs.slot_size : 0) + op.roff;
	switch (op.kind) {
	case K_SEND: wr.opcode = IBV_WR_SEND; break;
	case K_SEND_IMM: wr.opcode = IBV_WR_SEND_WITH_IMM; break;
	case K_SEND_INV: {
		// A bound window of the responder, not in use (can_post made sure).
		auto &mws = rs.mws;
		for (size_t i = 0; i < mws.size(); i++)
			if (mws[i].bound && !mws[i].in_use) {
				op.mw = static_cast<int>(i);
				break;
			}
		mws[op.mw].in_use = true;
		op.inv_rkey = mws[op.mw].rkey;
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.invalidate_rkey = op.inv_rkey;
		break;
	}
	case K_WRITE: wr.opcode = IBV_WR_RDMA_WRITE; break;
	case K_WRITE_IMM: wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM; break;
	case K_READ: wr.opcode = IBV_WR_RDMA_READ; break;
	case K_CAS: wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP; break;
	case K_FADD: wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD; break;
	default: break;
	}
	if (op.kind == K_SEND_IMM || op.kind == K_WRITE_IMM)
		wr.imm_data = htobe32(op.imm);
	if (op.kind == K_WRITE || op.kind == K_WRITE_IMM || op.kind == K_READ) {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rs.mr->rkey;
	} else if (op.kind == K_CAS || op.kind == K_FADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rs.mr->rkey;
		wr.wr.atomic.compare_add = op.atom_arg;
		wr.wr.atomic.swap = op.atom_swap;
	}
	if (opt_.verbose)
		std::printf("post %s\n", describe(op).c_str());
	if (opt_.hop_cpus)
		hop_cpu();
	int rc = ibv_post_send(req.qp.get(), &wr, &bad);
	if (rc)
		fail_op(&op, strf("ibv_post_send: %s (%d)", strerror(rc), rc));
	sq_[op.dir].push_back(&op);
	sq_used_[op.dir]++;
	if (op.inlined) {
		// Inline data was copied at post time: the buffer is ours again.
		for (auto &p : op.lpieces)
			fill_stream(lbase + p.off, p.len, ls.rest_tag(op.lslot), p.off);
		inlined_++;
	}
	if (!op.signaled)
		unsignaled_++;
	if (op.flush)
		flushes_++;
	else
		count_[op.kind]++;
	msg_bytes_ += op.len;
}

void Test::handle_send_wc(int dir, const ibv_wc &wc)
{
	send_cqes_++;
	Op *head = sq_[dir].empty() ? nullptr : sq_[dir].front();
	auto it = ops_.find(wc.wr_id);
	Op *op = it == ops_.end() ? nullptr : it->second.get();
	if (wc.status != IBV_WC_SUCCESS)
		fail_op(op, strf("%s: send completion wr_id %" PRIu64 " with status %s (%d), vendor_err 0x%x",
				 ep_[dir]->label.c_str(), wc.wr_id, ibv_wc_status_str(wc.status), wc.status,
				 wc.vendor_err));
	if (!op || op->send_done || op->dir != dir)
		fail_op(head, strf("%s: send completion for unknown/completed wr_id %" PRIu64 " (opcode %s)",
				   ep_[dir]->label.c_str(), wc.wr_id, wc_opcode_str(wc.opcode)));
	if (!op->signaled)
		fail_op(op, "completion for an unsignaled WR");
	if (wc.qp_num != ep_[dir]->qpn())
		fail_op(op, strf("send completion qp_num 0x%x, expected 0x%x", wc.qp_num, ep_[dir]->qpn()));
	ibv_wc_opcode want;
	switch (op->kind) {
	case K_SEND:
	case K_SEND_IMM:
	case K_SEND_INV: want = IBV_WC_SEND; break;
	case K_WRITE:
	case K_WRITE_IMM: want = IBV_WC_RDMA_WRITE; break;
	case K_READ: want = IBV_WC_RDMA_READ; break;
	case K_CAS: want = IBV_WC_COMP_SWAP; break;
	default: want = IBV_WC_FETCH_ADD; break;
	}
	if (wc.opcode != want)
		fail_op(op, strf("send completion opcode %s, expected %s", wc_opcode_str(wc.opcode),
				 wc_opcode_str(want)));
	if (op->kind == K_READ && wc.byte_len != op->len)
		fail_op(op, strf("RDMA read completion byte_len %u, expected %zu", wc.byte_len, op->len));
	if ((op->kind == K_CAS || op->kind == K_FADD) && wc.byte_len != 8)
		fail_op(op, strf("atomic completion byte_len %u, expected 8", wc.byte_len));
	// In order: everything before it on this send queue is complete too,
	// and none of it may have been signaled.
	while (!sq_[dir].empty()) {
		Op *o = sq_[dir].front();
		if (o != op && o->signaled)
			fail_op(o, strf("completion order: got wr_id %" PRIu64 " before this signaled WR",
					op->id));
		sq_[dir].pop_front();
		sq_used_[dir]--;
		o->send_done = true;
		maybe_retire(o);
		if (o == op)
			break;
	}
}

void Test::handle_recv_wc(int dir, const ibv_wc &wc)
{
	recv_cqes_++;
	const Endpoint &resp = *ep_[!dir];
	if (rq_[dir].empty())
		fail_op(nullptr, strf("%s: unexpected receive completion wr_id 0x%" PRIx64 " status %s",
				      resp.label.c_str(), wc.wr_id, ibv_wc_status_str(wc.status)));
	Op *op = rq_[dir].front();
	if (wc.status != IBV_WC_SUCCESS)
		fail_op(op, strf("%s: receive completion with status %s (%d), vendor_err 0x%x",
				 resp.label.c_str(), ibv_wc_status_str(wc.status), wc.status, wc.vendor_err));
	if (wc.wr_id != (op->id | (uint64_t{1} << 63)))
		fail_op(op, strf("receive completion order: got wr_id %" PRIu64 ", expected %" PRIu64,
				 wc.wr_id & ~(uint64_t{1} << 63), op->id));
	rq_[dir].pop_front();
	bool imm = op->kind == K_SEND_IMM || op->kind == K_WRITE_IMM;
	ibv_wc_opcode want = op->kind == K_WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
	if (std::string why = recv_wc_mismatch(wc, resp.qpn(), want, op->len, imm, op->imm); !why.empty())
		fail_op(op, why);
	bool inv = op->kind == K_SEND_INV;
	// rdma_rxe (6.1) writes the kernel's ib_wc_flags into its user CQEs:
	// IB_WC_WITH_INVALIDATE is 1 << 2 there, which is IBV_WC_IP_CSUM_OK to
	// libibverbs, and IBV_WC_WITH_INV (1 << 3) never shows. With --rxe-side
	// naming the responder that bit is taken for the flag (and counted);
	// the invalidated R_Key and the window's state are checked all the same.
	if (inv && opt_.rxe_side == !dir && !(wc.wc_flags & IBV_WC_WITH_INV) &&
	    (wc.wc_flags & IBV_WC_IP_CSUM_OK)) {
		rxe_inv_flag_++;
	} else if (!!(wc.wc_flags & IBV_WC_WITH_INV) != inv)
		fail_op(op, strf("receive completion wc_flags 0x%x: IBV_WC_WITH_INV %s", wc.wc_flags,
				 inv ? "missing" : "unexpected"));
	if (inv) {
		if (wc.invalidated_rkey != op->inv_rkey)
			fail_op(op, strf("receive completion invalidated_rkey 0x%x, expected 0x%x",
					 wc.invalidated_rkey, op->inv_rkey));
		// Invalidated: free, to be bound again (which fails if it is not).
		Window &w = side_[!dir].mws[op->mw];
		w.bound = false;
		w.in_use = false;
	}
	op->recv_done = true;
	maybe_retire(op);
}

void Test::maybe_retire(Op *op)
{
	if (!op->send_done || (op->has_recv && !op->recv_done))
		return;
	verify(*op);
	if (!op->flush) {
		verified_[op->dir][op->kind]++;
		SqdCycle &c = sqd_[op->dir];
		if (c.state == SqdCycle::DONE)
			c.done_after++;
		else if (c.state != SqdCycle::IDLE)
			c.done_before++;
	}
	if (op->lslot >= 0)
		side_[op->dir].busy[op->lslot] = false;
	if (op->rslot >= 0)
		side_[!op->dir].busy[op->rslot] = false;
	ops_.erase(op->id);
}

void Test::verify(Op &op)
{
	for (auto &c : op.checks) {
		Side &s = side_[c.side];
		uint8_t *base = s.slot_ptr(c.slot);
		uint64_t rest = s.rest_tag(c.slot);
		auto pieces = c.pieces;
		std::sort(pieces.begin(), pieces.end(), [](auto &x, auto &y) { return x.off < y.off; });
		size_t pos = c.lo;
		auto bad = [&](size_t at, const char *expect) {
			size_t win_lo = at >= 8 ? at - 8 : 0;
			std::string dump;
			for (size_t i = win_lo; i < std::min(at + 24, c.hi); i++)
				dump += strf("%s%02x", i == at ? " [" : " ", base[i]);
			fail_op(&op, strf("%s on %s, slot %d: byte at slot offset %zu is wrong (expected %s); "
					  "bytes from offset %zu:%s",
					  c.what, ep_[c.side]->label.c_str(), c.slot, at, expect, win_lo,
					  dump.c_str()));
		};
		// [lo, hi) holds no data: still at rest (where: "in this gap", ...).
		auto check_resting = [&](size_t lo, size_t hi, const char *where) {
			size_t m = check_stream(base + lo, hi - lo, rest, lo);
			if (m != hi - lo)
				bad(lo + m, strf("untouched (resting 0x%02x; %zu bad bytes %s)", stream_byte(rest, lo + m),
						 count_mismatch(base + lo, hi - lo, rest, lo), where)
						    .c_str());
		};
		for (auto &p : pieces) {
			if (p.off > pos)
				check_resting(pos, p.off, "in this gap");
			if (p.literal) {
				for (size_t i = 0; i < p.len; i++)
					if (base[p.off + i] != p.lit[i]) {
						uint64_t got;
						std::memcpy(&got, base + p.off, 8);
						uint64_t want;
						std::memcpy(&want, p.lit, 8);
						bad(p.off + i, strf("atomic value 0x%016" PRIx64 ", got 0x%016" PRIx64,
								    want, got)
								       .c_str());
					}
			} else {
				size_t m = check_stream(base + p.off, p.len, op.tag, p.msg_off);
				if (m != p.len)
					bad(p.off + m,
					    strf("message byte %" PRIu64 " = 0x%02x; %zu of %zu bytes of this SGE wrong",
						 p.msg_off + m, stream_byte(op.tag, p.msg_off + m),
						 count_mismatch(base + p.off, p.len, op.tag, p.msg_off), p.len)
						    .c_str());
			}
			pos = p.off + p.len;
		}
		if (c.hi > pos)
			check_resting(pos, c.hi, "after the data");
		bytes_verified_ += c.hi - c.lo;
		// Back to resting.
		for (auto &p : pieces)
			fill_stream(base + p.off, p.len, rest, p.off);
	}
	// Sources of inline sends were restored at post time; READ sources and
	// atomic targets are pieces of a check and restored above.
	std::vector<std::pair<int, int>> slots;
	if (op.lslot >= 0)
		slots.push_back({op.dir, op.lslot});
	if (op.rslot >= 0)
		slots.push_back({!op.dir, op.rslot});
	for (auto [sd, sl] : slots) {
		Side &s = side_[sd];
		if (s.slot_size <= 65536 || (mix64(op.id ^ opt_.seed) & 31) == 0)
			full_scan(sd, sl, "after an operation");
	}
}

void Test::full_scan(int sd, int slot, const char *when)
{
	Side &s = side_[sd];
	uint8_t *base = s.slot_ptr(slot);
	uint64_t rest = s.rest_tag(slot);
	size_t m = check_stream(base, s.slot_size, rest, 0);
	full_scans_++;
	if (m != s.slot_size)
		fail_op(nullptr, strf("full scan %s: %s slot %d byte %zu is 0x%02x, expected resting 0x%02x "
				      "(%zu bad bytes in the slot): a stray write",
				      when, ep_[sd]->label.c_str(), slot, m, base[m], stream_byte(rest, m),
				      count_mismatch(base, s.slot_size, rest, 0)));
	bytes_verified_ += s.slot_size;
}

void Test::setup()
{
	ep_[0] = open_endpoint("A", opt_.a, opt_.ipv6, opt_.use_event, 4 * opt_.depth + 16);
	ep_[1] = open_endpoint("B", opt_.b, opt_.ipv6, opt_.use_event, 4 * opt_.depth + 16);
	QpCaps caps;
	caps.max_send_wr = opt_.depth + 2;
	caps.max_recv_wr = opt_.depth + 2;
	caps.max_send_sge = caps.max_recv_sge = opt_.max_sge;
	for (auto &e : ep_)
		e->create_qp(caps);
	ConnParams pa, pb;
	pa.mtu = pb.mtu = pick_mtu(*ep_[0], *ep_[1], opt_.mtu);
	pa.timeout = pb.timeout = static_cast<uint8_t>(opt_.ack_timeout);
	pa.psn = static_cast<uint32_t>(mix64(opt_.seed ^ 1)) & 0xffffff;
	pb.psn = static_cast<uint32_t>(mix64(opt_.seed ^ 2)) & 0xffffff;
	// PSNs near the wrap are worth a try.
	if (mix64(opt_.seed ^ 3) & 1)
		pa.psn = 0xffffff - (pa.psn & 0xff);
	connect_pair(*ep_[0], *ep_[1], pa, pb);

	max_len_ = std::min<size_t>(opt_.max_size, std::min(ep_[0]->pattr.max_msg_sz, ep_[1]->pattr.max_msg_sz));
	data_area_ = kGuard + kJitter + max_len_ + (opt_.max_sge + 1) * kMaxGap + kMaxGap + kGuard + 8;
	data_area_ = (data_area_ + 7) & ~size_t{7};
	size_t slot = (data_area_ + kAux + 4095) & ~size_t{4095};
	for (int i = 0; i < 2; i++) {
		Side &s = side_[i];
		s.ep = ep_[i].get();
		s.slot_size = slot;
		s.salt = mix64(opt_.seed + 0x1000 + i);
		s.nslots = std::clamp<size_t>(opt_.mem / slot, 1, 2 * opt_.depth);
		s.buf = Buffer(s.nslots * slot);
		s.busy.assign(s.nslots, false);
		for (size_t k = 0; k < s.nslots; k++)
			fill_stream(s.slot_ptr(k), slot, s.rest_tag(k), 0);
		unsigned access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_ATOMIC;
		if (opt_.kinds & (1u << K_SEND_INV))
			access |= IBV_ACCESS_MW_BIND;
		s.mr = reg_mr(ep_[i]->pd.get(), s.buf.data(), s.buf.size(), access);
	}
	// SEND_INV: a pool of type 2 windows on each side, bound before the traffic.
	if (opt_.kinds & (1u << K_SEND_INV)) {
		for (int i = 0; i < 2; i++) {
			size_t n = std::clamp<size_t>(opt_.depth, 2, 16);
			for (size_t k = 0; k < n; k++) {
				Window w;
				w.mw = ibv_alloc_mw(ep_[i]->pd.get(), IBV_MW_TYPE_2);
				if (!w.mw)
					throw_errno(strf("ibv_alloc_mw(type 2) on %s", ep_[i]->devname.c_str()), errno);
				w.rkey = w.mw->rkey;
				side_[i].mws.push_back(w);
			}
			bind_windows(i);
		}
	}
	// --sqd: A's QP a third of the way through, B's at two thirds.
	sqd_[0].at_op = opt_.iters / 3;
	sqd_[1].at_op = 2 * opt_.iters / 3;
	if (opt_.sqd)
		for (auto &e : ep_) {
			int fl = fcntl(e->ctx->async_fd, F_GETFL);
			if (fl < 0 || fcntl(e->ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
				throw_errno("fcntl(O_NONBLOCK) on the async fd", errno);
		}
	waiter_.use_event = opt_.use_event;
	// Order matters: index i below.
	waiter_.cqs = {{ep_[0]->scq.get(), ep_[0]->chan.get()}, {ep_[0]->rcq.get(), ep_[0]->chan.get()},
		       {ep_[1]->scq.get(), ep_[1]->chan.get()}, {ep_[1]->rcq.get(), ep_[1]->chan.get()}};

	for (int i = 0; i < 2; i++) {
		auto &e = *ep_[i];
		std::printf("%s: %s gid[%d] %s qpn 0x%x max_send_sge %u max_recv_sge %u max_inline %u "
			    "active_mtu %s max_msg_sz %u slots %zu x %zu B\n",
			    e.label.c_str(), e.devname.c_str(), e.gid_index, gid_str(e.gid).c_str(), e.qpn(),
			    e.cap.max_send_sge, e.cap.max_recv_sge, e.cap.max_inline_data,
			    mtu_str(e.pattr.active_mtu), e.pattr.max_msg_sz, side_[i].nslots, side_[i].slot_size);
	}
	std::printf("path_mtu %s, psn A 0x%06x B 0x%06x, depth %u, max size %zu, %s\n", mtu_str(pa.mtu),
		    pa.psn, pb.psn, opt_.depth, max_len_, opt_.use_event ? "completion events" : "polling");
	std::fflush(stdout);
}

// Bind every free window of side sd to its buffer (IBV_WR_BIND_MW on its own
// QP, whose send queue is empty), each with a new R_Key, and wait for the
// completions. A window a SEND_WITH_INV did not really invalidate cannot be
// bound again: MW_BIND_ERR.
void Test::bind_windows(int sd)
{
	Side &s = side_[sd];
	Endpoint &ep = *ep_[sd];
	size_t posted = 0;
	for (size_t i = 0; i < s.mws.size(); i++) {
		Window &w = s.mws[i];
		if (w.bound || w.in_use)
			continue;
		ibv_send_wr wr{}, *bad = nullptr;
		wr.wr_id = (uint64_t{3} << 62) | i;
		wr.opcode = IBV_WR_BIND_MW;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.bind_mw.mw = w.mw;
		wr.bind_mw.rkey = ibv_inc_rkey(w.rkey);
		wr.bind_mw.bind_info.mr = s.mr.get();
		wr.bind_mw.bind_info.addr = s.buf.addr() + 64 * i;
		wr.bind_mw.bind_info.length = 64;
		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
		int rc = ibv_post_send(ep.qp.get(), &wr, &bad);
		if (rc)
			fail_op(nullptr, strf("%s: IBV_WR_BIND_MW of window %zu: ibv_post_send: %s (%d)",
					      ep.label.c_str(), i, strerror(rc), rc));
		w.rkey = wr.bind_mw.rkey;
		posted++;
	}
	auto deadline = Clock::now() + std::chrono::seconds(opt_.timeout);
	for (size_t got = 0; got < posted;) {
		ibv_wc wc;
		int n = ibv_poll_cq(ep.scq.get(), 1, &wc);
		if (n < 0)
			fail_op(nullptr, "ibv_poll_cq failed");
		if (n == 0) {
			if (Clock::now() > deadline)
				fail_op(nullptr, strf("%s: %zu of %zu window binds completed in %u s", ep.label.c_str(),
						      got, posted, opt_.timeout));
			continue;
		}
		size_t i = wc.wr_id & 0xffff;
		if ((wc.wr_id >> 62) != 3 || i >= s.mws.size())
			fail_op(nullptr, strf("%s: completion wr_id 0x%" PRIx64 " while binding windows",
					      ep.label.c_str(), wc.wr_id));
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_BIND_MW)
			fail_op(nullptr, strf("%s: binding window %zu (R_Key 0x%x): status %s (%d), opcode %s: "
					      "was its last invalidation real?",
					      ep.label.c_str(), i, s.mws[i].rkey, ibv_wc_status_str(wc.status),
					      wc.status, wc_opcode_str(wc.opcode)));
		s.mws[i].bound = true;
		// The consumer owns a type 2 window's key: keep ibv_mw's rkey the
		// bound one, which rxe's provider passes as the window to bind next
		// time (the kernel refuses a stale one). sroce's goes by the index.
		s.mws[i].mw->rkey = s.mws[i].rkey;
		binds_++;
		got++;
	}
}

// --sqd: drive the cycle of dir's QP one step (called every loop).
void Test::sqd_step(int dir)
{
	SqdCycle &c = sqd_[dir];
	Endpoint &ep = *ep_[dir];
	if (c.state == SqdCycle::IDLE || c.state == SqdCycle::DONE)
		return;
	// Async events: SQ_DRAINED for this QP is the one expected.
	ibv_async_event ev;
	while (ibv_get_async_event(ep.ctx.get(), &ev) == 0) {
		auto type = ev.event_type;
		bool ours = type == IBV_EVENT_SQ_DRAINED && ev.element.qp == ep.qp.get();
		ibv_ack_async_event(&ev);
		if (!ours)
			fail_op(nullptr, strf("%s: async event %s during the SQD cycle", ep.label.c_str(),
					      ibv_event_type_str(type)));
		if (c.state == SqdCycle::DRAINED)
			fail_op(nullptr, strf("%s: a second IBV_EVENT_SQ_DRAINED", ep.label.c_str()));
		c.state = SqdCycle::DRAINED;
		// Take the completions that came before the event now: from here
		// on, none may come for this send queue until it is back in RTS.
		ibv_wc wc[32];
		int which[32];
		int n;
		while ((n = waiter_.wait(wc, which, 32, std::chrono::milliseconds(0))) > 0)
			for (int i = 0; i < n; i++) {
				switch (which[i]) {
				case 0: handle_send_wc(0, wc[i]); break;
				case 1: handle_recv_wc(1, wc[i]); break;
				case 2: handle_send_wc(1, wc[i]); break;
				case 3: handle_recv_wc(0, wc[i]); break;
				}
			}
		size_t left = sq_[dir].size();
		// Settle for a while: a WR that starts in SQD would complete now.
		auto until = Clock::now() + std::chrono::milliseconds(300);
		while (Clock::now() < until) {
			n = waiter_.wait(wc, which, 32, std::chrono::milliseconds(50));
			for (int i = 0; i < n; i++) {
				if (which[i] == 2 * dir)
					fail_op(nullptr, strf("%s: send completion wr_id %" PRIu64 " after "
							      "IBV_EVENT_SQ_DRAINED, with the QP in SQD",
							      ep.label.c_str(), wc[i].wr_id));
				switch (which[i]) {
				case 1: handle_recv_wc(1, wc[i]); break;
				case 3: handle_recv_wc(0, wc[i]); break;
				case 0: handle_send_wc(0, wc[i]); break;
				case 2: handle_send_wc(1, wc[i]); break;
				}
			}
		}
		ibv_qp_attr a{};
		ibv_qp_init_attr ia{};
		if (ibv_query_qp(ep.qp.get(), &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT, &ia))
			fail_op(nullptr, strf("%s: ibv_query_qp in SQD: %s", ep.label.c_str(), strerror(errno)));
		if (a.qp_state != IBV_QPS_SQD)
			fail_op(nullptr, strf("%s: QP in %s after IBV_EVENT_SQ_DRAINED, expected SQD",
					      ep.label.c_str(), qp_state_str(a.qp_state)));
		c.timeout_was = a.timeout;
		c.retry_was = a.retry_cnt;
		// SQD -> SQD: attributes IBTA allows to change while drained.
		ibv_qp_attr m{};
		m.qp_state = IBV_QPS_SQD;
		m.timeout = static_cast<uint8_t>(std::min(a.timeout + 1, 31));
		m.retry_cnt = static_cast<uint8_t>(a.retry_cnt > 1 ? a.retry_cnt - 1 : 7);
		if (int rc = ibv_modify_qp(ep.qp.get(), &m, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT))
			fail_op(nullptr, strf("%s: modify_qp SQD -> SQD (timeout %u, retry_cnt %u): %s",
					      ep.label.c_str(), m.timeout, m.retry_cnt, strerror(rc)));
		if (ibv_query_qp(ep.qp.get(), &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT, &ia))
			fail_op(nullptr, strf("%s: ibv_query_qp in SQD: %s", ep.label.c_str(), strerror(errno)));
		if (a.qp_state != IBV_QPS_SQD || a.timeout != m.timeout || a.retry_cnt != m.retry_cnt)
			fail_op(nullptr, strf("%s: after SQD -> SQD: state %s timeout %u retry_cnt %u, expected SQD "
					      "%u %u",
					      ep.label.c_str(), qp_state_str(a.qp_state), a.timeout, a.retry_cnt,
					      m.timeout, m.retry_cnt));
		ibv_qp_attr r{};
		r.qp_state = IBV_QPS_RTS;
		if (int rc = ibv_modify_qp(ep.qp.get(), &r, IBV_QP_STATE))
			fail_op(nullptr, strf("%s: modify_qp SQD -> RTS: %s", ep.label.c_str(), strerror(rc)));
		if (qp_state(ep.qp.get()) != IBV_QPS_RTS)
			fail_op(nullptr, strf("%s: not in RTS after SQD -> RTS", ep.label.c_str()));
		c.state = SqdCycle::DONE;
		std::printf("sqd %s: %zu send WRs outstanding at RTS -> SQD, IBV_EVENT_SQ_DRAINED after %.2f s, "
			    "%zu not started (held), %" PRIu64 " of its operations verified meanwhile; "
			    "SQD -> SQD timeout %u -> %u, retry_cnt %u -> %u; back to RTS\n",
			    ep.label.c_str(), c.outstanding, secs_since(c.t0), left, c.done_before, c.timeout_was,
			    m.timeout, c.retry_was, m.retry_cnt);
		if (opt_.tap)
			std::printf("ok - SQD cycle of %s's QP # %zu WRs outstanding, SQ_DRAINED, timeout %u -> %u "
				    "and retry_cnt %u -> %u in SQD, back to RTS\n",
				    g_tap.names[dir].c_str(), c.outstanding, c.timeout_was, m.timeout, c.retry_was,
				    m.retry_cnt);
		std::fflush(stdout);
		return;
	}
	if (secs_since(c.t0) > opt_.timeout)
		fail_op(sq_[dir].empty() ? nullptr : sq_[dir].front(),
			strf("%s: no IBV_EVENT_SQ_DRAINED %u s after RTS -> SQD (%zu WRs outstanding then, %zu now)",
			     ep.label.c_str(), opt_.timeout, c.outstanding, sq_[dir].size()));
}

void Test::sqd_start(int dir)
{
	SqdCycle &c = sqd_[dir];
	Endpoint &ep = *ep_[dir];
	c.outstanding = sq_[dir].size();
	c.t0 = Clock::now();
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_SQD;
	a.en_sqd_async_notify = 1;
	if (int rc = ibv_modify_qp(ep.qp.get(), &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY))
		fail_op(nullptr, strf("%s: modify_qp RTS -> SQD with %zu WRs outstanding: %s", ep.label.c_str(),
				      c.outstanding, strerror(rc)));
	c.state = SqdCycle::DRAINING;
	std::printf("sqd %s: RTS -> SQD with %zu send WRs outstanding (operation %" PRIu64 ")\n",
		    ep.label.c_str(), c.outstanding, c.at_op);
	std::fflush(stdout);
}

// Nothing may complete after everything did.
void Test::drain_extra()
{
	ibv_wc wc[8];
	int which[8];
	auto end = Clock::now() + std::chrono::milliseconds(200);
	while (Clock::now() < end) {
		int n = waiter_.wait(wc, which, 8, std::chrono::milliseconds(50));
		if (n)
			fail_op(nullptr, strf("%d completion(s) after all work was complete: first wr_id 0x%" PRIx64
					      " status %s opcode %s",
					      n, wc[0].wr_id, ibv_wc_status_str(wc[0].status),
					      wc_opcode_str(wc[0].opcode)));
	}
}

int Test::run()
{
	setup();
	auto start = Clock::now(), last_progress = start;
	uint64_t next_id = 0;
	std::unique_ptr<Op> pending;
	uint64_t flush_id = uint64_t{1} << 62; // not in the operation numbering
	auto report_time = start;
	while (true) {
		// Post as much as the limits allow.
		while (true) {
			if (!pending && next_id < opt_.iters)
				pending = make_op(next_id++);
			if (!pending || !can_post(*pending))
				break;
			Op *op = pending.get();
			ops_[op->id] = std::move(pending);
			post(*op);
		}
		// Blocked or done: a queue that ends with unsignaled WRs would never
		// report them; end it with a signaled zero-length WRITE.
		for (int d = 0; d < 2; d++) {
			if (!sq_[d].empty() && !sq_[d].back()->signaled && !sqd_holds(d)) {
				auto f = make_flush(flush_id++, d);
				Op *fp = f.get();
				ops_[fp->id] = std::move(f);
				post(*fp);
			}
		}
		// SEND_INV waits for a window of the responder: bind the free ones
		// again once its send queue is idle.
		if (pending && pending->kind == K_SEND_INV && !can_post(*pending) && sq_[!pending->dir].empty() &&
		    !sqd_holds(!pending->dir)) {
			bool free = false;
			for (auto &w : side_[!pending->dir].mws)
				free |= !w.bound && !w.in_use;
			if (free) {
				bind_windows(!pending->dir);
				continue;
			}
			// All of them in flight: their receive completions free them.
		}
		bool cycling = false;
		if (opt_.sqd) {
			for (int d = 0; d < 2; d++) {
				if (sqd_[d].state == SqdCycle::IDLE && next_id >= sqd_[d].at_op && !sq_[d].empty() &&
				    !sqd_holds(!d))
					sqd_start(d);
				sqd_step(d);
				cycling |= sqd_holds(d);
			}
		}
		if (!pending && next_id >= opt_.iters && ops_.empty() && !cycling)
			break;

		ibv_wc wc[32];
		int which[32];
		int n = waiter_.wait(wc, which, 32, std::chrono::milliseconds(cycling ? 20 : 1000));
		for (int i = 0; i < n; i++) {
			switch (which[i]) {
			case 0: handle_send_wc(0, wc[i]); break; // A's send CQ: A->B
			case 1: handle_recv_wc(1, wc[i]); break; // A's recv CQ: B->A
			case 2: handle_send_wc(1, wc[i]); break;
			case 3: handle_recv_wc(0, wc[i]); break;
			}
		}
		auto now = Clock::now();
		if (n)
			last_progress = now;
		else if (now - last_progress > std::chrono::seconds(opt_.timeout)) {
			Op *o = nullptr;
			for (int d = 0; d < 2 && !o; d++)
				o = !sq_[d].empty() ? sq_[d].front() : !rq_[d].empty() ? rq_[d].front() : nullptr;
			fail_op(o, strf("no completion for %u s (stuck); oldest outstanding op shown", opt_.timeout));
		}
		if (now - report_time > std::chrono::seconds(10)) {
			report_time = now;
			std::printf("... %" PRIu64 "/%" PRIu64 " ops posted, %.1f s\n", next_id, opt_.iters,
				    secs_since(start));
			std::fflush(stdout);
		}
	}
	drain_extra();
	for (int sd = 0; sd < 2; sd++)
		for (size_t k = 0; k < side_[sd].nslots; k++)
			full_scan(sd, static_cast<int>(k), "at the end");
	if (opt_.sqd) {
		for (int d = 0; d < 2; d++) {
			const SqdCycle &c = sqd_[d];
			if (c.state != SqdCycle::DONE)
				fail_op(nullptr, strf("%s's QP: the SQD cycle never ran (no send WR was outstanding "
						      "after operation %" PRIu64 ")",
						      g_tap.names[d].c_str(), c.at_op));
			if (!c.done_after)
				fail_op(nullptr, strf("%s's QP: no operation of it completed after its SQD cycle",
						      g_tap.names[d].c_str()));
			std::printf("sqd %s: %" PRIu64 " of its operations verified after the cycle\n",
				    ep_[d]->label.c_str(), c.done_after);
			if (opt_.tap)
				std::printf("ok - traffic of %s's QP after its SQD cycle # %" PRIu64 " operations verified\n",
					    g_tap.names[d].c_str(), c.done_after);
		}
	}
	if (opt_.use_event && waiter_.missed_events)
		fail_op(nullptr, strf("%" PRIu64 " time(s) an armed CQ had completions but no event arrived within 1 s",
				      waiter_.missed_events));

	if (rxe_inv_flag_)
		std::printf("note: rdma_rxe flagged %" PRIu64 " invalidation(s) with the kernel's IB_WC_WITH_INVALIDATE bit "
			    "(IBV_WC_IP_CSUM_OK to libibverbs), not IBV_WC_WITH_INV: an rxe bug, accepted with "
			    "--rxe-side\n",
			    rxe_inv_flag_);
	if (opt_.tap) {
		for (int k = 0; k < K_NKINDS; k++) {
			if (!(opt_.kinds & (1u << k)))
				continue;
			for (int d = 0; d < 2; d++) {
				if (verified_[d][k] && k == K_SEND_INV && opt_.rxe_side == !d && rxe_inv_flag_)
					std::printf("ok - %s %s # %" PRIu64 " verified; rxe flagged the invalidation with "
						    "IBV_WC_IP_CSUM_OK's bit (its bug)\n",
						    kind_name[k], dir_name(d).c_str(), verified_[d][k]);
				else if (verified_[d][k])
					std::printf("ok - %s %s # %" PRIu64 " verified\n", kind_name[k], dir_name(d).c_str(),
						    verified_[d][k]);
				else
					std::printf("not ok - %s %s # none was made in %" PRIu64 " operations\n",
						    kind_name[k], dir_name(d).c_str(), opt_.iters);
			}
		}
	}
	double t = secs_since(start);
	std::string per;
	for (int k = 0; k < K_NKINDS; k++)
		per += strf(" %s=%" PRIu64, kind_name[k], count_[k]);
	std::printf("rc_integrity: PASS seed=%" PRIu64 " ops=%" PRIu64 "%s (inline=%" PRIu64 " unsignaled=%" PRIu64
		    " flush=%" PRIu64 " binds=%" PRIu64 ") cqes send=%" PRIu64 " recv=%" PRIu64 "%s message_bytes=%" PRIu64
		    " bytes_verified=%" PRIu64 " full_scans=%" PRIu64 " time=%.1fs\n",
		    opt_.seed, opt_.iters, per.c_str(), inlined_, unsignaled_, flushes_, binds_, send_cqes_, recv_cqes_,
		    opt_.use_event ? strf(" events=%" PRIu64, waiter_.events).c_str() : "", msg_bytes_,
		    bytes_verified_, full_scans_, t);
	return 0;
}

void usage(FILE *f)
{
	std::fprintf(f,
		     "usage: rc_integrity [options]\n"
		     "%s"
		     "  --iters N                   operations (default 1000)\n"
		     "  --seed S                    random seed (default: from the clock; printed)\n"
		     "  --max-size BYTES            largest message, K/M/G suffixes (default 1M)\n"
		     "  --depth N                   WRs in flight per QP (default 8)\n"
		     "  --ops LIST                  only these: SEND,SEND_IMM,SEND_INV,WRITE,WRITE_IMM,READ,CMP_SWAP,\n"
		     "                              FETCH_ADD (SEND_INV: SEND_WITH_INV of a type 2 window)\n"
		     "  --max-sge N                 SGEs per WR requested (default 16)\n"
		     "  --signal-pct P              share of signaled WRs (default 60)\n"
		     "  --ack-timeout N             local ACK timeout, 4.096 us * 2^N (default 14, 67 ms)\n"
		     "  --mem BYTES                 buffer per side (default 256M; at least one slot)\n"
		     "  --timeout SECS              fail after this long without a completion (default 60)\n"
		     "  --hop-cpus                  post each WR from the next CPU (the doorbell runs the\n"
		     "                              requester there): packets of one QP leave from all CPUs\n"
		     "  --sqd                       cycle each QP RTS -> SQD -> SQD (new timeout, retry_cnt) -> RTS\n"
		     "                              with work requests outstanding\n"
		     "  --tap                       TAP lines: per operation kind and direction, SQD cycle, failure\n"
		     "  --tap-names A,B             the names of the two sides in the TAP lines\n"
		     "  --rxe-side a|b              that side is rdma_rxe: take its SEND_WITH_INV receive\n"
		     "                              completions' IBV_WC_IP_CSUM_OK bit for IBV_WC_WITH_INV (an rxe bug)\n"
		     "  -v, --verbose               print every WR\n"
		     "Exit status: 0 all checks passed, 1 a check failed, 2 setup/usage error.\n",
		     kCommonUsage);
}

} // namespace

int main(int argc, char **argv)
{
	return guarded_main("rc_integrity", [&] {
		Options o;
		enum { O_ITERS = 256, O_SEED, O_MAXSIZE, O_DEPTH, O_TIMEOUT, O_MEM, O_OPS, O_MAXSGE, O_SIGPCT, O_ACKTO, O_SQD, O_HOP, O_TAP, O_TAPNAMES, O_RXE };
		int rc = parse_args(argc, argv, o, "vh",
				    {{"iters", required_argument, nullptr, O_ITERS},
				     {"seed", required_argument, nullptr, O_SEED},
				     {"max-size", required_argument, nullptr, O_MAXSIZE},
				     {"depth", required_argument, nullptr, O_DEPTH},
				     {"timeout", required_argument, nullptr, O_TIMEOUT},
				     {"mem", required_argument, nullptr, O_MEM},
				     {"ops", required_argument, nullptr, O_OPS},
				     {"max-sge", required_argument, nullptr, O_MAXSGE},
				     {"signal-pct", required_argument, nullptr, O_SIGPCT},
				     {"ack-timeout", required_argument, nullptr, O_ACKTO},
				     {"sqd", no_argument, nullptr, O_SQD},
				     {"hop-cpus", no_argument, nullptr, O_HOP},
				     {"tap", no_argument, nullptr, O_TAP},
				     {"tap-names", required_argument, nullptr, O_TAPNAMES},
				     {"rxe-side", required_argument, nullptr, O_RXE},
				     {"verbose", no_argument, nullptr, 'v'}},
				    usage, [&](int c, const char *arg) {
					    switch (c) {
					    case O_ITERS: o.iters = std::stoull(arg); break;
					    case O_SEED: o.seed = std::stoull(arg, nullptr, 0); o.seed_given = true; break;
					    case O_MAXSIZE: o.max_size = parse_size(arg); break;
					    case O_DEPTH: o.depth = std::stoul(arg); break;
					    case O_TIMEOUT: o.timeout = std::stoul(arg); break;
					    case O_MEM: o.mem = parse_size(arg); break;
					    case O_OPS: o.kinds = parse_name_list(arg, kind_name, "operation"); break;
					    case O_MAXSGE: o.max_sge = std::stoul(arg); break;
					    case O_SIGPCT: o.signal_pct = std::stoul(arg); break;
					    case O_ACKTO: o.ack_timeout = std::stoul(arg); break;
					    case O_SQD: o.sqd = true; break;
					    case O_HOP: o.hop_cpus = true; break;
					    case O_TAP: o.tap = g_tap.tap = true; break;
					    case O_RXE:
						    if (std::string(arg) != "a" && std::string(arg) != "b")
							    throw Error("--rxe-side wants a or b");
						    o.rxe_side = arg[0] == 'a' ? 0 : 1;
						    break;
					    case O_TAPNAMES: {
						    std::string v(arg);
						    size_t comma = v.find(',');
						    if (comma == std::string::npos || comma == 0 || comma + 1 == v.size())
							    throw Error("--tap-names wants NAME_A,NAME_B");
						    g_tap.names[0] = v.substr(0, comma);
						    g_tap.names[1] = v.substr(comma + 1);
						    break;
					    }
					    case 'v': o.verbose++; break;
					    default: return false;
					    }
					    return true;
				    });
		if (rc >= 0)
			return rc;
		if (o.depth < 1 || o.depth > 4096 || o.max_sge < 1 || o.max_sge > 64 || o.max_size < 1 ||
		    o.signal_pct > 100 || o.ack_timeout > 31)
			throw Error("option out of range");
		if (!o.seed_given)
			o.seed = clock_seed();
		std::printf("rc_integrity: seed %" PRIu64 " iters %" PRIu64 "\n", o.seed, o.iters);
		std::fflush(stdout);
		Test t(o);
		return t.run();
	}, [](const Error &e) {
		if (g_tap.tap) {
			std::string why = g_tap.why.empty() ? e.what() : g_tap.why;
			for (char &ch : why)
				if (ch == '#' || ch == '\n')
					ch = ' ';
			std::printf("not ok - %s # %s\n", g_tap.what.empty() ? "rc_integrity" : g_tap.what.c_str(),
				    why.c_str());
		}
		return std::string(e.what()) == "verification failed" ? 1 : 2;
	});
}
