// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// hostile_ring's environment: the rings reached through the provider's own
// objects (checked against the ring headers and /proc/self/maps), WQEs put
// into them, async events, the attacker's connections (Ctx, Conn), the
// well-behaved QP pair, and the expectations the cases share (run_bad_one).
#include "hostile_ring.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <type_traits>

using namespace vt;
using namespace std::chrono_literals;

namespace hr {

// --- the ring layout this program relies on -------------------------------------
// user/src/abi.h (through qp.h) already asserts the queue header's offsets,
// the WQE and CQE sizes and most WQE fields; these are the ones it leaves out.

static_assert(SROCE_QUEUE_DATA_OFFSET == 256);
static_assert(offsetof(sroce_send_wqe, wr_id) == 0);
static_assert(offsetof(sroce_send_wqe, opcode) == 8);
static_assert(offsetof(sroce_send_wqe, flags) == 9);
static_assert(offsetof(sroce_send_wqe, num_sge) == 10);
static_assert(offsetof(sroce_send_wqe, inline_len) == 12);
static_assert(offsetof(sroce_sge, lkey) == 12);
// ibv_qp / ibv_cq / ibv_srq / ibv_ah are the first members of the provider's
// objects (the provider asserts the same).
static_assert(std::is_standard_layout_v<sroce::qp> && offsetof(sroce::qp, vqp) == 0);
static_assert(std::is_standard_layout_v<sroce::cq> && offsetof(sroce::cq, vcq) == 0);
static_assert(std::is_standard_layout_v<sroce::srq> && offsetof(sroce::srq, vsrq) == 0);
static_assert(std::is_standard_layout_v<sroce::ah> && offsetof(sroce::ah, ibv_ah) == 0);
static_assert(offsetof(verbs_qp, qp) == 0 && offsetof(verbs_cq, cq) == 0 && offsetof(verbs_srq, srq) == 0);

namespace {

constexpr size_t kCanary = 64 * 1024;
constexpr uint64_t kTagACanary = 0xa11ce, kTagBCanary = 0xb0b, kTagRaw = 0x4a4a;

// Is [addr, addr + len) a mapping of a uverbs device file?
bool is_uverbs_mapping(const void *addr, size_t len)
{
	std::ifstream f("/proc/self/maps");
	std::string line;
	auto a = reinterpret_cast<uintptr_t>(addr);
	while (std::getline(f, line)) {
		uintptr_t lo = 0, hi = 0;
		if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR, &lo, &hi) != 2)
			continue;
		if (a >= lo && a < hi)
			return a + len <= hi && line.find("/dev/infiniband/uverbs") != std::string::npos;
	}
	return false;
}

} // namespace

// Wait for n completions on cq for up to timeout.
std::vector<ibv_wc> poll_n(ibv_cq *cq, size_t n, std::chrono::milliseconds timeout)
{
	std::vector<ibv_wc> out;
	auto t0 = Clock::now();
	while (out.size() < n && Clock::now() - t0 < timeout) {
		ibv_wc wc[16];
		int got = ibv_poll_cq(cq, static_cast<int>(std::min<size_t>(16, n - out.size())), wc);
		if (got < 0)
			throw Error("ibv_poll_cq failed");
		out.insert(out.end(), wc, wc + got);
		if (!got)
			std::this_thread::sleep_for(200us);
	}
	return out;
}

// Everything cq reports within `window`.
std::vector<ibv_wc> poll_window(ibv_cq *cq, std::chrono::milliseconds window)
{
	std::vector<ibv_wc> out;
	auto t0 = Clock::now();
	while (Clock::now() - t0 < window) {
		ibv_wc wc[16];
		int got = ibv_poll_cq(cq, 16, wc);
		if (got < 0)
			throw Error("ibv_poll_cq failed");
		out.insert(out.end(), wc, wc + got);
		if (!got)
			std::this_thread::sleep_for(1ms);
	}
	return out;
}

// --- rings ----------------------------------------------------------------------

Ring Ring::attach(const sroce::mapping &m, const char *what, uint32_t min_slots, size_t min_slot)
{
	Ring r;
	if (!m)
		throw Error(strf("%s: the provider has no ring mapped", what));
	r.hdr = static_cast<sroce_queue_hdr *>(m.get());
	r.len = m.size();
	r.data = reinterpret_cast<uint8_t *>(r.hdr) + SROCE_QUEUE_DATA_OFFSET;
	r.n = r.hdr->num_slots;
	r.shift = r.hdr->slot_shift;
	if (!r.n || (r.n & (r.n - 1)) || r.shift > 16 || r.n < min_slots || (size_t{1} << r.shift) < min_slot ||
	    SROCE_QUEUE_DATA_OFFSET + (size_t{r.n} << r.shift) > r.len)
		throw Error(strf("%s ring header does not match the provider's layout (slots %u, shift %u, "
				 "mapping %zu bytes; want >= %u slots of >= %zu bytes)",
				 what, r.n, r.shift, r.len, min_slots, min_slot));
	if (!is_uverbs_mapping(r.hdr, r.len))
		throw Error(strf("%s ring at %p is not a uverbs mapping in /proc/self/maps", what,
				 static_cast<void *>(r.hdr)));
	return r;
}

Ring sq_ring(ibv_qp *qp, const ibv_qp_cap &cap)
{
	sroce::qp *q = sroce::to_qp(qp);
	Ring r = Ring::attach(q->sq.map, "SQ", cap.max_send_wr,
			      SROCE_SEND_WQE_HDR_SIZE + size_t{cap.max_send_sge} * sizeof(sroce_sge));
	if (!q->sq.ring || q->sq.ring->index() != r.producer() || !q->doorbell)
		throw Error("SQ: the provider's state does not match the ring");
	return r;
}

Ring rq_ring(ibv_qp *qp, const ibv_qp_cap &cap)
{
	sroce::qp *q = sroce::to_qp(qp);
	Ring r = Ring::attach(q->rq.map, "RQ", cap.max_recv_wr,
			      sizeof(sroce_recv_wqe) + size_t{cap.max_recv_sge} * sizeof(sroce_sge));
	if (!q->rq.ring || q->rq.ring->index() != r.producer())
		throw Error("RQ: the provider's state does not match the ring");
	return r;
}

Ring cq_ring(ibv_cq *cq)
{
	sroce::cq *c = sroce::to_cq(cq);
	Ring r = Ring::attach(c->map, "CQ", static_cast<uint32_t>(cq->cqe), sizeof(sroce_cqe));
	if (!c->ring || c->ring->index() != r.consumer())
		throw Error("CQ: the provider's state does not match the ring");
	return r;
}

Ring srq_ring(ibv_srq *srq, uint32_t max_wr, uint32_t max_sge)
{
	sroce::srq *s = sroce::to_srq(srq);
	Ring r = Ring::attach(s->rq.map, "SRQ", max_wr, sizeof(sroce_recv_wqe) + size_t{max_sge} * sizeof(sroce_sge));
	if (!s->rq.ring || s->rq.ring->index() != r.producer())
		throw Error("SRQ: the provider's state does not match the ring");
	return r;
}

// The provider's doorbell: an empty POST_SEND command on the QP.
int doorbell(ibv_qp *qp) { return sroce::to_qp(qp)->doorbell(qp); }

void put_wqe(const Ring &r, uint32_t idx, const Wqe &w)
{
	uint8_t *s = r.slot(idx);
	const size_t room = r.slot_size() - SROCE_SEND_WQE_HDR_SIZE;
	std::memcpy(s, &w.h, sizeof(w.h));
	size_t nb = std::min(room, w.sge.size() * sizeof(sroce_sge));
	if (nb)
		std::memcpy(s + SROCE_SEND_WQE_HDR_SIZE, w.sge.data(), nb);
	nb = std::min(room, w.inl.size());
	if (nb)
		std::memcpy(s + SROCE_SEND_WQE_HDR_SIZE, w.inl.data(), nb);
}

void put_recv(const Ring &r, uint32_t idx, uint64_t wr_id, uint32_t num_sge, const std::vector<sroce_sge> &sg)
{
	uint8_t *s = r.slot(idx);
	sroce_recv_wqe h{wr_id, num_sge, 0};
	std::memcpy(s, &h, sizeof(h));
	size_t nb = std::min(r.slot_size() - sizeof(h), sg.size() * sizeof(sroce_sge));
	if (nb)
		std::memcpy(s + sizeof(h), sg.data(), nb);
}

Wqe wqe(uint8_t opcode, uint64_t wr_id, std::vector<sroce_sge> sg, uint8_t flags)
{
	Wqe w;
	w.h.wr_id = wr_id;
	w.h.opcode = opcode;
	w.h.flags = flags;
	w.h.num_sge = static_cast<uint16_t>(sg.size());
	w.sge = std::move(sg);
	return w;
}

// --- async events -----------------------------------------------------------------

void AsyncLog::init(ibv_context *c)
{
	ctx = c;
	int fl = fcntl(c->async_fd, F_GETFL);
	if (fl < 0 || fcntl(c->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		throw_errno("fcntl(O_NONBLOCK) on the async fd", errno);
}

void AsyncLog::drain()
{
	ibv_async_event ev;
	while (ibv_get_async_event(ctx, &ev) == 0) {
		Ev e{ev.event_type, 0, nullptr};
		switch (ev.event_type) {
		case IBV_EVENT_CQ_ERR: e.obj = ev.element.cq; break;
		case IBV_EVENT_SRQ_ERR:
		case IBV_EVENT_SRQ_LIMIT_REACHED: e.obj = ev.element.srq; break;
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_PORT_ERR:
		case IBV_EVENT_LID_CHANGE:
		case IBV_EVENT_PKEY_CHANGE:
		case IBV_EVENT_SM_CHANGE:
		case IBV_EVENT_CLIENT_REREGISTER:
		case IBV_EVENT_GID_CHANGE:
		case IBV_EVENT_DEVICE_FATAL:
		case IBV_EVENT_WQ_FATAL: break;
		default:
			e.obj = ev.element.qp;
			e.qpn = ev.element.qp->qp_num;
			break;
		}
		evs.push_back(e);
		ibv_ack_async_event(&ev);
	}
}

bool AsyncLog::has(ibv_event_type t, const void *obj)
{
	drain();
	for (auto &e : evs)
		if (e.type == t && e.obj == obj)
			return true;
	return false;
}

bool AsyncLog::wait(ibv_event_type t, const void *obj, std::chrono::milliseconds limit)
{
	auto t0 = Clock::now();
	while (!has(t, obj)) {
		if (Clock::now() - t0 > limit)
			return false;
		std::this_thread::sleep_for(2ms);
	}
	return true;
}

void AsyncLog::forget(const void *obj)
{
	drain();
	evs.erase(std::remove_if(evs.begin(), evs.end(), [&](const Ev &e) { return e.obj == obj; }), evs.end());
}

std::string AsyncLog::of(const void *obj)
{
	drain();
	std::string s;
	for (auto &e : evs)
		if (e.obj == obj)
			s += std::string(s.empty() ? "" : ", ") + ibv_event_type_str(e.type);
	return s.empty() ? "none" : s;
}

// --- the attacker's environment ---------------------------------------------------

void connect_one(Ctx &c, Endpoint &me, ibv_qp *qp, ibv_qp_type t, const Endpoint &peer, uint32_t peer_qpn,
		 uint32_t my_psn, uint32_t peer_psn, const ConnCfg &cfg)
{
	ConnParams p;
	p.mtu = c.mtu;
	p.timeout = cfg.timeout;
	p.retry_cnt = cfg.retry;
	p.rnr_retry = cfg.rnr_retry;
	p.min_rnr_timer = cfg.min_rnr;
	p.max_rd_atomic = cfg.rd_atomic ? 4 : 0;
	p.access = t == IBV_QPT_UC ? unsigned{IBV_ACCESS_REMOTE_WRITE} : kAllAccess;
	p.psn = my_psn;
	p.qkey = kQkey;
	connect_qp(me, qp, peer, peer_qpn, p, peer_psn);
}

QpPtr create_qp(Endpoint &ep, ibv_cq *cq, ibv_qp_type t, const ConnCfg &cfg, ibv_srq *srq, ibv_qp_cap *out)
{
	ibv_qp_init_attr ia{};
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.srq = srq;
	ia.qp_type = t;
	ia.cap.max_send_wr = cfg.send_wr;
	ia.cap.max_recv_wr = srq ? 0 : cfg.recv_wr;
	ia.cap.max_send_sge = cfg.send_sge;
	ia.cap.max_recv_sge = srq ? 0 : cfg.recv_sge;
	ia.cap.max_inline_data = cfg.inline_data;
	QpPtr q(ibv_create_qp(ep.pd.get(), &ia));
	if (!q)
		throw_errno(strf("%s: ibv_create_qp(type %d)", ep.label.c_str(), t), errno);
	*out = ia.cap;
	return q;
}

std::unique_ptr<Conn> make_conn(Ctx &c, ibv_qp_type t, const ConnCfg &cfg)
{
	auto k = std::make_unique<Conn>(c, t);
	k->acq.reset(ibv_create_cq(c.A->ctx.get(), cfg.cqe, nullptr, nullptr, 0));
	k->bcq.reset(ibv_create_cq(c.B->ctx.get(), cfg.cqe, nullptr, nullptr, 0));
	if (!k->acq || !k->bcq)
		throw_errno("ibv_create_cq", errno);
	k->srq = cfg.srq;
	k->a = create_qp(*c.A, k->acq.get(), t, cfg, nullptr, &k->acap);
	k->b = create_qp(*c.B, k->bcq.get(), t, cfg, cfg.srq, &k->bcap);
	uint32_t pa = c.rng.next() & 0xffffff, pb = c.rng.next() & 0xffffff;
	connect_one(c, *c.A, k->a.get(), t, *c.B, k->b->qp_num, pa, pb, cfg);
	connect_one(c, *c.B, k->b.get(), t, *c.A, k->a->qp_num, pb, pa, cfg);
	k->sq = sq_ring(k->a.get(), k->acap);
	k->arq = rq_ring(k->a.get(), k->acap);
	if (!cfg.srq)
		k->brq = rq_ring(k->b.get(), k->bcap);
	k->prod = k->sq.producer();
	k->bprod = cfg.srq ? 0 : k->brq.producer();
	if (t == IBV_QPT_UD) {
		ibv_ah_attr aa{};
		aa.is_global = 1;
		aa.grh.dgid = c.B->gid;
		aa.grh.sgid_index = static_cast<uint8_t>(c.A->gid_index);
		aa.grh.hop_limit = 64;
		aa.port_num = c.A->port;
		k->ah = ibv_create_ah(c.A->pd.get(), &aa);
		if (!k->ah)
			throw_errno("ibv_create_ah", errno);
	}
	return k;
}

// Valid SGEs into the scratch MRs.
sroce_sge a_sge(Ctx &c, size_t off, uint32_t len) { return {c.abuf.addr() + off, len, c.amr->lkey}; }
sroce_sge b_sge(Ctx &c, size_t off, uint32_t len) { return {c.bbuf.addr() + off, len, c.bmr->lkey}; }

void Ctx::open()
{
	A = open_endpoint("A", o.c.a, o.c.ipv6, false, 64);
	B = open_endpoint("B", o.c.b, o.c.ipv6, false, 64);
	alog.init(A->ctx.get());
	blog.init(B->ctx.get());
	mtu = pick_mtu(*A, *B, o.c.mtu);
	mtu_bytes = 128U << mtu;
	abuf = Buffer(kScratch);
	bbuf = Buffer(kScratch);
	acan = Buffer(kCanary);
	bcan = Buffer(kCanary);
	araw = Buffer(kCanary);
	fill_stream(acan.data(), kCanary, kTagACanary, 0);
	fill_stream(bcan.data(), kCanary, kTagBCanary, 0);
	fill_stream(araw.data(), kCanary, kTagRaw, 0);
	amr = reg_mr(A->pd.get(), abuf.data(), kScratch, kAllAccess);
	bmr = reg_mr(B->pd.get(), bbuf.data(), kScratch, kAllAccess);
	// Registered, and never named by any WQE this program writes.
	acmr = reg_mr(A->pd.get(), acan.data(), kCanary, kAllAccess);
	bcmr = reg_mr(B->pd.get(), bcan.data(), kCanary, kAllAccess);
	gbuf_a = Buffer(64 * 1024);
	gbuf_b = Buffer(64 * 1024);
	gmr_a = reg_mr(A->pd.get(), gbuf_a.data(), gbuf_a.size(), kAllAccess);
	gmr_b = reg_mr(B->pd.get(), gbuf_b.data(), gbuf_b.size(), kAllAccess);
	ConnCfg g;
	g.send_wr = g.recv_wr = 16;
	good = make_conn(*this, IBV_QPT_RC, g);
}

bool Ctx::canaries_intact(Checker &chk)
{
	size_t x = check_stream(acan.data(), kCanary, kTagACanary, 0);
	size_t y = check_stream(bcan.data(), kCanary, kTagBCanary, 0);
	size_t z = check_stream(araw.data(), kCanary, kTagRaw, 0);
	bool ok = x == kCanary && y == kCanary && z == kCanary;
	if (!ok)
		chk.fail(strf("memory no WQE may touch changed: A canary MR first bad byte %zu, B canary MR %zu, "
			      "A unregistered buffer %zu (of %zu)",
			      x, y, z, kCanary));
	return ok;
}

// The well-behaved pair: SEND both ways, RDMA WRITE and READ, through the
// provider's normal post path; every byte checked.
bool good_check(Ctx &c, Checker &chk)
{
	Conn &g = *c.good;
	uint64_t tag = mix64(++c.good_runs + 0x900d);
	const uint32_t n = 4096;
	uint8_t *a = c.gbuf_a.data(), *b = c.gbuf_b.data();
	std::memset(a, 0, 64 * 1024);
	std::memset(b, 0, 64 * 1024);
	fill_stream(a, n, tag, 0);
	fill_stream(a + 8192, n, tag + 1, 0);
	fill_stream(b + 16384, n, tag + 2, 0);
	fill_stream(b + 32768, n, tag + 3, 0);
	std::string err;
	auto recv = [&](ibv_qp *qp, uint64_t addr, uint32_t lkey) {
		ibv_sge s{addr, n, lkey};
		ibv_recv_wr w{}, *bad = nullptr;
		w.sg_list = &s;
		w.num_sge = 1;
		w.wr_id = 7;
		if (ibv_post_recv(qp, &w, &bad))
			err = "post_recv failed";
	};
	recv(g.b.get(), c.gbuf_b.addr(), c.gmr_b->lkey);
	recv(g.a.get(), c.gbuf_a.addr() + 40960, c.gmr_a->lkey);
	ibv_sge s1{c.gbuf_a.addr(), n, c.gmr_a->lkey}, s2{c.gbuf_a.addr() + 8192, n, c.gmr_a->lkey},
		s3{c.gbuf_a.addr() + 24576, n, c.gmr_a->lkey}, s4{c.gbuf_b.addr() + 32768, n, c.gmr_b->lkey};
	ibv_send_wr w[3]{}, wb{}, *bad = nullptr;
	w[0].sg_list = &s1, w[0].opcode = IBV_WR_SEND;
	w[1].sg_list = &s2, w[1].opcode = IBV_WR_RDMA_WRITE;
	w[1].wr.rdma = {c.gbuf_b.addr() + 8192, c.gmr_b->rkey};
	w[2].sg_list = &s3, w[2].opcode = IBV_WR_RDMA_READ;
	w[2].wr.rdma = {c.gbuf_b.addr() + 16384, c.gmr_b->rkey};
	for (int i = 0; i < 3; i++) {
		w[i].wr_id = static_cast<uint64_t>(i);
		w[i].num_sge = 1;
		w[i].send_flags = IBV_SEND_SIGNALED;
		w[i].next = i < 2 ? &w[i + 1] : nullptr;
	}
	wb.sg_list = &s4, wb.num_sge = 1, wb.opcode = IBV_WR_SEND, wb.send_flags = IBV_SEND_SIGNALED;
	if (err.empty() && (ibv_post_send(g.a.get(), w, &bad) || ibv_post_send(g.b.get(), &wb, &bad)))
		err = "post_send failed";
	if (err.empty()) {
		auto ca = poll_n(g.acq.get(), 4, 20s);
		auto cb = poll_n(g.bcq.get(), 2, 20s);
		if (ca.size() != 4 || cb.size() != 2)
			err = strf("completions missing (A %zu of 4, B %zu of 2)", ca.size(), cb.size());
		for (auto *v : {&ca, &cb})
			for (auto &x : *v)
				if (x.status != IBV_WC_SUCCESS)
					err = "completion " + st(x.status);
	}
	if (err.empty()) {
		if (check_stream(b, n, tag, 0) != n)
			err = "SEND A->B data";
		else if (check_stream(b + 8192, n, tag + 1, 0) != n)
			err = "WRITE data";
		else if (check_stream(a + 24576, n, tag + 2, 0) != n)
			err = "READ data";
		else if (check_stream(a + 40960, n, tag + 3, 0) != n)
			err = "SEND B->A data";
	}
	bool ok = err.empty() && qp_state(g.a.get()) == IBV_QPS_RTS && qp_state(g.b.get()) == IBV_QPS_RTS;
	chk.expect(ok, "this process's well-behaved QP pair still passes verified SEND/WRITE/READ",
		   err.empty() ? "a QP left RTS" : err);
	return ok;
}

// --- common expectations -----------------------------------------------------------

namespace {

const ibv_wc *find_wc(const std::vector<ibv_wc> &v, uint64_t wr_id)
{
	for (auto &w : v)
		if (w.wr_id == wr_id)
			return &w;
	return nullptr;
}

ibv_qp_state wait_state(ibv_qp *qp, ibv_qp_state want, std::chrono::milliseconds limit = 10s)
{
	auto t0 = Clock::now();
	ibv_qp_state s;
	while ((s = qp_state(qp)) != want && Clock::now() - t0 < limit)
		std::this_thread::sleep_for(2ms);
	return s;
}

} // namespace

std::string wcs_str(const std::vector<ibv_wc> &v)
{
	std::string s;
	for (auto &w : v)
		s += strf("%s{wr_id 0x%" PRIx64 " %s}", s.empty() ? "" : " ", w.wr_id, ibv_wc_status_str(w.status));
	return s.empty() ? "none" : s;
}

void expect_state(Checker &chk, const char *who, ibv_qp *qp, ibv_qp_state want)
{
	ibv_qp_state s = wait_state(qp, want);
	chk.expect(s == want, strf("%s is in %s", who, qp_state_str(want)), strf("it is in %s", qp_state_str(s)));
}

// The completion with wr_id in `got` must have status `want`.
void expect_wc(Checker &chk, const std::vector<ibv_wc> &got, uint64_t wr_id, ibv_wc_status want, const char *what)
{
	const ibv_wc *w = find_wc(got, wr_id);
	chk.expect(w && w->status == want, strf("%s completes with %s", what, ibv_wc_status_str(want)),
		   "got " + wcs_str(got));
}

void expect_quiet(Checker &chk, ibv_cq *cq, const char *what, std::chrono::milliseconds window)
{
	auto v = poll_window(cq, window);
	chk.expect(v.empty(), strf("%s: no completion", what), "got " + wcs_str(v));
}

bool b_untouched(Ctx &c, size_t off, size_t len, uint8_t fill)
{
	for (size_t i = 0; i < len; i++)
		if (c.bbuf.data()[off + i] != fill)
			return false;
	return true;
}

void run_bad_one(Ctx &c, Checker &chk, const std::string &label, const BadOne &x, ConnCfg cfg)
{
	chk.note("- " + label);
	auto k = make_conn(c, x.type, cfg);
	std::memset(c.bbuf.data(), 0xbb, kScratch);
	const uint32_t grh = x.type == IBV_QPT_UD ? 40 : 0;
	if (x.b_recvs) {
		k->b_recv(0xb0, c.bbuf.addr(), 64 * 1024 + grh, c.bmr->lkey);
		k->b_recv(0xb1, c.bbuf.addr() + 128 * 1024, 64 * 1024 + grh, c.bmr->lkey);
	}
	if (x.before)
		x.before(c, *k);
	Wqe bad = x.make(c, *k);
	bad.h.wr_id = 0xbad;
	k->post(bad);
	uint32_t n = 1;
	if (x.behind) {
		Wqe g = wqe(SROCE_WR_SEND, 0xbe1, {a_sge(c, 0, 64)});
		if (x.type == IBV_QPT_UD) {
			g.h.ah = sroce::to_ah(k->ah)->ah_num;
			g.h.remote_qpn = k->b->qp_num;
			g.h.remote_qkey = kQkey;
		}
		put_wqe(k->sq, k->prod + 1, g);
		n = 2;
	}
	int rc = k->publish(n);
	chk.expect(rc == 0, "the doorbell returns 0", strf("rc %d", rc));
	auto got = poll_n(k->acq.get(), n, 15s);
	expect_wc(chk, got, 0xbad, x.want, "the bad WQE");
	if (x.behind)
		expect_wc(chk, got, 0xbe1, IBV_WC_WR_FLUSH_ERR, "the valid WQE behind it");
	expect_state(chk, "A", k->a.get(), x.a_state);
	if (x.b_err) {
		expect_state(chk, "B", k->b.get(), IBV_QPS_ERR);
		if (x.b_event)
			chk.expect(c.blog.wait(*x.b_event, k->b.get(), 5s),
				   strf("B got %s", ibv_event_type_str(*x.b_event)),
				   "events: " + c.blog.of(k->b.get()));
	} else {
		auto v = poll_window(k->bcq.get(), 300ms);
		bool none = true;
		for (auto &w : v)
			none &= w.status != IBV_WC_SUCCESS;
		chk.expect(none, "B received nothing", "got " + wcs_str(v));
		if (x.type == IBV_QPT_RC)
			chk.expect(qp_state(k->b.get()) == IBV_QPS_RTS, "B stays RTS");
	}
	// Whatever the bad WQE named, the kernel never acted on A's behalf again.
	chk.expect(k->sq.consumer() == k->prod, "A's SQ consumer index covers exactly what was posted",
		   strf("consumer %u, posted %u", k->sq.consumer(), k->prod));
}

void run_bad_cases(Ctx &c, Checker &chk, std::span<const BadCase> rows)
{
	for (const BadCase &r : rows) {
		if (r.gentle && !c.o.known_bugs) {
			chk.note(std::string("- ") + r.label + ": SKIPPED (" + r.gentle + ")");
			continue;
		}
		run_bad_one(c, chk, r.label, r.x);
		if (r.after)
			r.after(c, chk);
	}
}

bool warmup_sends(Ctx &c, Checker &chk, Conn &k, uint32_t n, uint64_t base)
{
	for (uint32_t i = 0; i < n; i++) {
		fill_stream(c.abuf.data() + 64 * i, 64, base + i, 0);
		k.b_recv(base + i, c.bbuf.addr() + 256 * i, 256, c.bmr->lkey);
		put_wqe(k.sq, k.prod + i, wqe(SROCE_WR_SEND, base + i, {a_sge(c, 64 * i, 64)}));
	}
	k.publish(n);
	auto sa = poll_n(k.acq.get(), n, 15s);
	auto sb = poll_n(k.bcq.get(), n, 15s);
	bool ok = sa.size() == n && sb.size() == n;
	for (auto *v : {&sa, &sb})
		for (auto &w : *v)
			ok &= w.status == IBV_WC_SUCCESS;
	for (uint32_t i = 0; i < n && ok; i++)
		ok &= check_stream(c.bbuf.data() + 256 * i, 64, base + i, 0) == 64;
	return chk.expect(ok, strf("%u valid SENDs written straight into the ring complete and arrive", n),
			  "A " + wcs_str(sa) + ", B " + wcs_str(sb));
}

} // namespace hr
