// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// rc_errors: the RC error paths, each on a fresh pair of connected QPs (A the
// requester, B the responder, both in this process). For each case: the exact
// completion status of the failing WR on A, A's QP in ERR, the WR posted
// right behind it and a WR posted after the error flushed (IBV_WC_WR_FLUSH_ERR),
// A's receive queue flushed, and on B either "still RTS, nothing consumed,
// nothing written" or, where IBTA puts the responder in the error state too,
// B in ERR with its receives flushed.

#include "common.h"

#include <fcntl.h>
#include <getopt.h>
#include <poll.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <functional>
#include <optional>
#include <thread>

using namespace vt;
using namespace std::chrono_literals;

namespace {

struct Options : CommonOptions {
	std::vector<std::string> cases;
	bool list = false;
	double retry_bound = 5.0; // seconds allowed for RETRY_EXC_ERR
	bool rxe_compat = false;
};

constexpr size_t kBuf = 64 * 1024;
constexpr uint8_t kFillA = 0xaa, kFillB = 0xbb;
constexpr uint64_t kBadId = 1, kBehindId = 2, kAfterId = 3;
constexpr uint64_t kRecvA = 0xa000, kRecvB = 0xb000;
constexpr size_t kBehindOff = 8192; // where the WR behind the bad one writes on B

// A verdict collector for one case (vt::Checker) that also judges work
// completion statuses.
class CaseChecker : public vt::Checker {
public:
	bool compat = false; // --rxe-compat: accept rdma_rxe's known deviations
	int deviations = 0;
	void status(const std::string &what, ibv_wc_status got, ibv_wc_status want)
	{
		expect(got == want, strf("%s: expected %s, got %s", what.c_str(), ibv_wc_status_str(want),
					 ibv_wc_status_str(got)));
	}
	// Like status(), but with --rxe-compat also accepting alt (rdma_rxe's
	// behaviour), reported as a deviation.
	void status(const std::string &what, ibv_wc_status got, ibv_wc_status want, ibv_wc_status alt)
	{
		if (compat && got != want && got == alt) {
			deviate(strf("%s: IBTA says %s, got %s", what.c_str(), ibv_wc_status_str(want),
				     ibv_wc_status_str(got)));
			return;
		}
		status(what, got, want);
	}
	void deviate(const std::string &what)
	{
		deviations++;
		std::printf("    DEVIATION (accepted by --rxe-compat): %s\n", what.c_str());
	}
};

// The two sides of a case, connected.
struct Pair {
	std::unique_ptr<Endpoint> a, b;
	Buffer abuf, bbuf;
	MrPtr amr, bmr;
	ConnParams pa, pb;
};

struct Env {
	const Options &opt;
	CaseChecker &chk;
};

std::unique_ptr<Pair> make_pair(const Options &o, const std::function<void(Pair &)> &tweak = {})
{
	auto p = std::make_unique<Pair>();
	p->a = open_endpoint("A", o.a, o.ipv6, o.use_event, 64);
	p->b = open_endpoint("B", o.b, o.ipv6, o.use_event, 64);
	QpCaps caps;
	caps.max_send_wr = caps.max_recv_wr = 16;
	caps.max_send_sge = caps.max_recv_sge = 2;
	caps.max_inline = 0;
	p->a->create_qp(caps);
	p->b->create_qp(caps);
	p->abuf = Buffer(kBuf);
	p->bbuf = Buffer(kBuf);
	std::memset(p->abuf.data(), kFillA, kBuf);
	std::memset(p->bbuf.data(), kFillB, kBuf);
	const unsigned all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_ATOMIC;
	p->amr = reg_mr(p->a->pd.get(), p->abuf.data(), kBuf, all);
	p->bmr = reg_mr(p->b->pd.get(), p->bbuf.data(), kBuf, all);
	p->pa.mtu = p->pb.mtu = pick_mtu(*p->a, *p->b, o.mtu);
	p->pa.psn = 0x100;
	p->pb.psn = 0x200;
	if (tweak)
		tweak(*p);
	connect_pair(*p->a, *p->b, p->pa, p->pb);
	return p;
}

void post_recv(Endpoint &ep, const Buffer &buf, ibv_mr *mr, uint64_t wr_id, size_t off, uint32_t len,
	       uint32_t lkey_xor = 0)
{
	ibv_sge sge{buf.addr() + off, len, mr->lkey ^ lkey_xor};
	ibv_recv_wr wr{}, *bad = nullptr;
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	int rc = ibv_post_recv(ep.qp.get(), &wr, &bad);
	if (rc)
		throw_errno(ep.label + ": ibv_post_recv", rc);
}

// A valid 64-byte RDMA WRITE from A to B at offset off.
ibv_send_wr good_write(Pair &p, ibv_sge &sge, uint64_t wr_id, size_t off)
{
	sge = {p.abuf.addr() + off, 64, p.amr->lkey};
	ibv_send_wr wr = signaled_wr(wr_id, sge, IBV_WR_RDMA_WRITE);
	wr.wr.rdma.remote_addr = p.bbuf.addr() + off;
	wr.wr.rdma.rkey = p.bmr->rkey;
	return wr;
}

int post_send(Endpoint &ep, ibv_send_wr &wr)
{
	ibv_send_wr *bad = nullptr;
	return ibv_post_send(ep.qp.get(), &wr, &bad);
}

// Wait until qp reaches state want (up to limit); returns the last state.
ibv_qp_state wait_state(ibv_qp *qp, ibv_qp_state want, std::chrono::milliseconds limit, double *took)
{
	auto t0 = Clock::now();
	ibv_qp_state s;
	while ((s = qp_state(qp)) != want && Clock::now() - t0 < limit)
		std::this_thread::sleep_for(1ms);
	*took = secs_since(t0);
	return s;
}

// Affiliated asynchronous events of ep's context, without blocking.
std::vector<std::string> async_events(Endpoint &ep)
{
	std::vector<std::string> v;
	int fd = ep.ctx->async_fd;
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && !(fl & O_NONBLOCK))
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	ibv_async_event ev;
	while (ibv_get_async_event(ep.ctx.get(), &ev) == 0) {
		v.push_back(ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}
	return v;
}

std::string join(const std::vector<std::string> &v)
{
	std::string s;
	for (auto &x : v)
		s += (s.empty() ? "" : ", ") + x;
	return s.empty() ? "none" : s;
}

// What the case expects.
struct Expect {
	Expect(ibv_wc_status r, bool e, std::optional<ibv_wc_status> f) : req(r), resp_err(e), resp_first(f) {}
	ibv_wc_status req; // status of the bad WR on A
	bool resp_err;     // B must end up in ERR
	std::optional<ibv_wc_status> resp_first; // status of B's first receive, if it is consumed
	// rdma_rxe's (6.1) statuses where they differ from IBTA (--rxe-compat)
	std::optional<ibv_wc_status> req_alt, resp_first_alt;
	int b_recvs = 2;
	uint32_t b_recv_len = 256;
	uint32_t b_recv_lkey_xor = 0;
	bool post_einval_alt = false; // rxe's provider rejects it at post time
	std::chrono::milliseconds timeout = 10s;
	double bound = 0; // >0: the error must come within this many seconds
	double least = 0; // >0: ...and not before this many seconds
};

// The common part: pre-post receives, post the bad WR and one behind it,
// then check A, the flushes, and B.
void run_error(Env &env, Pair &p, const Expect &x, const std::function<ibv_send_wr(ibv_sge &)> &bad_wr,
	       const std::function<void(Pair &)> &before_post = {})
{
	CaseChecker &c = env.chk;
	Endpoint &a = *p.a, &b = *p.b;
	post_recv(a, p.abuf, p.amr.get(), kRecvA + 0, 32768, 256);
	post_recv(a, p.abuf, p.amr.get(), kRecvA + 1, 33024, 256);
	for (int i = 0; i < x.b_recvs; i++)
		post_recv(b, p.bbuf, p.bmr.get(), kRecvB + i, 32768 + i * 512, x.b_recv_len, x.b_recv_lkey_xor);
	if (before_post)
		before_post(p);

	ibv_sge s1{}, s2{};
	ibv_send_wr w1 = bad_wr(s1);
	w1.wr_id = kBadId;
	w1.send_flags |= IBV_SEND_SIGNALED;
	ibv_send_wr w2 = good_write(p, s2, kBehindId, kBehindOff);
	auto t0 = Clock::now();
	int rc = post_send(a, w1);
	if (rc == EINVAL && x.post_einval_alt && c.compat) {
		c.deviate("ibv_post_send rejected the WR with EINVAL: nothing goes on the wire");
		return;
	}
	if (!c.expect(rc == 0, "ibv_post_send accepts the bad WR (errors are reported as completions)",
		      strf("returned %s", strerror(rc))))
		return;
	rc = post_send(a, w2);
	c.expect(rc == 0, "ibv_post_send accepts a WR behind it", strf("returned %s", strerror(rc)));

	auto wcs = collect(a, a.scq.get(), 2, x.timeout);
	double el = secs_since(t0);
	if (!c.expect(!wcs.empty(), strf("A: a completion for the bad WR within %.0f s",
					  std::chrono::duration<double>(x.timeout).count())))
		return;
	c.expect(wcs[0].wr_id == kBadId, strf("A: first completion is the bad WR (wr_id %" PRIu64 ")", wcs[0].wr_id));
	c.status("A: bad WR status", wcs[0].status, x.req, x.req_alt.value_or(x.req));
	c.expect(wcs[0].qp_num == a.qpn(), "A: completion qp_num", strf("0x%x vs 0x%x", wcs[0].qp_num, a.qpn()));
	std::printf("    info: the error completion took %.3f s (vendor_err 0x%x)\n", el, wcs[0].vendor_err);
	if (x.bound > 0)
		c.expect(el <= x.bound, strf("A: error within %.1f s (took %.3f s)", x.bound, el));
	if (x.least > 0)
		c.expect(el >= x.least, strf("A: error not before %.3f s (took %.3f s)", x.least, el));
	if (c.expect(wcs.size() == 2, "A: a completion for the WR behind it"))
		c.status(strf("A: WR behind it (wr_id %" PRIu64 ")", wcs[1].wr_id), wcs[1].status,
			 IBV_WC_WR_FLUSH_ERR);

	double took;
	ibv_qp_state s = wait_state(a.qp.get(), IBV_QPS_ERR, 2000ms, &took);
	c.expect(s == IBV_QPS_ERR, strf("A: QP state ERR (got %s after %.3f s)", qp_state_str(s), took));

	// Posted after the error: flushed too, on both queues.
	ibv_sge s3{};
	ibv_send_wr w3 = good_write(p, s3, kAfterId, kBehindOff + 1024);
	rc = post_send(a, w3);
	if (c.expect(rc == 0, "A: ibv_post_send in ERR", strf("returned %s", strerror(rc)))) {
		auto w = collect(a, a.scq.get(), 1, 2000ms);
		if (c.expect(w.size() == 1, "A: a completion for the WR posted in ERR"))
			c.status("A: WR posted in ERR", w[0].status, IBV_WC_WR_FLUSH_ERR);
	}
	try {
		post_recv(a, p.abuf, p.amr.get(), kRecvA + 2, 33280, 256);
	} catch (const Error &e) {
		c.fail(std::string("A: ibv_post_recv in ERR: ") + e.what());
	}
	auto r = collect(a, a.rcq.get(), 3, 500ms);
	if (c.compat && r.size() == 2)
		c.deviate("the receive posted in ERR was not flushed (IBTA: completes with WR_FLUSH_ERR)");
	else
		c.expect(r.size() == 3, strf("A: all 3 receives flushed, the one posted in ERR too (got %zu completions)",
					     r.size()));
	for (size_t i = 0; i < r.size(); i++) {
		c.status(strf("A: receive wr_id 0x%" PRIx64, r[i].wr_id), r[i].status, IBV_WC_WR_FLUSH_ERR);
		c.expect(r[i].wr_id == kRecvA + i, strf("A: receive flush order (#%zu)", i));
	}
	auto ea = async_events(a);
	std::printf("    info: A async events: %s\n", join(ea).c_str());

	// Nothing behind the bad WR may have been executed on B.
	bool untouched = true;
	for (size_t i = kBehindOff; i < kBehindOff + 1024 + 64; i++)
		untouched &= p.bbuf.data()[i] == kFillB;
	c.expect(untouched, "B: the flushed WRITEs did not land");

	if (!b.qp)
		return; // destroyed by the case
	if (x.resp_err) {
		s = wait_state(b.qp.get(), IBV_QPS_ERR, 2000ms, &took);
		c.expect(s == IBV_QPS_ERR, strf("B: QP state ERR (got %s)", qp_state_str(s)));
		auto rb = collect(b, b.rcq.get(), x.b_recvs, 2000ms);
		c.expect(rb.size() == static_cast<size_t>(x.b_recvs),
			 strf("B: %d receive completions (got %zu)", x.b_recvs, rb.size()));
		for (size_t i = 0; i < rb.size(); i++) {
			ibv_wc_status want = i == 0 && x.resp_first ? *x.resp_first : IBV_WC_WR_FLUSH_ERR;
			ibv_wc_status alt = i == 0 && x.resp_first_alt ? *x.resp_first_alt : want;
			c.status(strf("B: receive wr_id 0x%" PRIx64, rb[i].wr_id), rb[i].status, want, alt);
			c.expect(rb[i].wr_id == kRecvB + i, strf("B: receive order (#%zu)", i));
		}
	} else {
		ibv_qp_state sb = b.qp ? qp_state(b.qp.get()) : IBV_QPS_UNKNOWN;
		c.expect(sb == IBV_QPS_RTS || sb == IBV_QPS_RESET,
			 strf("B: QP state unaffected (got %s)", qp_state_str(sb)));
		auto rb = collect(b, b.rcq.get(), 1, 200ms);
		c.expect(rb.empty(), "B: no receive consumed/completed",
			 rb.empty() ? "" : strf("wr_id 0x%" PRIx64 " status %s", rb[0].wr_id, ibv_wc_status_str(rb[0].status)));
	}
	auto eb = async_events(b);
	std::printf("    info: B async events: %s\n", join(eb).c_str());
}

ibv_send_wr mk(ibv_sge &sge, uint64_t addr, uint32_t len, uint32_t lkey, ibv_wr_opcode opc)
{
	sge = {addr, len, lkey};
	return signaled_wr(0, sge, opc);
}

constexpr uint32_t kKeyXor = 0x5a5a5a5a;

// --- the cases ----------------------------------------------------------------------

void c_bad_lkey_send(Env &e)
{
	auto p = make_pair(e.opt);
	Expect x{IBV_WC_LOC_PROT_ERR, false, {}};
	x.req_alt = IBV_WC_LOC_QP_OP_ERR;
	run_error(e, *p, x, [&](ibv_sge &s) {
		return mk(s, p->abuf.addr(), 64, p->amr->lkey ^ kKeyXor, IBV_WR_SEND);
	});
}

void rdma_case(Env &e, ibv_wr_opcode opc, uint32_t rkey_xor, int64_t raddr_from_end, unsigned mr_access,
	       unsigned qp_access, ibv_wc_status want, uint32_t len = 64, uint64_t misalign = 0,
	       std::optional<ibv_wc_status> alt = {})
{
	auto p = make_pair(e.opt, [&](Pair &pp) {
		if (qp_access)
			pp.pb.access = qp_access;
	});
	MrPtr extra; // after p: deregistered before p's PD goes
	uint64_t base = p->bbuf.addr();
	uint32_t rkey = p->bmr->rkey;
	if (mr_access) {
		// A second MR on B's buffer, with restricted access.
		extra = reg_mr(p->b->pd.get(), p->bbuf.data(), kBuf, mr_access);
		rkey = extra->rkey;
	}
	uint64_t raddr = base + 256 + misalign;
	if (raddr_from_end)
		raddr = base + kBuf - raddr_from_end;
	Expect x{want, true, {}};
	x.req_alt = alt;
	x.post_einval_alt = misalign != 0;
	run_error(e, *p, x, [&](ibv_sge &s) {
		ibv_send_wr wr = mk(s, p->abuf.addr() + 256, len, p->amr->lkey, opc);
		if (opc == IBV_WR_ATOMIC_FETCH_AND_ADD || opc == IBV_WR_ATOMIC_CMP_AND_SWP) {
			wr.wr.atomic.remote_addr = raddr;
			wr.wr.atomic.rkey = rkey ^ rkey_xor;
			wr.wr.atomic.compare_add = 1;
			wr.wr.atomic.swap = 2;
		} else {
			wr.wr.rdma.remote_addr = raddr;
			wr.wr.rdma.rkey = rkey ^ rkey_xor;
		}
		return wr;
	});
	// The bytes the bad operation aimed at are unchanged.
	bool ok = true;
	for (size_t i = 0; i < kBuf; i++)
		ok &= i >= 32768 || p->bbuf.data()[i] == kFillB;
	e.chk.expect(ok, "B: memory unchanged");
	if (opc == IBV_WR_RDMA_READ) {
		bool sink = true;
		for (size_t i = 256; i < 256 + len; i++)
			sink &= p->abuf.data()[i] == kFillA;
		e.chk.expect(sink, "A: read sink unchanged");
	}
}

constexpr unsigned kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC;

void c_bad_rkey_write(Env &e) { rdma_case(e, IBV_WR_RDMA_WRITE, kKeyXor, 0, 0, 0, IBV_WC_REM_ACCESS_ERR); }
void c_bad_rkey_read(Env &e) { rdma_case(e, IBV_WR_RDMA_READ, kKeyXor, 0, 0, 0, IBV_WC_REM_ACCESS_ERR); }
void c_bad_rkey_atomic(Env &e)
{
	rdma_case(e, IBV_WR_ATOMIC_FETCH_AND_ADD, kKeyXor, 0, 0, 0, IBV_WC_REM_ACCESS_ERR, 8);
}
void c_write_oob(Env &e) { rdma_case(e, IBV_WR_RDMA_WRITE, 0, 32, 0, 0, IBV_WC_REM_ACCESS_ERR); }
void c_read_oob(Env &e) { rdma_case(e, IBV_WR_RDMA_READ, 0, 32, 0, 0, IBV_WC_REM_ACCESS_ERR); }
void c_write_mr_no_remote_write(Env &e)
{
	rdma_case(e, IBV_WR_RDMA_WRITE, 0, 0, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 0,
		  IBV_WC_REM_ACCESS_ERR);
}
void c_read_mr_no_remote_read(Env &e)
{
	rdma_case(e, IBV_WR_RDMA_READ, 0, 0, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0,
		  IBV_WC_REM_ACCESS_ERR);
}
void c_atomic_qp_no_remote_atomic(Env &e)
{
	rdma_case(e, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 0, 0,
		  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		  IBV_WC_REM_ACCESS_ERR, 8, 0, IBV_WC_REM_INV_REQ_ERR);
}
void c_atomic_misaligned(Env &e)
{
	rdma_case(e, IBV_WR_ATOMIC_CMP_AND_SWP, 0, 0, 0, 0, IBV_WC_REM_INV_REQ_ERR, 8, 4);
}

void c_send_too_long(Env &e)
{
	auto p = make_pair(e.opt);
	Expect x{IBV_WC_REM_INV_REQ_ERR, true, IBV_WC_LOC_LEN_ERR};
	x.req_alt = IBV_WC_REM_OP_ERR;
	x.resp_first_alt = IBV_WC_LOC_QP_OP_ERR;
	x.b_recv_len = 32;
	run_error(e, *p, x, [&](ibv_sge &s) { return mk(s, p->abuf.addr(), 64, p->amr->lkey, IBV_WR_SEND); });
}

void c_recv_bad_lkey(Env &e)
{
	auto p = make_pair(e.opt);
	Expect x{IBV_WC_REM_OP_ERR, true, IBV_WC_LOC_PROT_ERR};
	x.resp_first_alt = IBV_WC_LOC_QP_OP_ERR;
	x.b_recv_lkey_xor = kKeyXor;
	run_error(e, *p, x, [&](ibv_sge &s) { return mk(s, p->abuf.addr(), 64, p->amr->lkey, IBV_WR_SEND); });
}

void c_rnr_retry_exceeded(Env &e)
{
	auto p = make_pair(e.opt, [](Pair &pp) {
		pp.pa.rnr_retry = 0;
		pp.pb.min_rnr_timer = 1; // 0.01 ms
	});
	Expect x{IBV_WC_RNR_RETRY_EXC_ERR, false, {}};
	x.b_recvs = 0;
	run_error(e, *p, x, [&](ibv_sge &s) { return mk(s, p->abuf.addr(), 64, p->amr->lkey, IBV_WR_SEND); });
}

void c_rnr_recover(Env &e)
{
	CaseChecker &c = e.chk;
	auto p = make_pair(e.opt, [](Pair &pp) {
		pp.pa.rnr_retry = 7; // forever
		pp.pb.min_rnr_timer = 12; // 0.64 ms
	});
	for (size_t i = 0; i < 100; i++)
		p->abuf.data()[i] = static_cast<uint8_t>(i * 7 + 3);
	ibv_sge s{};
	ibv_send_wr w = mk(s, p->abuf.addr(), 100, p->amr->lkey, IBV_WR_SEND_WITH_IMM);
	w.wr_id = kBadId;
	w.imm_data = htobe32(0x12345678);
	auto t0 = Clock::now();
	int rc = post_send(*p->a, w);
	if (!c.expect(rc == 0, "ibv_post_send SEND_WITH_IMM", strerror(rc)))
		return;
	auto early = collect(*p->a, p->a->scq.get(), 1, 50ms);
	c.expect(early.empty(), "A: no completion while B has no receive (50 ms)",
		 early.empty() ? "" : ibv_wc_status_str(early[0].status));
	post_recv(*p->b, p->bbuf, p->bmr.get(), kRecvB, 32768, 256);
	double posted = secs_since(t0);
	auto wa = collect(*p->a, p->a->scq.get(), 1, 10s);
	double el = secs_since(t0);
	if (c.expect(wa.size() == 1, "A: the SEND completes once a receive is posted")) {
		c.status("A: SEND status", wa[0].status, IBV_WC_SUCCESS);
		std::printf("    info: receive posted after %.3f s, SEND completed after %.3f s\n", posted, el);
	}
	auto wb = collect(*p->b, p->b->rcq.get(), 1, 2s);
	if (c.expect(wb.size() == 1, "B: receive completion")) {
		c.status("B: receive status", wb[0].status, IBV_WC_SUCCESS);
		c.expect(wb[0].byte_len == 100, strf("B: byte_len 100 (got %u)", wb[0].byte_len));
		c.expect((wb[0].wc_flags & IBV_WC_WITH_IMM) && be32toh(wb[0].imm_data) == 0x12345678,
			 "B: imm_data 0x12345678");
		c.expect(std::memcmp(p->bbuf.data() + 32768, p->abuf.data(), 100) == 0, "B: data intact");
		c.expect(p->bbuf.data()[32768 + 100] == kFillB, "B: byte after the data untouched");
	}
	auto more = collect(*p->b, p->b->rcq.get(), 1, 100ms);
	c.expect(more.empty(), "B: delivered exactly once");
	c.expect(qp_state(p->a->qp.get()) == IBV_QPS_RTS, "A: still RTS");
	c.expect(qp_state(p->b->qp.get()) == IBV_QPS_RTS, "B: still RTS");
}

void retry_case(Env &e, bool destroy)
{
	auto p = make_pair(e.opt, [](Pair &pp) {
		pp.pa.timeout = 10;   // 4.096 us * 2^10 = 4.2 ms
		pp.pa.retry_cnt = 2;
		pp.pa.rnr_retry = 0;
	});
	Expect x{IBV_WC_RETRY_EXC_ERR, false, {}};
	x.b_recvs = 0;
	x.timeout = 30s;
	x.bound = e.opt.retry_bound;
	run_error(
		e, *p, x,
		[&](ibv_sge &s) {
			ibv_send_wr wr = mk(s, p->abuf.addr(), 64, p->amr->lkey, IBV_WR_RDMA_WRITE);
			wr.wr.rdma.remote_addr = p->bbuf.addr();
			wr.wr.rdma.rkey = p->bmr->rkey;
			return wr;
		},
		[&](Pair &pp) {
			if (destroy)
				pp.b->qp.reset();
			else
				modify_state(pp.b->qp.get(), IBV_QPS_RESET);
		});
}
void c_retry_exceeded_destroyed(Env &e) { retry_case(e, true); }
void c_retry_exceeded_reset(Env &e) { retry_case(e, false); }

// The peer is alive and in RTS, but the network between the devices drops
// everything (the caller arranges that, e.g. netem loss 100%): the requester
// sends, retries retry_cnt times, and then completes with RETRY_EXC_ERR. The
// ACK timeout doubles after each expiry (adaptive retransmission; at timeout
// 14 at most min(retry_cnt, 3) times): so not sooner than T + 2T + 4T + 8T
// for retry_cnt 3 (less one jiffy of timer rounding each), not much later.
void c_retry_exceeded_blackhole(Env &e)
{
	constexpr uint8_t kTimeout = 14, kRetry = 3; // 4.096 us * 2^14 = 67.1 ms
	auto p = make_pair(e.opt, [](Pair &pp) {
		pp.pa.timeout = kTimeout;
		pp.pa.retry_cnt = kRetry;
		pp.pa.rnr_retry = 0;
	});
	const double t_ack = 4.096e-6 * (1u << kTimeout);
	Expect x{IBV_WC_RETRY_EXC_ERR, false, {}};
	x.b_recvs = 0;
	x.timeout = 30s;
	x.bound = e.opt.retry_bound;
	const double waits = 1 + 2 + 4 + 8; // in ACK timeouts, for kRetry 3
	x.least = waits * t_ack - (kRetry + 1) * 0.010;
	std::printf("    info: timeout %u (%.1f ms), retry_cnt %u: RETRY_EXC_ERR after about %.0f ms\n", kTimeout,
		    t_ack * 1e3, kRetry, waits * t_ack * 1e3);
	run_error(e, *p, x, [&](ibv_sge &s) {
		ibv_send_wr wr = mk(s, p->abuf.addr(), 64, p->amr->lkey, IBV_WR_RDMA_WRITE);
		wr.wr.rdma.remote_addr = p->bbuf.addr();
		wr.wr.rdma.rkey = p->bmr->rkey;
		return wr;
	});
}

struct Case {
	const char *name, *desc;
	void (*fn)(Env &);
	bool only_by_name = false; // needs a set-up the caller makes: run only with --case
};

const Case kCases[] = {
	{"bad_lkey_send", "SEND with an invalid lkey: LOC_PROT_ERR, B untouched", c_bad_lkey_send},
	{"bad_rkey_write", "RDMA WRITE with an invalid rkey: REM_ACCESS_ERR, B to ERR", c_bad_rkey_write},
	{"bad_rkey_read", "RDMA READ with an invalid rkey: REM_ACCESS_ERR, B to ERR", c_bad_rkey_read},
	{"bad_rkey_atomic", "FETCH_ADD with an invalid rkey: REM_ACCESS_ERR, B to ERR", c_bad_rkey_atomic},
	{"write_out_of_bounds", "RDMA WRITE crossing the end of the MR: REM_ACCESS_ERR", c_write_oob},
	{"read_out_of_bounds", "RDMA READ crossing the end of the MR: REM_ACCESS_ERR", c_read_oob},
	{"write_mr_no_remote_write", "RDMA WRITE to an MR without REMOTE_WRITE: REM_ACCESS_ERR",
	 c_write_mr_no_remote_write},
	{"read_mr_no_remote_read", "RDMA READ from an MR without REMOTE_READ: REM_ACCESS_ERR",
	 c_read_mr_no_remote_read},
	{"atomic_qp_no_remote_atomic", "FETCH_ADD to a QP without REMOTE_ATOMIC: REM_ACCESS_ERR",
	 c_atomic_qp_no_remote_atomic},
	{"atomic_misaligned", "CMP_SWAP to an address not 8-byte aligned: REM_INV_REQ_ERR", c_atomic_misaligned},
	{"send_too_long", "SEND longer than the receive buffer: REM_INV_REQ_ERR / B LOC_LEN_ERR", c_send_too_long},
	{"recv_bad_lkey", "SEND into a receive with an invalid lkey: REM_OP_ERR / B LOC_PROT_ERR", c_recv_bad_lkey},
	{"rnr_retry_exceeded", "SEND, no receive, rnr_retry 0: RNR_RETRY_EXC_ERR", c_rnr_retry_exceeded},
	{"rnr_recover", "SEND, receive posted 50 ms later, rnr_retry 7: success", c_rnr_recover},
	{"retry_exceeded_destroyed", "peer QP destroyed, timeout 10, retry_cnt 2: RETRY_EXC_ERR",
	 c_retry_exceeded_destroyed},
	{"retry_exceeded_reset", "peer QP in RESET, timeout 10, retry_cnt 2: RETRY_EXC_ERR",
	 c_retry_exceeded_reset},
	{"retry_exceeded_blackhole",
	 "peer in RTS but every packet lost (--case only: the caller drops them), timeout 14, "
	 "retry_cnt 3: RETRY_EXC_ERR after 4 ACK timeouts (1 + 2 + 4 + 8 IBTA values)",
	 c_retry_exceeded_blackhole, true},
};

void usage(FILE *f)
{
	std::fprintf(f,
		     "usage: rc_errors [options]\n"
		     "%s"
		     "  (A is the requester, B the responder)\n"
		     "  --case NAME          run only this case (repeatable)\n"
		     "  --list               list the cases\n"
		     "  --retry-bound SECS   RETRY_EXC_ERR must come within this long (default 5)\n"
		     "  --rxe-compat         accept rdma_rxe's (Linux 6.1) known deviations from IBTA,\n"
		     "                       reported as DEVIATION lines (to validate the test on rxe)\n"
		     "Exit status: 0 all cases passed, 1 a case failed, 2 usage error.\n",
		     kCommonUsage);
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	enum { O_CASE = 256, O_LIST, O_BOUND, O_COMPAT };
	if (int rc = parse_args("rc_errors", argc, argv, o, "h",
				{{"case", required_argument, nullptr, O_CASE},
				 {"list", no_argument, nullptr, O_LIST},
				 {"retry-bound", required_argument, nullptr, O_BOUND},
				 {"rxe-compat", no_argument, nullptr, O_COMPAT}},
				usage, [&](int c, const char *arg) {
					switch (c) {
					case O_CASE: o.cases.push_back(arg); return true;
					case O_LIST: o.list = true; return true;
					case O_BOUND: o.retry_bound = std::stod(arg); return true;
					case O_COMPAT: o.rxe_compat = true; return true;
					default: return false;
					}
				});
	    rc >= 0)
		return rc;
	if (int rc = list_or_check_cases("rc_errors", kCases, 28, o.list, o.cases); rc >= 0)
		return rc;
	CaseCounts n = run_cases(kCases, o.cases, [&](const Case &k) {
		CaseChecker chk;
		chk.compat = o.rxe_compat;
		Env env{o, chk};
		try {
			k.fn(env);
		} catch (const std::exception &e) {
			chk.fail(std::string("error: ") + e.what());
		}
		std::printf("%s %s%s\n", chk.ok ? "PASS" : "FAIL", k.name,
			    chk.deviations ? strf(" (%d deviation(s) accepted)", chk.deviations).c_str() : "");
		return chk.ok;
	});
	std::printf("rc_errors: %d passed, %d failed\n", n.passed, n.failed);
	return n.failed ? 1 : 0;
}
