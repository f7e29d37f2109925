// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// rc_mw: memory windows end to end. B owns a buffer, an MR on part of it
// (registered with IBV_ACCESS_MW_BIND and no remote rights of its own) and
// windows on that MR; A, connected to B by RC QPs in this process, accesses
// B's memory through the windows' R_Keys with RDMA WRITE, RDMA READ and the
// two atomics. Every case starts from fresh contexts, PDs and QPs, and every
// access that must be refused is followed by a fresh QP pair (a remote access
// error moves both QPs to ERR).
//
// After every step both whole buffers are compared byte by byte with a
// shadow copy (what the step may have changed and nothing else), every
// completion is checked (status, opcode, wr_id, qp_num, byte_len) and
// counted (each CQ holds exactly what the step produced, nothing more), and
// - on devices with the sroce hw counters - each refused access moved B's
// rem_access_nak_sent and A's rcvd_fatal_nak by exactly one.

#include "common.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <thread>

using namespace vt;
using namespace std::chrono_literals;

namespace {

struct Options : CommonOptions {
	std::vector<std::string> cases;
	bool list = false;
	bool counters = true;
	bool verbose = false;
};

// --- verdicts ---------------------------------------------------------------------

class StepChecker {
public:
	bool ok = true;
	bool verbose = false;
	unsigned checks = 0, steps = 0;

	void step(const std::string &what)
	{
		end_step();
		step_ = what;
		step_ok_ = true;
		steps++;
	}
	void end_step()
	{
		if (!step_.empty() && step_ok_)
			std::printf("    ok: %s\n", step_.c_str());
		step_.clear();
		std::fflush(stdout);
	}
	bool expect(bool cond, const std::string &what)
	{
		checks++;
		if (cond) {
			if (verbose)
				std::printf("      ok: %s\n", what.c_str());
			return true;
		}
		ok = step_ok_ = false;
		std::printf("    FAIL: %s%s%s\n", step_.empty() ? "" : step_.c_str(), step_.empty() ? "" : ": ",
			    what.c_str());
		std::fflush(stdout);
		return false;
	}
	void fail(const std::string &what) { expect(false, what); }

private:
	std::string step_;
	bool step_ok_ = true;
};

// --- layout -----------------------------------------------------------------------

constexpr size_t kBuf = 64 * 1024;
// B: the MR covers [kMrOff, kMrOff + kMrLen) of B's buffer; the bytes around
// it are in no MR at all.
constexpr size_t kMrOff = 4096, kMrLen = 56 * 1024;
// The windows: neither start nor end aligned.
constexpr size_t kW1Off = 8192 + 100, kW1Len = 6000;  // [8292, 14292)
constexpr size_t kW2Off = 20000 + 3, kW2Len = 3000;   // [20003, 23003), apart from W1
constexpr size_t kW3Off = 12000 + 5, kW3Len = 11000;  // [12005, 23005), overlaps W1 and W2
// A: where WRITE sources, READ sinks and atomic results live.
constexpr size_t kSrcOff = 0, kSinkOff = 32768, kResOff = 60000;
constexpr size_t kRecvLen = 512, kSendInvLen = 100;

constexpr unsigned kR = IBV_ACCESS_REMOTE_READ, kW = IBV_ACCESS_REMOTE_WRITE, kA = IBV_ACCESS_REMOTE_ATOMIC;
constexpr unsigned kRWA = kR | kW | kA;
// The MR windows are bound to: local write (windows with remote write or
// atomic rights need it) and MW_BIND, no remote rights itself.
constexpr unsigned kMrBind = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;

uint8_t pat(uint64_t tag, size_t i) { return static_cast<uint8_t>(mix64(tag * 0x100000001b3ULL ^ i)); }

// --- memory windows ------------------------------------------------------------------

struct MwDeleter {
	void operator()(ibv_mw *mw) const noexcept
	{
		if (mw && ibv_dealloc_mw(mw))
			std::fprintf(stderr, "warning: ibv_dealloc_mw failed\n");
	}
};
using MwPtr = std::unique_ptr<ibv_mw, MwDeleter>;

MwPtr alloc_mw(ibv_pd *pd, ibv_mw_type type)
{
	ibv_mw *mw = ibv_alloc_mw(pd, type);
	if (!mw)
		throw_errno(strf("ibv_alloc_mw(type %d)", type), errno);
	return MwPtr(mw);
}

// --- hw counters -------------------------------------------------------------------

// Port 1's hw counters of a device, if it has sroce's.
struct HwCounters {
	std::string dir;
	bool have = false;
	explicit HwCounters(const std::string &dev)
	    : dir("/sys/class/infiniband/" + dev + "/ports/1/hw_counters/")
	{
		have = std::ifstream(dir + "rem_access_nak_sent").good() && std::ifstream(dir + "rcvd_fatal_nak").good();
	}
	uint64_t get(const char *name) const
	{
		std::ifstream f(dir + name);
		uint64_t v = 0;
		if (!(f >> v))
			throw Error("cannot read " + dir + name);
		return v;
	}
};

// --- the fixture ---------------------------------------------------------------------

enum class Op { Write, Read, Cas, Fadd };

const char *op_name(Op op)
{
	switch (op) {
	case Op::Write: return "WRITE";
	case Op::Read: return "READ";
	case Op::Cas: return "CMP_SWP";
	case Op::Fadd: return "FETCH_ADD";
	}
	return "?";
}

// One remote access from A to B.
struct Access {
	Op op;
	uint32_t rkey;
	size_t off; // in B's buffer
	uint32_t len = 8;
	uint64_t cmp = 0, swap = 0; // CMP_SWP compare/swap; FETCH_ADD add in cmp
	int pair = 0;               // the QP pair it goes through (0 or 1)
};

std::string describe(const Access &x)
{
	return strf("%s of %u bytes at B+%zu rkey 0x%x via pair %d", op_name(x.op), x.len, x.off, x.rkey, x.pair);
}

// A (the peer) and B (the memory owner): own contexts, PDs, CQs, and up to
// two connected RC QP pairs (pair 0 in the endpoints' qp, pair 1 extra).
// B's QPs are created with send_ops_flags, so that ibv_wr_* works on them.
class Fx {
public:
	// Pair 1: none, a second pair on the same PDs, or one whose B QP is on
	// a second PD of B's context (pd2).
	enum Pairs { One, Two, OtherPd };

	Fx(const Options &o, StepChecker &c, Pairs pairs = One) : o_(o), c_(c)
	{
		a = open_endpoint("A", o.a, o.ipv6, o.use_event, 64);
		b = open_endpoint("B", o.b, o.ipv6, o.use_event, 64);
		if (!(b->dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW) || !b->dattr.max_mw)
			throw Error(b->devname + " does not report memory windows");
		caps_.max_send_wr = caps_.max_recv_wr = 16;
		caps_.max_send_sge = caps_.max_recv_sge = 1;
		caps_.max_inline = 0;
		bcaps_ = caps_;
		bcaps_.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_BIND_MW |
					IBV_QP_EX_WITH_LOCAL_INV;
		pa_.mtu = pb_.mtu = pick_mtu(*a, *b, o.mtu);

		abuf = Buffer(kBuf);
		bbuf = Buffer(kBuf);
		brecv = Buffer(kRecvLen * 2);
		ashadow.resize(kBuf);
		bshadow.resize(kBuf);
		for (size_t i = 0; i < kBuf; i++) {
			abuf.data()[i] = ashadow[i] = pat(0xa, i);
			bbuf.data()[i] = bshadow[i] = pat(0xb, i);
		}
		std::memset(brecv.data(), 0xee, brecv.size());
		amr = reg_mr(a->pd.get(), abuf.data(), kBuf, IBV_ACCESS_LOCAL_WRITE);
		brmr = reg_mr(b->pd.get(), brecv.data(), brecv.size(), IBV_ACCESS_LOCAL_WRITE);

		ca_ = HwCounters(a->devname);
		cb_ = HwCounters(b->devname);
		counters_ = o.counters && ca_.have && cb_.have;

		if (pairs == OtherPd) {
			pd2.reset(ibv_alloc_pd(b->ctx.get()));
			if (!pd2)
				throw_errno("ibv_alloc_pd (a second one on B)", errno);
		}
		connect(0);
		if (pairs != One)
			connect(1);
	}

	std::unique_ptr<Endpoint> a, b;
	PdPtr pd2;      // OtherPd: B's second PD
	QpPtr qa1, qb1; // pair 1 (after a, b and pd2: destroyed first)
	Buffer abuf, bbuf, brecv;
	std::vector<uint8_t> ashadow, bshadow;
	MrPtr amr, brmr;

	ibv_qp *qa(int pair) const { return pair ? qa1.get() : a->qp.get(); }
	ibv_qp *qb(int pair) const { return pair ? qb1.get() : b->qp.get(); }
	uint64_t baddr(size_t off) const { return bbuf.addr() + off; }
	bool counters() const { return counters_; }

	// A fresh, connected QP pair in place of pair `pair`.
	void connect(int pair)
	{
		pa_.psn = static_cast<uint32_t>(mix64(seq_++)) & 0xffffff;
		pb_.psn = static_cast<uint32_t>(mix64(seq_++)) & 0xffffff;
		if (pair == 0) {
			a->create_qp(caps_);
			b->create_qp(bcaps_);
			connect_pair(*a, *b, pa_, pb_);
		} else {
			qa1.reset();
			qb1.reset();
			qa1 = a->new_qp(caps_);
			qb1 = b->new_qp(bcaps_, nullptr, pd2.get());
			connect_qp(*a, qa1.get(), *b, qb1->qp_num, pa_, pb_.psn);
			connect_qp(*b, qb1.get(), *a, qa1->qp_num, pb_, pa_.psn);
		}
	}

	// B's MR on [kMrOff, kMrOff + kMrLen) of its buffer.
	MrPtr reg_b(unsigned access) { return reg_mr(b->pd.get(), bbuf.data() + kMrOff, kMrLen, access); }

	// --- checks shared by every step ---

	// Both buffers equal their shadows, byte by byte.
	void check_memory()
	{
		compare("A's buffer", abuf.data(), ashadow);
		compare("B's buffer", bbuf.data(), bshadow);
	}

	// No completion on any CQ (waits a little first, once for all four
	// CQs: a late one shows).
	void check_quiet(std::chrono::milliseconds wait = 50ms)
	{
		std::this_thread::sleep_for(wait);
		struct {
			Endpoint *ep;
			ibv_cq *cq;
			const char *name;
		} cqs[] = {{a.get(), a->scq.get(), "A's send CQ"},
			   {a.get(), a->rcq.get(), "A's receive CQ"},
			   {b.get(), b->scq.get(), "B's send CQ"},
			   {b.get(), b->rcq.get(), "B's receive CQ"}};
		for (auto &q : cqs) {
			auto w = collect(*q.ep, q.cq, 1, 1ms);
			if (!w.empty())
				c_.fail(strf("unexpected completion on %s: wr_id 0x%" PRIx64 " status %s opcode %s qp 0x%x",
					     q.name, w[0].wr_id, ibv_wc_status_str(w[0].status),
					     wc_opcode_str(w[0].opcode), w[0].qp_num));
		}
	}

	void expect_state(ibv_qp *qp, const char *who, ibv_qp_state want)
	{
		auto t0 = Clock::now();
		ibv_qp_state s;
		while ((s = qp_state(qp)) != want && Clock::now() - t0 < 2s)
			std::this_thread::sleep_for(1ms);
		c_.expect(s == want, strf("%s QP 0x%x in %s (got %s)", who, qp->qp_num, qp_state_str(want),
					  qp_state_str(s)));
	}

	// Exactly one completion on cq, for wr_id from qp.
	std::optional<ibv_wc> one(Endpoint &ep, ibv_cq *cq, const char *cqname, uint64_t wr_id, ibv_qp *qp)
	{
		auto w = collect(ep, cq, 1, 10s);
		if (!c_.expect(w.size() == 1, strf("a completion on %s within 10 s", cqname)))
			return {};
		c_.expect(w[0].wr_id == wr_id, strf("%s: wr_id 0x%" PRIx64 " (expected 0x%" PRIx64 ")", cqname,
						    w[0].wr_id, wr_id));
		c_.expect(w[0].qp_num == qp->qp_num,
			  strf("%s: qp_num 0x%x (expected 0x%x)", cqname, w[0].qp_num, qp->qp_num));
		return w[0];
	}

	// --- remote accesses from A ---

	// The access must succeed and do exactly what it should.
	void ok(const Access &x)
	{
		c_.step("succeeds: " + describe(x));
		auto wc = post_access(x);
		if (!wc)
			return;
		if (c_.expect(wc->status == IBV_WC_SUCCESS,
			      strf("status %s (expected success)", ibv_wc_status_str(wc->status)))) {
			ibv_wc_opcode want_op[] = {IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_COMP_SWAP,
						   IBV_WC_FETCH_ADD};
			ibv_wc_opcode wop = want_op[static_cast<int>(x.op)];
			c_.expect(wc->opcode == wop,
				  strf("opcode %s (expected %s)", wc_opcode_str(wc->opcode), wc_opcode_str(wop)));
			if (x.op == Op::Read)
				c_.expect(wc->byte_len == x.len, strf("byte_len %u (expected %u)", wc->byte_len, x.len));
			if (x.op == Op::Cas || x.op == Op::Fadd)
				c_.expect(wc->byte_len == 8, strf("byte_len %u (expected 8)", wc->byte_len));
		}
		// What it did to the shadows.
		switch (x.op) {
		case Op::Write:
			std::memcpy(&bshadow[x.off], &ashadow[kSrcOff], x.len);
			break;
		case Op::Read:
			std::memcpy(&ashadow[kSinkOff], &bshadow[x.off], x.len);
			break;
		case Op::Cas:
		case Op::Fadd: {
			uint64_t old, now;
			std::memcpy(&old, &bshadow[x.off], 8);
			if (x.op == Op::Cas)
				now = old == x.cmp ? x.swap : old;
			else
				now = old + x.cmp;
			std::memcpy(&bshadow[x.off], &now, 8);
			std::memcpy(&ashadow[kResOff], &old, 8);
			uint64_t got;
			std::memcpy(&got, abuf.data() + kResOff, 8);
			c_.expect(got == old, strf("returned original value 0x%016" PRIx64 " (expected 0x%016" PRIx64 ")",
						   got, old));
			break;
		}
		}
		check_memory();
		check_quiet();
		c_.expect(qp_state(qa(x.pair)) == IBV_QPS_RTS, "A's QP still RTS");
		c_.expect(qp_state(qb(x.pair)) == IBV_QPS_RTS, "B's QP still RTS");
	}

	// The access must be refused with IBV_WC_REM_ACCESS_ERR, change nothing,
	// and take both QPs of its pair to ERR; then the pair is replaced.
	void refused(const Access &x, const std::string &why)
	{
		c_.step("refused (" + why + "): " + describe(x));
		uint64_t nak0 = 0, fatal0 = 0;
		if (counters_) {
			std::this_thread::sleep_for(30ms); // hw_counters are cached for 10 ms
			nak0 = cb_.get("rem_access_nak_sent");
			fatal0 = ca_.get("rcvd_fatal_nak");
		}
		auto wc = post_access(x);
		if (wc)
			c_.expect(wc->status == IBV_WC_REM_ACCESS_ERR,
				  strf("status %s (expected %s)", ibv_wc_status_str(wc->status),
				       ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR)));
		expect_state(qa(x.pair), "A's", IBV_QPS_ERR);
		expect_state(qb(x.pair), "B's", IBV_QPS_ERR);
		check_memory();
		check_quiet();
		if (counters_) {
			// The NAK is counted by the time the completion is seen, but the
			// core caches hw_counters for 10 ms: wait until both moved (up
			// to 5 s; a fixed 30 ms was a guess a stalled guest can beat),
			// then once more past the cache, so that an extra NAK shows.
			auto t0 = Clock::now();
			uint64_t nak, fatal;
			do {
				std::this_thread::sleep_for(30ms);
				nak = cb_.get("rem_access_nak_sent");
				fatal = ca_.get("rcvd_fatal_nak");
			} while ((nak <= nak0 || fatal <= fatal0) && Clock::now() - t0 < 5s);
			std::this_thread::sleep_for(30ms);
			nak = cb_.get("rem_access_nak_sent");
			fatal = ca_.get("rcvd_fatal_nak");
			c_.expect(nak == nak0 + 1, strf("%s rem_access_nak_sent +1 (%" PRIu64 " -> %" PRIu64 ")",
							b->devname.c_str(), nak0, nak));
			c_.expect(fatal == fatal0 + 1, strf("%s rcvd_fatal_nak +1 (%" PRIu64 " -> %" PRIu64 ")",
							    a->devname.c_str(), fatal0, fatal));
		}
		connect(x.pair);
	}

	// --- binding and invalidation on B ---

	enum class Api { Post, Wr };
	static constexpr ibv_wc_status kAnyError = IBV_WC_GENERAL_ERR;

	// ibv_bind_mw (type 1): returns the new key; the bind completes with want.
	uint32_t bind1(ibv_mw *mw, ibv_mr *mr, size_t off, size_t len, unsigned access,
		       ibv_wc_status want = IBV_WC_SUCCESS, int pair = 0)
	{
		uint32_t old = mw->rkey;
		c_.step(strf("ibv_bind_mw type 1 (key 0x%x) to B+%zu len %zu access 0x%x via B's pair %d%s", old, off,
			     len, access, pair, want == IBV_WC_SUCCESS ? "" : " fails"));
		ibv_mw_bind bind{};
		bind.wr_id = next_id();
		bind.send_flags = IBV_SEND_SIGNALED;
		bind.bind_info.mr = len || mr ? mr : nullptr;
		bind.bind_info.addr = len ? baddr(off) : 0;
		bind.bind_info.length = len;
		bind.bind_info.mw_access_flags = access;
		int rc = ibv_bind_mw(qb(pair), mw, &bind);
		if (!c_.expect(rc == 0, strf("ibv_bind_mw returned %d (%s)", rc, strerror(rc))))
			return mw->rkey;
		c_.expect(mw->rkey == ibv_inc_rkey(old),
			  strf("new rkey 0x%x is the old one incremented (0x%x)", mw->rkey, ibv_inc_rkey(old)));
		finish_local(bind.wr_id, pair, IBV_WC_BIND_MW, want);
		return mw->rkey;
	}

	// One signaled work request on B's QP of pair, by ibv_post_send (fill
	// sets its opcode and fields) or by the ibv_wr_* API (add adds it between
	// ibv_wr_start and ibv_wr_complete); then its completion: opcode op,
	// status want.
	template <typename Fill, typename Add>
	void post_b(Api api, int pair, ibv_wc_opcode op, ibv_wc_status want, Fill fill, Add add)
	{
		uint64_t id = next_id();
		int rc;
		if (api == Api::Post) {
			ibv_send_wr w{}, *bad = nullptr;
			w.wr_id = id;
			w.send_flags = IBV_SEND_SIGNALED;
			fill(w);
			rc = ibv_post_send(qb(pair), &w, &bad);
		} else {
			ibv_qp_ex *x = qpx(pair);
			ibv_wr_start(x);
			x->wr_id = id;
			x->wr_flags = IBV_SEND_SIGNALED;
			add(x);
			rc = ibv_wr_complete(x);
		}
		if (!c_.expect(rc == 0, strf("posting returned %d (%s)", rc, strerror(rc))))
			return;
		finish_local(id, pair, op, want);
	}

	// A type 2 bind with key `key` by a BIND_MW work request.
	void bind2(Api api, ibv_mw *mw, uint32_t key, ibv_mr *mr, size_t off, size_t len, unsigned access,
		   ibv_wc_status want = IBV_WC_SUCCESS, int pair = 0)
	{
		c_.step(strf("%s type 2 key 0x%x to B+%zu len %zu access 0x%x via B's pair %d%s",
			     api == Api::Post ? "ibv_post_send(IBV_WR_BIND_MW)" : "ibv_wr_bind_mw", key, off, len,
			     access, pair, want == IBV_WC_SUCCESS ? "" : " fails"));
		ibv_mw_bind_info bi{};
		bi.mr = mr;
		bi.addr = baddr(off);
		bi.length = len;
		bi.mw_access_flags = access;
		post_b(
			api, pair, IBV_WC_BIND_MW, want,
			[&](ibv_send_wr &w) {
				w.opcode = IBV_WR_BIND_MW;
				w.bind_mw.mw = mw;
				w.bind_mw.rkey = key;
				w.bind_mw.bind_info = bi;
			},
			[&](ibv_qp_ex *x) { ibv_wr_bind_mw(x, mw, key, &bi); });
	}

	void local_inv(Api api, uint32_t key, int pair = 0, ibv_wc_status want = IBV_WC_SUCCESS)
	{
		c_.step(strf("%s of key 0x%x via B's pair %d%s",
			     api == Api::Post ? "ibv_post_send(IBV_WR_LOCAL_INV)" : "ibv_wr_local_inv", key, pair,
			     want == IBV_WC_SUCCESS ? "" : " fails"));
		post_b(
			api, pair, IBV_WC_LOCAL_INV, want,
			[&](ibv_send_wr &w) {
				w.opcode = IBV_WR_LOCAL_INV;
				w.invalidate_rkey = key;
			},
			[&](ibv_qp_ex *x) { ibv_wr_local_inv(x, key); });
	}

	// A sends kSendInvLen bytes with SEND_WITH_INV of key to B (pair 0),
	// into a receive B posts first.
	void send_inv(uint32_t key)
	{
		c_.step(strf("A: SEND_WITH_INV of key 0x%x, %zu bytes", key, kSendInvLen));
		uint64_t rid = next_id(), sid = next_id();
		ibv_sge rs{brecv.addr(), static_cast<uint32_t>(kRecvLen), brmr->lkey};
		ibv_recv_wr rwr{}, *rbad = nullptr;
		rwr.wr_id = rid;
		rwr.sg_list = &rs;
		rwr.num_sge = 1;
		int rc = ibv_post_recv(qb(0), &rwr, &rbad);
		if (!c_.expect(rc == 0, strf("B: ibv_post_recv returned %d", rc)))
			return;
		for (size_t i = 0; i < kSendInvLen; i++)
			abuf.data()[kSrcOff + i] = ashadow[kSrcOff + i] = pat(seq_, i);
		seq_++;
		ibv_sge ss{abuf.addr() + kSrcOff, static_cast<uint32_t>(kSendInvLen), amr->lkey};
		ibv_send_wr wr{}, *bad = nullptr;
		wr.wr_id = sid;
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.sg_list = &ss;
		wr.num_sge = 1;
		wr.invalidate_rkey = key;
		rc = ibv_post_send(qa(0), &wr, &bad);
		if (!c_.expect(rc == 0, strf("A: ibv_post_send(SEND_WITH_INV) returned %d", rc)))
			return;
		if (auto w = one(*a, a->scq.get(), "A's send CQ", sid, qa(0))) {
			c_.expect(w->status == IBV_WC_SUCCESS, strf("A: SEND_WITH_INV status %s", ibv_wc_status_str(w->status)));
			c_.expect(w->opcode == IBV_WC_SEND, strf("A: opcode %s (expected SEND)", wc_opcode_str(w->opcode)));
		}
		if (auto w = one(*b, b->rcq.get(), "B's receive CQ", rid, qb(0))) {
			c_.expect(w->status == IBV_WC_SUCCESS, strf("B: receive status %s", ibv_wc_status_str(w->status)));
			c_.expect(w->opcode == IBV_WC_RECV, strf("B: opcode %s (expected RECV)", wc_opcode_str(w->opcode)));
			c_.expect(w->byte_len == kSendInvLen, strf("B: byte_len %u (expected %zu)", w->byte_len, kSendInvLen));
			c_.expect(w->wc_flags & IBV_WC_WITH_INV, strf("B: IBV_WC_WITH_INV set (wc_flags 0x%x)", w->wc_flags));
			c_.expect(!(w->wc_flags & IBV_WC_WITH_IMM), "B: IBV_WC_WITH_IMM not set");
			c_.expect(w->invalidated_rkey == key,
				  strf("B: invalidated_rkey 0x%x (expected 0x%x)", w->invalidated_rkey, key));
			bool data = std::memcmp(brecv.data(), abuf.data() + kSrcOff, kSendInvLen) == 0;
			c_.expect(data, "B: the received bytes are the sent ones");
			bool rest = true;
			for (size_t i = kSendInvLen; i < brecv.size(); i++)
				rest &= brecv.data()[i] == 0xee;
			c_.expect(rest, "B: the receive buffer beyond the message untouched");
		}
		std::memset(brecv.data(), 0xee, brecv.size());
		check_memory();
		check_quiet();
	}

private:
	const Options &o_;
	StepChecker &c_;
	QpCaps caps_, bcaps_;
	ConnParams pa_, pb_;
	HwCounters ca_{""}, cb_{""};
	bool counters_ = false;
	uint64_t seq_ = 1, id_ = 0x1000;

	uint64_t next_id() { return ++id_; }

	ibv_qp_ex *qpx(int pair)
	{
		ibv_qp_ex *x = ibv_qp_to_qp_ex(qb(pair));
		if (!x)
			throw Error("ibv_qp_to_qp_ex returned NULL for a QP created with send_ops_flags");
		return x;
	}

public:
	// A local operation on B: one completion on B's send CQ, and on error
	// B's QP in ERR (then the pair is replaced).
	// want kAnyError: any error status (printed).
	void finish_local(uint64_t id, int pair, ibv_wc_opcode op, ibv_wc_status want)
	{
		ibv_qp *qp = qb(pair);
		if (auto w = one(*b, b->scq.get(), "B's send CQ", id, qp)) {
			if (want == kAnyError) {
				c_.expect(w->status != IBV_WC_SUCCESS && w->status != IBV_WC_WR_FLUSH_ERR,
					  strf("an error completion (got %s)", ibv_wc_status_str(w->status)));
				std::printf("      info: completed with %s\n", ibv_wc_status_str(w->status));
			} else {
				c_.expect(w->status == want, strf("status %s (expected %s)",
								  ibv_wc_status_str(w->status), ibv_wc_status_str(want)));
			}
			if (want == IBV_WC_SUCCESS)
				c_.expect(w->opcode == op, strf("opcode %s (expected %s)", wc_opcode_str(w->opcode),
								wc_opcode_str(op)));
		}
		check_memory();
		check_quiet();
		if (want == IBV_WC_SUCCESS) {
			c_.expect(qp_state(qp) == IBV_QPS_RTS, "B's QP still RTS");
			return;
		}
		expect_state(qp, "B's", IBV_QPS_ERR);
		c_.expect(qp_state(qa(pair)) == IBV_QPS_RTS, "A's QP still RTS");
		connect(pair);
	}

private:
	// Prepare A's side, post the access, return its completion (checked for
	// wr_id and qp_num).
	std::optional<ibv_wc> post_access(const Access &x)
	{
		ibv_qp *qp = qa(x.pair);
		// Fresh bytes where the access reads or lands locally.
		size_t loc = x.op == Op::Write ? kSrcOff : x.op == Op::Read ? kSinkOff : kResOff;
		uint32_t llen = x.op == Op::Write || x.op == Op::Read ? x.len : 8;
		for (size_t i = 0; i < llen; i++)
			abuf.data()[loc + i] = ashadow[loc + i] = pat(seq_, i);
		seq_++;
		ibv_sge sge{abuf.addr() + loc, llen, amr->lkey};
		ibv_send_wr wr{}, *bad = nullptr;
		wr.wr_id = next_id();
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		switch (x.op) {
		case Op::Write:
		case Op::Read:
			wr.opcode = x.op == Op::Write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
			wr.wr.rdma.remote_addr = baddr(x.off);
			wr.wr.rdma.rkey = x.rkey;
			break;
		case Op::Cas:
		case Op::Fadd:
			wr.opcode = x.op == Op::Cas ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
			wr.wr.atomic.remote_addr = baddr(x.off);
			wr.wr.atomic.rkey = x.rkey;
			wr.wr.atomic.compare_add = x.cmp;
			wr.wr.atomic.swap = x.swap;
			break;
		}
		int rc = ibv_post_send(qp, &wr, &bad);
		if (!c_.expect(rc == 0, strf("ibv_post_send returned %d (%s)", rc, strerror(rc))))
			return {};
		return one(*a, a->scq.get(), "A's send CQ", wr.wr_id, qp);
	}

	void compare(const char *what, const uint8_t *got, const std::vector<uint8_t> &want)
	{
		if (std::memcmp(got, want.data(), want.size()) == 0) {
			c_.expect(true, std::string(what) + " as expected");
			return;
		}
		size_t first = SIZE_MAX, last = 0, n = 0;
		for (size_t i = 0; i < want.size(); i++) {
			if (got[i] == want[i])
				continue;
			first = std::min(first, i);
			last = i;
			n++;
		}
		c_.fail(strf("%s: %zu byte(s) differ in [%zu, %zu]; first at %zu: 0x%02x, expected 0x%02x", what, n, first,
			     last, first, got[first], want[first]));
		// Report once, then go on from what is there.
		std::vector<uint8_t> &w = const_cast<std::vector<uint8_t> &>(want);
		std::memcpy(w.data(), got, w.size());
	}
};

// Shortcuts.
Access wr(uint32_t rkey, size_t off, uint32_t len, int pair = 0) { return {Op::Write, rkey, off, len, 0, 0, pair}; }
Access rd(uint32_t rkey, size_t off, uint32_t len, int pair = 0) { return {Op::Read, rkey, off, len, 0, 0, pair}; }
Access cas(uint32_t rkey, size_t off, uint64_t cmp, uint64_t swap, int pair = 0)
{
	return {Op::Cas, rkey, off, 8, cmp, swap, pair};
}
Access fadd(uint32_t rkey, size_t off, uint64_t add, int pair = 0) { return {Op::Fadd, rkey, off, 8, add, 0, pair}; }

uint64_t load64(const Fx &f, size_t off)
{
	uint64_t v;
	std::memcpy(&v, &f.bshadow[off], 8);
	return v;
}

// Everything a window with all rights must allow over [off, off + len):
// WRITE and READ of the whole window and of its first and last bytes,
// CMP_SWP (hit and miss) and FETCH_ADD on its first and last whole words.
void full_use(Fx &f, uint32_t key, size_t off, size_t len, int pair = 0)
{
	auto L = static_cast<uint32_t>(len);
	f.ok(wr(key, off, L, pair));
	f.ok(rd(key, off, L, pair));
	f.ok(wr(key, off, 1, pair));
	f.ok(wr(key, off + len - 1, 1, pair));
	f.ok(rd(key, off + len - 1, 1, pair));
	size_t w0 = (off + 7) & ~size_t(7), w1 = (off + len - 8) & ~size_t(7);
	f.ok(cas(key, w0, load64(f, w0), 0x1122334455667788ULL, pair));
	f.ok(cas(key, w0, 0xdeadbeef, 0x99, pair)); // miss: unchanged
	f.ok(fadd(key, w1, 0x100000001ULL, pair));
	f.ok(fadd(key, w1, ~uint64_t(0), pair)); // wraps
	f.ok(rd(key, off, L, pair));
}

// A quick "the key works" over [off, off + len).
void some_use(Fx &f, uint32_t key, size_t off, size_t len, int pair = 0)
{
	f.ok(wr(key, off, static_cast<uint32_t>(len), pair));
	f.ok(rd(key, off, static_cast<uint32_t>(len), pair));
	size_t w = (off + 7) & ~size_t(7);
	f.ok(fadd(key, w, 5, pair));
}

// What most type 1 cases start from: B's MR (kMrBind) and a type 1 window
// bound to W1 with every right, through key.
struct BoundT1 {
	MrPtr mr;
	MwPtr mw; // released before mr
	uint32_t key;
};
BoundT1 bound_t1(Fx &f)
{
	MrPtr mr = f.reg_b(kMrBind);
	MwPtr mw = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_1);
	uint32_t key = f.bind1(mw.get(), mr.get(), kW1Off, kW1Len, kRWA);
	return {std::move(mr), std::move(mw), key};
}

struct Env {
	const Options &opt;
	StepChecker &chk;
};

// --- type 1 ----------------------------------------------------------------------------

void c_t1_access(Env &e)
{
	Fx f(e.opt, e.chk);
	MrPtr mr = f.reg_b(kMrBind);
	MwPtr mw = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_1);
	e.chk.step("the window is type 1, of B's PD");
	e.chk.expect(mw->type == IBV_MW_TYPE_1 && mw->pd == f.b->pd.get(), "type and PD");
	uint32_t k = f.bind1(mw.get(), mr.get(), kW1Off, kW1Len, kRWA);
	full_use(f, k, kW1Off, kW1Len);
	// The same MR, a second window over an overlapping range, both usable.
	MwPtr mw2 = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_1);
	uint32_t k2 = f.bind1(mw2.get(), mr.get(), kW3Off, kW3Len, kRWA);
	e.chk.step("two windows have different keys");
	e.chk.expect(k2 != k && (k2 >> 8) != (k >> 8), strf("0x%x vs 0x%x", k, k2));
	some_use(f, k2, kW3Off, kW3Len);
	some_use(f, k, kW1Off, kW1Len);
}

void c_t1_bounds(Env &e)
{
	Fx f(e.opt, e.chk);
	auto [mr, mw, k] = bound_t1(f);
	const size_t end = kW1Off + kW1Len;
	f.ok(wr(k, kW1Off, 64));
	f.refused(wr(k, kW1Off - 1, 64), "starts one byte before the window");
	f.ok(wr(k, end - 64, 64)); // type 1: still bound on the new QPs
	f.refused(wr(k, end - 63, 64), "ends one byte past the window");
	f.refused(rd(k, end - 100, 101), "READ ends one byte past the window");
	f.refused(rd(k, kW1Off - 1, 1), "READ of the byte before the window");
	size_t last = (end - 8) & ~size_t(7); // 14280: the last whole word
	f.ok(fadd(k, last, 1));
	f.refused(fadd(k, last + 8, 1), "atomic word crossing the window's end");
	f.refused(cas(k, (kW1Off & ~size_t(7)), 0, 1), "atomic word crossing the window's start");
	f.refused(wr(k, kW1Off, kW1Len + 1), "one byte longer than the window");
	// Inside the MR, far from the window.
	f.refused(wr(k, kW2Off, 16), "inside the MR but outside the window");
	f.ok(rd(k, kW1Off, kW1Len));
}

void c_t1_rights(Env &e)
{
	Fx f(e.opt, e.chk);
	MrPtr mr = f.reg_b(kMrBind);
	MwPtr ro = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_1);
	MwPtr wo = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_1);
	MwPtr rw = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_1);
	uint32_t kro = f.bind1(ro.get(), mr.get(), kW1Off, kW1Len, kR);
	uint32_t kwo = f.bind1(wo.get(), mr.get(), kW1Off, kW1Len, kW);
	uint32_t krw = f.bind1(rw.get(), mr.get(), kW2Off, kW2Len, kR | kW);
	size_t w = (kW1Off + 15) & ~size_t(7);
	f.ok(rd(kro, kW1Off, kW1Len));
	f.refused(wr(kro, kW1Off, 64), "WRITE through a read-only window");
	f.refused(fadd(kro, w, 1), "atomic through a read-only window");
	f.ok(wr(kwo, kW1Off, kW1Len));
	f.refused(rd(kwo, kW1Off, 64), "READ through a write-only window");
	f.refused(cas(kwo, w, 0, 1), "atomic through a write-only window");
	f.ok(wr(krw, kW2Off, kW2Len));
	f.ok(rd(krw, kW2Off, kW2Len));
	f.refused(fadd(krw, (kW2Off + 7) & ~size_t(7), 1), "atomic through a window without REMOTE_ATOMIC");
	f.ok(rd(kro, kW1Off, kW1Len));
}

void c_t1_mr_rkey(Env &e)
{
	Fx f(e.opt, e.chk);
	auto [mr, mw, k] = bound_t1(f);
	f.ok(wr(k, kW1Off, 100));
	f.refused(wr(mr->rkey, kW1Off, 100), "the MR's own rkey, MR without remote rights");
	f.refused(rd(mr->rkey, kW1Off, 100), "the MR's own rkey, MR without remote rights");
	f.refused(fadd(mr->rkey, (kW1Off + 7) & ~size_t(7), 1), "the MR's own rkey, MR without remote rights");
	f.ok(rd(k, kW1Off, 100));
}

void c_t1_rebind(Env &e)
{
	Fx f(e.opt, e.chk);
	auto [mr, mw, k1] = bound_t1(f);
	some_use(f, k1, kW1Off, kW1Len);
	// Rebind to W3, which overlaps W1: the old key is refused even where the
	// ranges overlap, the new one works on W3 only.
	uint32_t k2 = f.bind1(mw.get(), mr.get(), kW3Off, kW3Len, kRWA);
	e.chk.step("the rebind changed the key, not the window");
	e.chk.expect(k2 != k1 && (k2 >> 8) == (k1 >> 8), strf("0x%x -> 0x%x", k1, k2));
	f.refused(wr(k1, kW3Off, 64), "the old key after a rebind (in both ranges)");
	f.refused(rd(k1, kW1Off, 64), "the old key after a rebind (old range)");
	some_use(f, k2, kW3Off, kW3Len);
	f.refused(wr(k2, kW1Off, 64), "the new key outside its new range (old range)");
	// Rebind through a different QP (a fresh one) to W2, read-only now.
	f.connect(0);
	uint32_t k3 = f.bind1(mw.get(), mr.get(), kW2Off, kW2Len, kR);
	f.ok(rd(k3, kW2Off, kW2Len));
	f.refused(wr(k3, kW2Off, 8), "WRITE after a rebind read-only");
	f.refused(rd(k2, kW2Off, 8), "the previous key");
}

void c_t1_unbind(Env &e)
{
	Fx f(e.opt, e.chk);
	auto [mr, mw, k1] = bound_t1(f);
	some_use(f, k1, kW1Off, kW1Len);
	uint32_t k2 = f.bind1(mw.get(), nullptr, 0, 0, 0); // length 0: unbind
	f.refused(wr(k1, kW1Off, 64), "the key of an unbound window");
	f.refused(rd(k2, kW1Off, 64), "the key the unbind produced");
	// Unbinding through an MR-carrying bind with length 0, then bind again.
	uint32_t k3 = f.bind1(mw.get(), mr.get(), kW2Off, kW2Len, kRWA);
	some_use(f, k3, kW2Off, kW2Len);
	ibv_mw_bind ub{};
	e.chk.step("unbind with the MR named and length 0");
	ub.wr_id = 0x77;
	ub.send_flags = IBV_SEND_SIGNALED;
	ub.bind_info.mr = mr.get();
	ub.bind_info.addr = 0;
	ub.bind_info.length = 0;
	int rc = ibv_bind_mw(f.b->qp.get(), mw.get(), &ub);
	if (e.chk.expect(rc == 0, strf("ibv_bind_mw returned %d", rc))) {
		auto w = collect(*f.b, f.b->scq.get(), 1, 10s);
		if (e.chk.expect(w.size() == 1, "a completion"))
			e.chk.expect(w[0].status == IBV_WC_SUCCESS && w[0].opcode == IBV_WC_BIND_MW && w[0].wr_id == 0x77,
				     strf("BIND_MW success (status %s)", ibv_wc_status_str(w[0].status)));
	}
	f.refused(fadd(k3, (kW2Off + 7) & ~size_t(7), 1), "the key of a window unbound with the MR named");
	// Unbound, the MR can go.
	e.chk.step("dereg of the MR once its window is unbound");
	rc = ibv_dereg_mr(mr.get());
	if (e.chk.expect(rc == 0, strf("ibv_dereg_mr returned %d (%s)", rc, strerror(rc))))
		(void)mr.release();
	f.check_quiet();
}

void c_t1_bind_errors(Env &e)
{
	Fx f(e.opt, e.chk);
	MrPtr mr = f.reg_b(kMrBind);
	MrPtr nobind = reg_mr(f.b->pd.get(), f.bbuf.data() + kMrOff, kMrLen, IBV_ACCESS_LOCAL_WRITE);
	MrPtr nolw = reg_mr(f.b->pd.get(), f.bbuf.data() + kMrOff, kMrLen, IBV_ACCESS_MW_BIND);
	MwPtr mw = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_1);
	uint32_t k1 = f.bind1(mw.get(), mr.get(), kW1Off, kW1Len, kRWA);
	f.bind1(mw.get(), nobind.get(), kW2Off, kW2Len, kR, IBV_WC_MW_BIND_ERR);
	f.bind1(mw.get(), mr.get(), kMrOff - 1, 100, kR, IBV_WC_MW_BIND_ERR);         // starts before the MR
	f.bind1(mw.get(), mr.get(), kMrOff + kMrLen - 99, 100, kR, IBV_WC_MW_BIND_ERR); // ends after it
	f.bind1(mw.get(), nolw.get(), kW2Off, kW2Len, kW, IBV_WC_MW_BIND_ERR);        // C10-74
	// None of these changed the binding: the key from before still works.
	some_use(f, k1, kW1Off, kW1Len);
	// A read-only window on an MR without local write is fine.
	MwPtr mw2 = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_1);
	uint32_t k2 = f.bind1(mw2.get(), nolw.get(), kW2Off, kW2Len, kR);
	f.ok(rd(k2, kW2Off, kW2Len));
}

// LOCAL_INV names type 2 windows (and fast-reg MRs) only (o10-37.2.26): a
// type 1 window's key must fail (the exact status is not pinned down) and
// leave the window bound; so must the MR's key.
void c_t1_local_inv(Env &e)
{
	Fx f(e.opt, e.chk);
	auto [mr, mw, k] = bound_t1(f);
	f.local_inv(Fx::Api::Post, k, 0, Fx::kAnyError);
	some_use(f, k, kW1Off, kW1Len);
	f.local_inv(Fx::Api::Wr, mr->rkey, 0, Fx::kAnyError);
	some_use(f, k, kW1Off, kW1Len);
}

// A window's key is an R_Key only: as the lkey of B's own SEND it is
// refused locally (LOC_PROT_ERR), nothing reaches A, and the window still
// works remotely.
void c_t1_key_as_lkey(Env &e)
{
	StepChecker &c = e.chk;
	Fx f(e.opt, e.chk);
	auto [mr, mw, k] = bound_t1(f);
	c.step("B: SEND from its buffer with the window's key as lkey fails with LOC_PROT_ERR");
	ibv_sge rs{f.abuf.addr() + kSinkOff, 256, f.amr->lkey};
	ibv_recv_wr rwr{}, *rbad = nullptr;
	rwr.wr_id = 0x5151;
	rwr.sg_list = &rs;
	rwr.num_sge = 1;
	int rc = ibv_post_recv(f.a->qp.get(), &rwr, &rbad);
	c.expect(rc == 0, strf("A: ibv_post_recv returned %d", rc));
	ibv_sge ss{f.baddr(kW1Off), 64, k};
	ibv_send_wr swr = signaled_wr(0x5252, ss, IBV_WR_SEND), *bad = nullptr;
	rc = ibv_post_send(f.b->qp.get(), &swr, &bad);
	if (c.expect(rc == 0, strf("B: ibv_post_send returned %d", rc)))
		f.finish_local(swr.wr_id, 0, IBV_WC_SEND, IBV_WC_LOC_PROT_ERR); // also: A got nothing
	some_use(f, k, kW1Off, kW1Len);
}

// Windows belong to a PD: B's second PD (pd2, same context) can neither
// bind them nor reach them, and they cannot be bound to its MRs.
void c_other_pd(Env &e)
{
	StepChecker &c = e.chk;
	Fx f(e.opt, e.chk, Fx::OtherPd);
	MrPtr mr = f.reg_b(kMrBind);
	MrPtr mr2 = reg_mr(f.pd2.get(), f.bbuf.data() + kMrOff, kMrLen, kMrBind);
	MwPtr w1 = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_1);
	MwPtr w2 = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_2);
	uint32_t k1 = f.bind1(w1.get(), mr.get(), kW1Off, kW1Len, kRWA);
	some_use(f, k1, kW1Off, kW1Len);
	f.refused(wr(k1, kW1Off, 64, 1), "type 1 window of another PD than the responder QP's");
	f.refused(rd(k1, kW1Off, 64, 1), "type 1 window of another PD than the responder QP's");
	// Through a QP of the other PD.
	f.bind1(w1.get(), mr.get(), kW2Off, kW2Len, kRWA, IBV_WC_MW_BIND_ERR, 1);
	uint32_t k2 = ibv_inc_rkey(w2->rkey);
	f.bind2(Fx::Api::Post, w2.get(), k2, mr.get(), kW2Off, kW2Len, kRWA, IBV_WC_MW_BIND_ERR, 1);
	// To an MR of the other PD: ibv_bind_mw checks the PDs itself, the
	// BIND_MW work request must fail (C10-72).
	c.step("ibv_bind_mw to an MR of another PD fails with EPERM");
	ibv_mw_bind bind{};
	bind.wr_id = 9;
	bind.send_flags = IBV_SEND_SIGNALED;
	bind.bind_info = {mr2.get(), f.baddr(kW2Off), kW2Len, kRWA};
	int rc = ibv_bind_mw(f.b->qp.get(), w1.get(), &bind);
	c.expect(rc == EPERM, strf("returned %d (%s)", rc, strerror(rc)));
	f.check_quiet();
	k2 = ibv_inc_rkey(k2);
	f.bind2(Fx::Api::Wr, w2.get(), k2, mr2.get(), kW2Off, kW2Len, kRWA, IBV_WC_MW_BIND_ERR, 0);
	// The type 1 binding survived all that; the type 2 window is still free.
	some_use(f, k1, kW1Off, kW1Len);
	k2 = ibv_inc_rkey(k2);
	f.bind2(Fx::Api::Wr, w2.get(), k2, mr.get(), kW2Off, kW2Len, kRWA);
	some_use(f, k2, kW2Off, kW2Len);
}

// --- type 2 -------------------------------------------------------------------------

using Api = Fx::Api;

// Bind, use, LOCAL_INV, refused; bind again with a new key, use, LOCAL_INV,
// refused; bind a third time, and the first key stays refused.
void t2_local_inv(Env &e, Api api)
{
	Fx f(e.opt, e.chk);
	MrPtr mr = f.reg_b(kMrBind);
	MwPtr mw = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_2);
	e.chk.step("the window is type 2, of B's PD");
	e.chk.expect(mw->type == IBV_MW_TYPE_2 && mw->pd == f.b->pd.get(), "type and PD");
	uint32_t k1 = ibv_inc_rkey(mw->rkey);
	f.bind2(api, mw.get(), k1, mr.get(), kW1Off, kW1Len, kRWA);
	full_use(f, k1, kW1Off, kW1Len);
	f.local_inv(api, k1);
	f.refused(wr(k1, kW1Off, 64), "after LOCAL_INV");
	uint32_t k2 = ibv_inc_rkey(k1);
	f.bind2(api, mw.get(), k2, mr.get(), kW2Off, kW2Len, kRWA);
	some_use(f, k2, kW2Off, kW2Len);
	f.local_inv(api == Api::Post ? Api::Wr : Api::Post, k2);
	f.refused(rd(k2, kW2Off, 64), "after the second LOCAL_INV");
	uint32_t k3 = ibv_inc_rkey(k2);
	f.bind2(api, mw.get(), k3, mr.get(), kW3Off, kW3Len, kRWA);
	some_use(f, k3, kW3Off, kW3Len);
	f.refused(wr(k1, kW3Off, 64), "the first key, window bound again with another");
}
void c_t2_local_inv_post(Env &e) { t2_local_inv(e, Api::Post); }
void c_t2_local_inv_wr(Env &e) { t2_local_inv(e, Api::Wr); }

void c_t2_send_inv(Env &e)
{
	Fx f(e.opt, e.chk);
	MrPtr mr = f.reg_b(kMrBind);
	MwPtr mw = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_2);
	uint32_t k1 = ibv_inc_rkey(mw->rkey);
	f.bind2(Api::Wr, mw.get(), k1, mr.get(), kW1Off, kW1Len, kRWA);
	some_use(f, k1, kW1Off, kW1Len);
	f.send_inv(k1);
	f.refused(wr(k1, kW1Off, 64), "after SEND_WITH_INV");
	uint32_t k2 = ibv_inc_rkey(k1);
	f.bind2(Api::Post, mw.get(), k2, mr.get(), kW1Off, kW1Len, kRWA);
	some_use(f, k2, kW1Off, kW1Len);
	f.send_inv(k2);
	f.refused(fadd(k2, (kW1Off + 7) & ~size_t(7), 1), "after the second SEND_WITH_INV");
}

void c_t2_dealloc(Env &e)
{
	Fx f(e.opt, e.chk);
	MrPtr mr = f.reg_b(kMrBind);
	MwPtr mw = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_2);
	MwPtr other = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_2);
	uint32_t k1 = ibv_inc_rkey(mw->rkey), ko = ibv_inc_rkey(other->rkey);
	f.bind2(Api::Post, mw.get(), k1, mr.get(), kW1Off, kW1Len, kRWA);
	f.bind2(Api::Wr, other.get(), ko, mr.get(), kW2Off, kW2Len, kRWA);
	some_use(f, k1, kW1Off, kW1Len);
	e.chk.step("ibv_dealloc_mw of the bound window");
	int rc = ibv_dealloc_mw(mw.get());
	if (e.chk.expect(rc == 0, strf("ibv_dealloc_mw returned %d (%s)", rc, strerror(rc))))
		(void)mw.release();
	some_use(f, ko, kW2Off, kW2Len); // the other window is unaffected
	f.refused(wr(k1, kW1Off, 64), "after ibv_dealloc_mw");
	f.refused(rd(k1, kW1Off, 64), "after ibv_dealloc_mw");
}

void c_t2_double_bind(Env &e)
{
	Fx f(e.opt, e.chk, Fx::Two);
	MrPtr mr = f.reg_b(kMrBind);
	MwPtr mw = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_2);
	uint32_t k1 = ibv_inc_rkey(mw->rkey), k2 = ibv_inc_rkey(k1);
	f.bind2(Api::Post, mw.get(), k1, mr.get(), kW1Off, kW1Len, kRWA, IBV_WC_SUCCESS, 0);
	some_use(f, k1, kW1Off, kW1Len);
	// Bound: a second bind fails, through another QP and through its own.
	f.bind2(Api::Post, mw.get(), k2, mr.get(), kW2Off, kW2Len, kRWA, IBV_WC_MW_BIND_ERR, 1);
	some_use(f, k1, kW1Off, kW1Len); // the failed bind changed nothing
	f.bind2(Api::Wr, mw.get(), k2, mr.get(), kW2Off, kW2Len, kRWA, IBV_WC_MW_BIND_ERR, 1);
	f.bind2(Api::Post, mw.get(), k1, mr.get(), kW1Off, kW1Len, kRWA, IBV_WC_MW_BIND_ERR, 0);
}

void c_t2_bind_errors(Env &e)
{
	Fx f(e.opt, e.chk);
	MrPtr mr = f.reg_b(kMrBind);
	MrPtr nobind = reg_mr(f.b->pd.get(), f.bbuf.data() + kMrOff, kMrLen, IBV_ACCESS_LOCAL_WRITE);
	MwPtr mw = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_2);
	uint32_t k = mw->rkey;
	k = ibv_inc_rkey(k);
	f.bind2(Api::Post, mw.get(), k, nobind.get(), kW1Off, kW1Len, kR, IBV_WC_MW_BIND_ERR);
	k = ibv_inc_rkey(k);
	f.bind2(Api::Wr, mw.get(), k, nobind.get(), kW1Off, kW1Len, kRWA, IBV_WC_MW_BIND_ERR);
	k = ibv_inc_rkey(k);
	f.bind2(Api::Post, mw.get(), k, mr.get(), kW1Off, 0, kR, IBV_WC_MW_BIND_ERR); // type 2: never empty
	k = ibv_inc_rkey(k);
	f.bind2(Api::Post, mw.get(), k, mr.get(), kMrOff + kMrLen - 99, 100, kR, IBV_WC_MW_BIND_ERR);
	// Still free: a good bind works, and the keys of the failed ones do not.
	uint32_t bad = k;
	k = ibv_inc_rkey(k);
	f.bind2(Api::Wr, mw.get(), k, mr.get(), kW1Off, kW1Len, kRWA);
	some_use(f, k, kW1Off, kW1Len);
	f.refused(wr(bad, kW1Off, 64), "the key of a failed bind");
}

void c_t2_other_qp(Env &e)
{
	Fx f(e.opt, e.chk, Fx::Two);
	MrPtr mr = f.reg_b(kMrBind);
	MwPtr mw = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_2);
	uint32_t k1 = ibv_inc_rkey(mw->rkey);
	f.bind2(Api::Post, mw.get(), k1, mr.get(), kW1Off, kW1Len, kRWA, IBV_WC_SUCCESS, 0);
	some_use(f, k1, kW1Off, kW1Len, 0);
	f.refused(wr(k1, kW1Off, 64, 1), "type 2B window bound through the other QP pair");
	f.refused(rd(k1, kW1Off, 64, 1), "type 2B window bound through the other QP pair");
	f.refused(fadd(k1, (kW1Off + 7) & ~size_t(7), 1, 1), "type 2B window bound through the other QP pair");
	some_use(f, k1, kW1Off, kW1Len, 0); // still fine through its own
	// Move it to pair 1.
	f.local_inv(Api::Wr, k1, 0);
	uint32_t k2 = ibv_inc_rkey(k1);
	f.bind2(Api::Wr, mw.get(), k2, mr.get(), kW1Off, kW1Len, kRWA, IBV_WC_SUCCESS, 1);
	some_use(f, k2, kW1Off, kW1Len, 1);
	f.refused(wr(k2, kW1Off, 64, 0), "type 2B window bound through the other QP pair");
	some_use(f, k2, kW1Off, kW1Len, 1);
}

// --- lifetime -------------------------------------------------------------------------

void dereg_busy(Env &e, ibv_mw_type type)
{
	StepChecker &c = e.chk;
	Fx f(e.opt, e.chk);
	MrPtr mr = f.reg_b(kMrBind);
	MwPtr mw = alloc_mw(f.b->pd.get(), type);
	MwPtr mw2 = alloc_mw(f.b->pd.get(), type);
	uint32_t k, k2;
	if (type == IBV_MW_TYPE_1) {
		k = f.bind1(mw.get(), mr.get(), kW1Off, kW1Len, kRWA);
		k2 = f.bind1(mw2.get(), mr.get(), kW2Off, kW2Len, kRWA);
	} else {
		k = ibv_inc_rkey(mw->rkey);
		k2 = ibv_inc_rkey(mw2->rkey);
		f.bind2(Api::Post, mw.get(), k, mr.get(), kW1Off, kW1Len, kRWA);
		f.bind2(Api::Wr, mw2.get(), k2, mr.get(), kW2Off, kW2Len, kRWA);
	}
	auto dereg = [&](bool want_ok, const char *what) {
		c.step(strf("ibv_dereg_mr %s", what));
		int rc = ibv_dereg_mr(mr.get());
		if (want_ok) {
			if (c.expect(rc == 0, strf("returned %d (%s), expected success", rc, strerror(rc))))
				(void)mr.release();
		} else {
			c.expect(rc == EBUSY, strf("returned %d (%s), expected EBUSY", rc, strerror(rc)));
			if (rc == 0)
				(void)mr.release();
		}
		f.check_quiet();
	};
	dereg(false, "with two windows bound fails with EBUSY");
	if (!mr)
		return;
	some_use(f, k, kW1Off, kW1Len);
	some_use(f, k2, kW2Off, kW2Len);
	c.step("the window goes");
	int rc;
	if (type == IBV_MW_TYPE_1) {
		rc = ibv_dealloc_mw(mw.get());
		c.expect(rc == 0, strf("ibv_dealloc_mw returned %d", rc));
		if (rc == 0)
			(void)mw.release();
	} else {
		f.local_inv(Api::Post, k); // an invalidated type 2 window is not bound
	}
	dereg(false, "with one window still bound fails with EBUSY");
	if (!mr)
		return;
	some_use(f, k2, kW2Off, kW2Len);
	c.step("the other window goes");
	rc = ibv_dealloc_mw(mw2.get());
	c.expect(rc == 0, strf("ibv_dealloc_mw returned %d", rc));
	if (rc == 0)
		(void)mw2.release();
	dereg(true, "with no window bound succeeds");
	f.refused(wr(k2, kW2Off, 64), "the deallocated window's key, its MR gone");
	if (type == IBV_MW_TYPE_2) {
		// The window that was only invalidated can be bound to another MR.
		MrPtr mr2 = f.reg_b(kMrBind);
		uint32_t k3 = ibv_inc_rkey(k);
		f.bind2(Api::Wr, mw.get(), k3, mr2.get(), kW1Off, kW1Len, kRWA);
		some_use(f, k3, kW1Off, kW1Len);
	}
}
void c_dereg_busy_t1(Env &e) { dereg_busy(e, IBV_MW_TYPE_1); }
void c_dereg_busy_t2(Env &e) { dereg_busy(e, IBV_MW_TYPE_2); }

void c_api_errors(Env &e)
{
	StepChecker &c = e.chk;
	Fx f(e.opt, e.chk);
	c.step("the device reports memory windows");
	ibv_device_attr_ex ax{};
	int rc = ibv_query_device_ex(f.b->ctx.get(), nullptr, &ax);
	if (c.expect(rc == 0, strf("ibv_query_device_ex returned %d", rc))) {
		c.expect(ax.orig_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW, "IBV_DEVICE_MEM_WINDOW");
		c.expect(ax.orig_attr.max_mw > 0, strf("max_mw %d", ax.orig_attr.max_mw));
		c.expect(ax.orig_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B, "IBV_DEVICE_MEM_WINDOW_TYPE_2B");
	}
	for (int t : {0, 3, 0x100}) {
		c.step(strf("ibv_alloc_mw(type %d) fails with EINVAL", t));
		errno = 0;
		ibv_mw *mw = ibv_alloc_mw(f.b->pd.get(), static_cast<ibv_mw_type>(t));
		int err = errno;
		c.expect(!mw, "returned NULL");
		c.expect(err == EINVAL, strf("errno %d (%s)", err, strerror(err)));
		if (mw)
			ibv_dealloc_mw(mw);
	}
	MrPtr mr = f.reg_b(kMrBind);
	MwPtr mw2 = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_2);
	MwPtr mw1 = alloc_mw(f.b->pd.get(), IBV_MW_TYPE_1);
	c.step("windows have distinct keys");
	c.expect((mw1->rkey >> 8) != (mw2->rkey >> 8) && (mw1->rkey >> 8) != (mr->rkey >> 8), "key indexes");
	c.step("ibv_bind_mw on a type 2 window fails with EINVAL");
	ibv_mw_bind bind{};
	bind.wr_id = 1;
	bind.send_flags = IBV_SEND_SIGNALED;
	bind.bind_info = {mr.get(), f.baddr(kW1Off), kW1Len, kRWA};
	uint32_t key0 = mw2->rkey;
	rc = ibv_bind_mw(f.b->qp.get(), mw2.get(), &bind);
	c.expect(rc == EINVAL, strf("returned %d (%s)", rc, strerror(rc)));
	c.expect(mw2->rkey == key0, "the window's rkey unchanged");
	c.step("IBV_WR_BIND_MW with a key of another window fails with EINVAL");
	ibv_send_wr swr{}, *bad = nullptr;
	swr.wr_id = 2;
	swr.opcode = IBV_WR_BIND_MW;
	swr.send_flags = IBV_SEND_SIGNALED;
	swr.bind_mw.mw = mw2.get();
	swr.bind_mw.rkey = mw1->rkey;
	swr.bind_mw.bind_info = bind.bind_info;
	rc = ibv_post_send(f.b->qp.get(), &swr, &bad);
	c.expect(rc == EINVAL, strf("returned %d (%s)", rc, strerror(rc)));
	c.expect(bad == &swr, "bad_wr points at it");
	f.check_quiet();
	c.step("zero-based windows are not supported: EINVAL at post");
	ibv_mw_bind zb = bind;
	zb.bind_info.mw_access_flags |= IBV_ACCESS_ZERO_BASED;
	uint32_t key1 = mw1->rkey;
	rc = ibv_bind_mw(f.b->qp.get(), mw1.get(), &zb);
	c.expect(rc == EINVAL, strf("ibv_bind_mw returned %d (%s)", rc, strerror(rc)));
	c.expect(mw1->rkey == key1, "the window's rkey unchanged");
	{
		ibv_qp_ex *x = ibv_qp_to_qp_ex(f.b->qp.get());
		ibv_wr_start(x);
		x->wr_id = 3;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_bind_mw(x, mw2.get(), ibv_inc_rkey(mw2->rkey), &zb.bind_info);
		rc = ibv_wr_complete(x);
		c.expect(rc == EINVAL, strf("ibv_wr_bind_mw + ibv_wr_complete returned %d (%s)", rc, strerror(rc)));
	}
	f.check_quiet();
	c.expect(qp_state(f.b->qp.get()) == IBV_QPS_RTS, "B's QP still RTS");
	// ibv_post_send may refuse it at post time or fail the bind.
	swr.bind_mw.rkey = ibv_inc_rkey(mw2->rkey);
	swr.bind_mw.bind_info.mw_access_flags |= IBV_ACCESS_ZERO_BASED;
	rc = ibv_post_send(f.b->qp.get(), &swr, &bad);
	if (rc == 0) {
		std::printf("      info: IBV_WR_BIND_MW zero-based accepted at post; it must fail\n");
		f.finish_local(swr.wr_id, 0, IBV_WC_BIND_MW, IBV_WC_MW_BIND_ERR);
	} else {
		c.expect(rc == EINVAL, strf("IBV_WR_BIND_MW zero-based: ibv_post_send returned %d (%s)", rc,
					    strerror(rc)));
		f.check_quiet();
		c.expect(qp_state(f.b->qp.get()) == IBV_QPS_RTS, "B's QP still RTS");
	}
	// Unbound windows' keys are refused.
	f.refused(wr(mw1->rkey, kW1Off, 8), "an unbound type 1 window");
	f.refused(rd(mw2->rkey, kW1Off, 8), "a type 2 window never bound");
	// And the QPs work after all that.
	uint32_t k = f.bind1(mw1.get(), mr.get(), kW1Off, kW1Len, kRWA);
	some_use(f, k, kW1Off, kW1Len);
}

struct Case {
	const char *name, *desc;
	void (*fn)(Env &);
};

const Case kCases[] = {
	{"api_errors", "device caps; alloc_mw bad type EINVAL; ibv_bind_mw on type 2 EINVAL; unbound keys refused",
	 c_api_errors},
	{"t1_access", "type 1 bound to a sub-range: WRITE/READ/CMP_SWP/FETCH_ADD through it, two windows", c_t1_access},
	{"t1_bounds", "type 1: one byte before/after the window, atomics across its edges: REM_ACCESS_ERR",
	 c_t1_bounds},
	{"t1_rights", "type 1: read-only, write-only, no-atomic windows refuse what they lack", c_t1_rights},
	{"t1_mr_rkey", "type 1: the MR's own rkey (no remote rights) refused", c_t1_mr_rkey},
	{"t1_rebind", "type 1 rebind: old key refused, new range and rights in force", c_t1_rebind},
	{"t1_unbind", "type 1 unbind (length 0, with and without the MR): keys refused, MR deregisters",
	 c_t1_unbind},
	{"t1_bind_errors", "type 1 bind to an MR without MW_BIND / beyond the MR / write without local write: "
			   "MW_BIND_ERR, old binding kept",
	 c_t1_bind_errors},
	{"t1_local_inv", "LOCAL_INV of a type 1 window's key / of the MR's key: error, window still bound",
	 c_t1_local_inv},
	{"t1_key_as_lkey", "a window's key as the lkey of B's SEND: LOC_PROT_ERR, nothing sent", c_t1_key_as_lkey},
	{"other_pd", "another PD of B's context: cannot reach, bind, or be bound to B's windows", c_other_pd},
	{"t2_local_inv_post", "type 2 via ibv_post_send: bind, use, LOCAL_INV, refused, rebind", c_t2_local_inv_post},
	{"t2_local_inv_wr", "type 2 via ibv_wr_bind_mw/ibv_wr_local_inv: the same", c_t2_local_inv_wr},
	{"t2_send_inv", "type 2 invalidated by the peer's SEND_WITH_INV (IBV_WC_WITH_INV, invalidated_rkey)",
	 c_t2_send_inv},
	{"t2_dealloc", "type 2 bound, ibv_dealloc_mw: refused; another window unaffected", c_t2_dealloc},
	{"t2_double_bind", "bind of a bound type 2 window (other QP, own QP): MW_BIND_ERR, binding kept",
	 c_t2_double_bind},
	{"t2_bind_errors", "type 2 bind to an MR without MW_BIND, empty, beyond the MR: MW_BIND_ERR; then a good bind",
	 c_t2_bind_errors},
	{"t2_other_qp", "type 2B: refused through another QP pair to the same peer; moved to that pair",
	 c_t2_other_qp},
	{"dereg_busy_t1", "ibv_dereg_mr with type 1 windows bound: EBUSY, windows work; after dealloc: success",
	 c_dereg_busy_t1},
	{"dereg_busy_t2", "ibv_dereg_mr with type 2 windows bound: EBUSY; after LOCAL_INV/dealloc: success",
	 c_dereg_busy_t2},
};

void usage(FILE *f)
{
	std::fprintf(f,
		     "usage: rc_mw [options]\n%s"
		     "  --case NAME          run only this case (repeatable)\n"
		     "  --list               list the cases\n"
		     "  --no-counters        do not check the sroce hw counters\n"
		     "  -v                   print every check\n"
		     "A accesses B's memory through B's windows. Exit status: 0 all cases passed,\n"
		     "1 a case failed, 2 usage error.\n",
		     kCommonUsage);
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	enum { O_CASE = 256, O_LIST, O_NOCNT };
	if (int rc = parse_args("rc_mw", argc, argv, o, "vh",
				{{"case", required_argument, nullptr, O_CASE},
				 {"list", no_argument, nullptr, O_LIST},
				 {"no-counters", no_argument, nullptr, O_NOCNT}},
				usage, [&](int c, const char *arg) {
					switch (c) {
					case O_CASE: o.cases.push_back(arg); return true;
					case O_LIST: o.list = true; return true;
					case O_NOCNT: o.counters = false; return true;
					case 'v': o.verbose = true; return true;
					default: return false;
					}
				});
	    rc >= 0)
		return rc;
	if (int rc = list_or_check_cases("rc_mw", kCases, 20, o.list, o.cases); rc >= 0)
		return rc;
	unsigned checks = 0;
	CaseCounts n = run_cases(kCases, o.cases, [&](const Case &k) {
		StepChecker chk;
		chk.verbose = o.verbose;
		Env env{o, chk};
		auto t0 = Clock::now();
		try {
			k.fn(env);
		} catch (const std::exception &e) {
			chk.fail(std::string("error: ") + e.what());
		}
		chk.end_step();
		checks += chk.checks;
		std::printf("%s %s (%u steps, %u checks, %.1f s)\n", chk.ok ? "PASS" : "FAIL", k.name, chk.steps,
			    chk.checks, secs_since(t0));
		return chk.ok;
	});
	std::printf("rc_mw: %d passed, %d failed (%u checks)\n", n.passed, n.failed, checks);
	return n.failed ? 1 : 0;
}
