// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// sec_local's XRC cases: xrc_tgt_post_send (raw POST_SEND commands on an XRC
// target QP, which has neither a send queue of its own nor a send CQ) and
// xrc_srq_churn (XRC SENDs naming XRC SRQs that are being created and
// destroyed at the same time).
#include "sec_local.h"

#include "pattern.h"

#include <fcntl.h>
#include <rdma/ib_user_verbs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

using namespace vt;
using namespace std::chrono_literals;

namespace sl {

namespace {

// --- XRC objects ----------------------------------------------------------------------

struct XrcdDeleter {
	void operator()(ibv_xrcd *x) const noexcept
	{
		if (x && ibv_close_xrcd(x))
			std::fprintf(stderr, "warning: ibv_close_xrcd failed: %m\n");
	}
};
using XrcdPtr = std::unique_ptr<ibv_xrcd, XrcdDeleter>;
using SrqPtr = std::unique_ptr<ibv_srq, IbvDeleter<ibv_srq, ibv_destroy_srq>>;

XrcdPtr open_xrcd(ibv_context *ctx)
{
	ibv_xrcd_init_attr xa{};
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = -1;
	xa.oflags = O_CREAT;
	XrcdPtr x(ibv_open_xrcd(ctx, &xa));
	if (!x)
		throw_errno("ibv_open_xrcd(fd -1, O_CREAT)", errno);
	return x;
}

QpPtr create_xrc_tgt(ibv_context *ctx, ibv_xrcd *xrcd)
{
	ibv_qp_init_attr_ex ia{};
	ia.qp_type = IBV_QPT_XRC_RECV;
	ia.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	ia.xrcd = xrcd;
	QpPtr q(ibv_create_qp_ex(ctx, &ia));
	if (!q)
		throw_errno("ibv_create_qp_ex(XRC_RECV)", errno);
	return q;
}

QpPtr create_xrc_ini(const Endpoint &ep, uint32_t depth)
{
	ibv_qp_init_attr_ex ia{};
	ia.qp_type = IBV_QPT_XRC_SEND;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = ep.pd.get();
	ia.send_cq = ep.scq.get();
	ia.recv_cq = ep.scq.get();
	ia.cap.max_send_wr = depth;
	ia.cap.max_send_sge = 1;
	QpPtr q(ibv_create_qp_ex(ep.ctx.get(), &ia));
	if (!q)
		throw_errno("ibv_create_qp_ex(XRC_SEND)", errno);
	return q;
}

void modify(ibv_qp *qp, ibv_qp_attr &a, int mask, const char *what)
{
	if (int rc = ibv_modify_qp(qp, &a, mask))
		throw_errno(strf("ibv_modify_qp(%s, qpn 0x%x)", what, qp->qp_num), rc);
}

void tgt_to_init(const Endpoint &ep, ibv_qp *tgt)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = ep.port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	modify(tgt, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "XRC TGT -> INIT");
}

void tgt_to_rtr(const Endpoint &ep, ibv_qp *tgt, const ibv_gid &peer, uint32_t peer_qpn, uint32_t peer_psn,
		ibv_mtu mtu, uint8_t min_rnr_timer)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_RTR;
	a.ah_attr = ah_to(ep, peer);
	a.path_mtu = mtu;
	a.dest_qp_num = peer_qpn;
	a.rq_psn = peer_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = min_rnr_timer;
	modify(tgt, a,
	       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
	       "XRC TGT -> RTR");
}

// An XRC INI QP of ini_ep and an XRC TGT QP of tgt_ep, connected.
void xrc_connect(const Endpoint &ini_ep, ibv_qp *ini, const Endpoint &tgt_ep, ibv_qp *tgt, ibv_mtu mtu,
		 uint8_t ack_timeout, uint32_t psn_i, uint32_t psn_t)
{
	tgt_to_init(tgt_ep, tgt);
	tgt_to_rtr(tgt_ep, tgt, ini_ep.gid, ini->qp_num, psn_i, mtu, 1);
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = ack_timeout;
	a.sq_psn = psn_t;
	modify(tgt, a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN, "XRC TGT -> RTS");

	a = {};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = ini_ep.port;
	modify(ini, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "XRC INI -> INIT");
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.ah_attr = ah_to(ini_ep, tgt_ep.gid);
	a.path_mtu = mtu;
	a.dest_qp_num = tgt->qp_num;
	a.rq_psn = psn_t;
	modify(ini, a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
	       "XRC INI -> RTR");
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = ack_timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7; // infinite: an empty SRQ keeps the responder looking it up
	a.sq_psn = psn_i;
	a.max_rd_atomic = 1;
	modify(ini, a,
	       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
		       IBV_QP_MAX_QP_RD_ATOMIC,
	       "XRC INI -> RTS");
}

// --- raw uverbs POST_SEND -----------------------------------------------------------------

// A kernel text address: what a process must never get the kernel to read
// for it.
constexpr uint64_t kKernelAddr = 0xffffffff81000000ULL;

struct RawWr {
	uint32_t opcode = IB_UVERBS_WR_SEND;
	uint32_t flags = IBV_SEND_SIGNALED;
	uint64_t remote_addr = 0;
	uint32_t rkey = 0;
	std::vector<ib_uverbs_sge> sges;
};

// write(2) one IB_USER_VERBS_CMD_POST_SEND to ctx's command fd: 0 or the errno.
int raw_post_send(ibv_context *ctx, uint32_t qp_handle, const std::vector<RawWr> &wrs, uint32_t *bad_wr)
{
	size_t nsge = 0;
	for (auto &w : wrs)
		nsge += w.sges.size();
	size_t len = sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_post_send) + wrs.size() * sizeof(ib_uverbs_send_wr) +
		     nsge * sizeof(ib_uverbs_sge);
	std::vector<uint8_t> buf(len);
	ib_uverbs_post_send_resp resp{};
	resp.bad_wr = 0xffffffff;

	ib_uverbs_cmd_hdr hdr{};
	hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	hdr.in_words = static_cast<uint16_t>(len / 4);
	hdr.out_words = sizeof(resp) / 4;
	ib_uverbs_post_send cmd{};
	cmd.response = reinterpret_cast<uintptr_t>(&resp);
	cmd.qp_handle = qp_handle;
	cmd.wr_count = static_cast<uint32_t>(wrs.size());
	cmd.sge_count = static_cast<uint32_t>(nsge);
	cmd.wqe_size = sizeof(ib_uverbs_send_wr);
	uint8_t *p = buf.data();
	std::memcpy(p, &hdr, sizeof(hdr));
	p += sizeof(hdr);
	std::memcpy(p, &cmd, sizeof(cmd));
	p += sizeof(cmd);
	for (size_t i = 0; i < wrs.size(); i++) {
		ib_uverbs_send_wr w{};
		w.wr_id = 0x5ec0000 + i;
		w.num_sge = static_cast<uint32_t>(wrs[i].sges.size());
		w.opcode = wrs[i].opcode;
		w.send_flags = wrs[i].flags;
		w.wr.rdma.remote_addr = wrs[i].remote_addr;
		w.wr.rdma.rkey = wrs[i].rkey;
		std::memcpy(p, &w, sizeof(w));
		p += sizeof(w);
	}
	for (auto &w : wrs) {
		std::memcpy(p, w.sges.data(), w.sges.size() * sizeof(ib_uverbs_sge));
		p += w.sges.size() * sizeof(ib_uverbs_sge);
	}
	ssize_t n = write(ctx->cmd_fd, buf.data(), len);
	if (bad_wr)
		*bad_wr = resp.bad_wr;
	if (n < 0)
		return errno;
	return n == static_cast<ssize_t>(len) ? 0 : EIO;
}

struct Attack {
	const char *name;
	std::vector<RawWr> wrs;
};

std::vector<Attack> attacks(uint64_t ubuf)
{
	auto sge = [](uint64_t a, uint32_t l) { return ib_uverbs_sge{a, l, 0}; };
	const uint32_t inl = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	std::vector<Attack> v;
	// A plain WR first: an XRC target has no send queue and no send CQ,
	// so even this must be refused.
	v.push_back({"SEND without SGEs", {RawWr{IB_UVERBS_WR_SEND, IBV_SEND_SIGNALED, 0, 0, {}}}});
	v.push_back({"inline SEND from a kernel address",
		     {RawWr{IB_UVERBS_WR_SEND, inl, 0, 0, {sge(kKernelAddr, 16)}}}});
	v.push_back({"inline SEND, SGE lengths 0xfffffff0 + 0x20 (u32 wrap)",
		     {RawWr{IB_UVERBS_WR_SEND, inl, 0, 0, {sge(ubuf, 0xfffffff0), sge(ubuf, 0x20)}}}});
	v.push_back({"inline SEND, SGE lengths 0x10 + 0xfffffff0 (u32 wrap to 0)",
		     {RawWr{IB_UVERBS_WR_SEND, inl, 0, 0, {sge(ubuf, 0x10), sge(kKernelAddr, 0xfffffff0)}}}});
	v.push_back({"inline RDMA_WRITE from a kernel address",
		     {RawWr{IB_UVERBS_WR_RDMA_WRITE, inl, kKernelAddr, 0x1234, {sge(kKernelAddr, 16)}}}});
	v.push_back({"RDMA_READ into a kernel address",
		     {RawWr{IB_UVERBS_WR_RDMA_READ, IBV_SEND_SIGNALED, kKernelAddr, 0x1234, {sge(kKernelAddr, 4096)}}}});
	return v;
}

} // namespace

// --- xrc_tgt_post_send -------------------------------------------------------------------

void case_xrc_tgt_post_send(const Options &o, Verdict &v)
{
	// T: the XRC target's device (B); P: the peer its RTR names (A).
	auto t = open_endpoint("T", o.b, o.ipv6, false, 16);
	auto p = open_endpoint("P", o.a, o.ipv6, false, 16);
	auto xrcd = open_xrcd(t->ctx.get());
	auto tgt = create_xrc_tgt(t->ctx.get(), xrcd.get());
	v.info("%s: XRC_RECV QP 0x%x, uverbs handle %u", t->devname.c_str(), tgt->qp_num, tgt->handle);
	Buffer ubuf(4096);
	std::memset(ubuf.data(), 0x42, ubuf.size());

	auto run = [&](const char *state) {
		for (auto &a : attacks(ubuf.addr())) {
			uint32_t bad = 0;
			int rc = raw_post_send(t->ctx.get(), tgt->handle, a.wrs, &bad);
			v.check(rc == EINVAL || rc == EOPNOTSUPP, "XRC TGT in %s: %s: write(2) failed with %s", state,
				a.name, errno_name(rc));
		}
		ibv_qp_state st = query_state(tgt.get());
		v.info("XRC TGT state after the attempts: %s", qp_state_str(st));
	};

	tgt_to_init(*t, tgt.get());
	run("INIT");
	tgt_to_rtr(*t, tgt.get(), p->gid, 0xabcde, 0, IBV_MTU_1024, 12);
	run("RTR");
	modify_state(tgt.get(), IBV_QPS_ERR);
	run("ERR");
	v.check(query_state(tgt.get()) == IBV_QPS_ERR, "XRC TGT still in ERR (%s)",
		qp_state_str(query_state(tgt.get())));

	// The same commands on an ordinary user RC QP (its send queue is the
	// mapped ring; a WR list through the kernel is not how it posts).
	t->create_qp(QpCaps{});
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = t->port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
	modify(t->qp.get(), a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "RC -> INIT");
	for (auto &at : attacks(ubuf.addr())) {
		int rc = raw_post_send(t->ctx.get(), t->qp->handle, at.wrs, nullptr);
		v.check(rc == EINVAL || rc == EOPNOTSUPP, "user RC QP in INIT: %s: write(2) failed with %s", at.name,
			errno_name(rc));
	}
	std::string ev = drain_async(t->ctx.get());
	v.info("async events on %s: %s", t->devname.c_str(), ev.empty() ? "none" : ev.c_str());
	t->qp.reset();
	tgt.reset();
	xrcd.reset();
	v.check(std::all_of(ubuf.data(), ubuf.data() + ubuf.size(), [](uint8_t c) { return c == 0x42; }),
		"the process's buffer named in the SGEs is unchanged");

	std::string why = rc_send_check(o, o.b, o.a);
	v.check(why.empty(), "afterwards an RC pair %s <-> %s passes a verified SEND each way%s%s", o.b.name.c_str(),
		o.a.name.c_str(), why.empty() ? "" : ": ", why.c_str());
}

// --- xrc_srq_churn -------------------------------------------------------------------------

namespace {

constexpr uint32_t kMagic = 0x5ec5a1c0;
constexpr size_t kSlot = 4096, kRecvSlots = 4096, kHdr = 32;
constexpr size_t kMaxSeq = 1 << 22;

struct MsgHdr {
	uint32_t magic, srqn;
	uint64_t seq;
	uint32_t len, pad;
	uint64_t tag;
};
static_assert(sizeof(MsgHdr) == kHdr);

uint64_t msg_tag(uint64_t seed, uint64_t seq)
{
	return mix64(seed ^ (seq * 0x9e3779b97f4a7c15ULL));
}

struct Churn {
	Churn(const Options &o_, Verdict &v_, Endpoint &b_, ibv_xrcd *x, ibv_mr *mr, uint8_t *buf)
		: o(o_), v(v_), b(b_), xrcd(x), rmr(mr), rbuf(buf)
	{
	}
	const Options &o;
	Verdict &v;
	Endpoint &b;     // the target side: PD, the SRQs' CQ (rcq)
	ibv_xrcd *xrcd;
	ibv_mr *rmr;     // the receive slots
	uint8_t *rbuf;

	std::mutex mu;
	std::vector<uint32_t> live;        // published SRQ numbers
	std::deque<uint32_t> dead;         // recently destroyed ones
	std::atomic<bool> stop{false}, stop_poll{false};
	std::atomic<uint64_t> created{0}, destroyed{0}, empty_srqs{0}, recvs_posted{0};
	std::atomic<uint64_t> errors{0};

	// Receive slots: what was posted there last.
	struct Meta {
		std::atomic<uint64_t> wr_id{0};
		std::atomic<uint32_t> srqn{0};
	};
	std::vector<Meta> meta = std::vector<Meta>(kRecvSlots);
	uint64_t next_wr = 1;
	std::vector<std::atomic<uint8_t>> delivered = std::vector<std::atomic<uint8_t>>(kMaxSeq);
	std::atomic<uint64_t> verified{0}, bad_data{0}, stale{0};
	std::mutex st_mu;
	std::map<std::string, uint64_t> recv_status;

	void churn();
	void poll();
	void bad(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
};

void Churn::bad(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *m = nullptr;
	if (vasprintf(&m, fmt, ap) >= 0) {
		v.fail("%s", m);
		free(m);
	}
	va_end(ap);
}

void Churn::churn()
{
	Rng rng(o.seed ^ 0xc4u);
	std::deque<SrqPtr> mine;
	std::deque<uint32_t> nums;
	try {
		while (!stop) {
			ibv_srq_init_attr_ex sa{};
			sa.attr.max_wr = static_cast<uint32_t>(rng.range(8, 64));
			sa.attr.max_sge = 1;
			sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
				       IBV_SRQ_INIT_ATTR_CQ;
			sa.srq_type = IBV_SRQT_XRC;
			sa.pd = b.pd.get();
			sa.xrcd = xrcd;
			sa.cq = b.rcq.get();
			SrqPtr srq(ibv_create_srq_ex(b.ctx.get(), &sa));
			if (!srq)
				throw_errno("ibv_create_srq_ex(XRC)", errno);
			uint32_t num = 0;
			if (int rc = ibv_get_srq_num(srq.get(), &num))
				throw_errno("ibv_get_srq_num", rc);
			created++;
			uint32_t k = rng.chance(40) ? 0 : static_cast<uint32_t>(rng.range(1, sa.attr.max_wr));
			if (!k)
				empty_srqs++;
			for (uint32_t i = 0; i < k; i++) {
				uint64_t id = next_wr++;
				size_t slot = id % kRecvSlots;
				meta[slot].srqn.store(num);
				meta[slot].wr_id.store(id);
				std::memset(rbuf + slot * kSlot, 0xee, kHdr);
				ibv_sge s{reinterpret_cast<uintptr_t>(rbuf + slot * kSlot), kSlot, rmr->lkey};
				ibv_recv_wr w{};
				w.wr_id = id;
				w.sg_list = &s;
				w.num_sge = 1;
				ibv_recv_wr *badw;
				if (int rc = ibv_post_srq_recv(srq.get(), &w, &badw))
					throw_errno("ibv_post_srq_recv", rc);
				recvs_posted++;
			}
			{
				std::lock_guard<std::mutex> g(mu);
				live.push_back(num);
			}
			mine.push_back(std::move(srq));
			nums.push_back(num);
			while (mine.size() > 3) {
				{
					std::lock_guard<std::mutex> g(mu);
					live.erase(std::find(live.begin(), live.end(), nums.front()));
					dead.push_back(nums.front());
					if (dead.size() > 16)
						dead.pop_front();
				}
				// Leave the sender a moment to name it anyway.
				if (rng.chance(50))
					std::this_thread::sleep_for(std::chrono::microseconds(rng.range(0, 2000)));
				ibv_srq *raw = mine.front().release();
				if (int rc = ibv_destroy_srq(raw))
					throw_errno("ibv_destroy_srq", rc);
				destroyed++;
				mine.pop_front();
				nums.pop_front();
			}
			std::this_thread::sleep_for(std::chrono::microseconds(rng.range(0, 5000)));
		}
		{
			std::lock_guard<std::mutex> g(mu);
			live.clear();
		}
		while (!mine.empty()) {
			ibv_srq *raw = mine.front().release();
			if (int rc = ibv_destroy_srq(raw))
				throw_errno("ibv_destroy_srq", rc);
			destroyed++;
			mine.pop_front();
		}
	} catch (const std::exception &e) {
		bad("SRQ churn thread: %s", e.what());
		errors++;
		std::lock_guard<std::mutex> g(mu);
		live.clear();
	}
}

void Churn::poll()
{
	ibv_wc wc[32];
	while (!stop_poll) {
		int n = ibv_poll_cq(b.rcq.get(), 32, wc);
		if (n < 0) {
			bad("ibv_poll_cq on the SRQs' CQ: %d", n);
			return;
		}
		if (!n) {
			std::this_thread::sleep_for(50us);
			continue;
		}
		for (int i = 0; i < n; i++) {
			const ibv_wc &w = wc[i];
			if (w.status != IBV_WC_SUCCESS) {
				std::lock_guard<std::mutex> g(st_mu);
				recv_status[wc_status(w.status)]++;
				continue;
			}
			size_t slot = w.wr_id % kRecvSlots;
			if (meta[slot].wr_id.load() != w.wr_id) {
				stale++;
				continue;
			}
			const uint8_t *p = rbuf + slot * kSlot;
			MsgHdr h;
			std::memcpy(&h, p, sizeof(h));
			uint32_t want_srqn = meta[slot].srqn.load();
			if (w.opcode != IBV_WC_RECV || h.magic != kMagic || h.len != w.byte_len || h.srqn != want_srqn ||
			    h.seq >= kMaxSeq || h.tag != msg_tag(o.seed, h.seq) || h.len < kHdr || h.len > kSlot) {
				if (bad_data++ < 5)
					bad("receive wr_id %llu (SRQ %u): opcode %s, byte_len %u, header magic 0x%x srqn %u "
					    "seq %llu len %u",
					    static_cast<unsigned long long>(w.wr_id), want_srqn, wc_opcode_str(w.opcode),
					    w.byte_len, h.magic, h.srqn, static_cast<unsigned long long>(h.seq), h.len);
				continue;
			}
			size_t off = check_stream(p + kHdr, h.len - kHdr, h.tag, 0);
			if (off != h.len - kHdr) {
				if (bad_data++ < 5)
					bad("message seq %llu in SRQ %u: byte %zu of %u differs",
					    static_cast<unsigned long long>(h.seq), want_srqn, off + kHdr, h.len);
				continue;
			}
			delivered[h.seq].store(1);
			verified++;
		}
	}
}

} // namespace

void case_xrc_srq_churn(const Options &o, Verdict &v)
{
	const double secs = o.seconds > 0 ? o.seconds : 15;
	// "SENDs went through", not a rate: the stock TCG guest completed 692 of
	// 1758 in the 15 s; 20 leaves a factor of 30 for a loaded host.
	const unsigned min_ok = o.min_ops ? o.min_ops : 20;
	const uint32_t depth = 8;
	auto a = open_endpoint("A", o.a, o.ipv6, false, 64);
	auto b = open_endpoint("B", o.b, o.ipv6, false, 4096);
	auto xrcd = open_xrcd(b->ctx.get());
	ibv_mtu mtu = pick_mtu(*a, *b, o.mtu);
	Buffer rbuf(kSlot * kRecvSlots), sbuf(kSlot * depth);
	auto rmr = reg_mr(b->pd.get(), rbuf.data(), rbuf.size(), IBV_ACCESS_LOCAL_WRITE);
	auto smr = reg_mr(a->pd.get(), sbuf.data(), sbuf.size(), 0);

	Churn ch(o, v, *b, xrcd.get(), rmr.get(), rbuf.data());
	std::thread poller([&] { ch.poll(); });
	std::thread churner([&] { ch.churn(); });

	Rng rng(o.seed ^ 0x5e4d);
	std::map<std::string, uint64_t> send_status;
	std::vector<uint64_t> sent_ok;
	uint64_t seq = 0, reconnects = 0, stalls = 0, no_srq_waits = 0, posted = 0;
	uint32_t psn = 0x100;
	auto t0 = Clock::now();
	try {
		while (secs_since(t0) < secs && !ch.errors) {
			// A fresh pair: an INI QP on A, a TGT QP on B.
			QpPtr tgt = create_xrc_tgt(b->ctx.get(), xrcd.get());
			QpPtr ini = create_xrc_ini(*a, depth);
			xrc_connect(*a, ini.get(), *b, tgt.get(), mtu, o.ack_timeout, psn, psn + 0x1000);
			psn = (psn + 0x12345) & 0xffffff;
			std::deque<uint64_t> inflight;
			bool broken = false;
			auto last = Clock::now();
			while (!broken && secs_since(t0) < secs && !ch.errors) {
				while (inflight.size() < depth) {
					uint32_t srqn = 0;
					{
						std::lock_guard<std::mutex> g(ch.mu);
						if (!ch.dead.empty() && rng.chance(3))
							srqn = ch.dead[rng.range(0, ch.dead.size() - 1)];
						else if (!ch.live.empty())
							srqn = ch.live[rng.range(0, ch.live.size() - 1)];
					}
					if (!srqn) {
						no_srq_waits++;
						break;
					}
					uint64_t s = seq++;
					if (s >= kMaxSeq)
						throw Error("sequence space exhausted");
					uint8_t *m = sbuf.data() + (s % depth) * kSlot;
					MsgHdr h{kMagic, srqn, s, static_cast<uint32_t>(rng.range(kHdr, 3000)), 0,
						 msg_tag(o.seed, s)};
					std::memcpy(m, &h, sizeof(h));
					fill_stream(m + kHdr, h.len - kHdr, h.tag, 0);
					ibv_sge sge{reinterpret_cast<uintptr_t>(m), h.len, smr->lkey};
					ibv_send_wr w = signaled_wr(s, sge, IBV_WR_SEND);
					w.qp_type.xrc.remote_srqn = srqn;
					ibv_send_wr *badw;
					if (int rc = ibv_post_send(ini.get(), &w, &badw))
						throw_errno("ibv_post_send(XRC SEND)", rc);
					inflight.push_back(s);
					posted++;
				}
				ibv_wc wc[16];
				int n = ibv_poll_cq(a->scq.get(), 16, wc);
				if (n < 0)
					throw Error("ibv_poll_cq on A failed");
				for (int i = 0; i < n; i++) {
					last = Clock::now();
					if (inflight.empty() || wc[i].wr_id != inflight.front()) {
						v.fail("A: completion for wr_id %llu out of order",
						       static_cast<unsigned long long>(wc[i].wr_id));
						broken = true;
						continue;
					}
					inflight.pop_front();
					if (wc[i].status == IBV_WC_SUCCESS)
						sent_ok.push_back(wc[i].wr_id);
					else {
						send_status[wc_status(wc[i].status)]++;
						broken = true;
					}
				}
				if (!n) {
					if (secs_since(last) > 10 && !inflight.empty()) {
						stalls++;
						broken = true;
					}
					std::this_thread::sleep_for(20us);
				}
			}
			// Finish the pair: flush what is left, then destroy it.
			if (query_state(ini.get()) != IBV_QPS_ERR)
				modify_state(ini.get(), IBV_QPS_ERR);
			auto rest = collect(*a, a->scq.get(), inflight.size(), 20s);
			for (auto &w : rest) {
				if (w.status == IBV_WC_SUCCESS)
					sent_ok.push_back(w.wr_id);
				else
					send_status[wc_status(w.status)]++;
			}
			if (rest.size() != inflight.size())
				v.fail("A: %zu of %zu WRs never completed after the QP went to ERR", inflight.size() - rest.size(),
				       inflight.size());
			ini.reset();
			tgt.reset();
			reconnects++;
		}
	} catch (const std::exception &e) {
		v.fail("sender: %s", e.what());
	}
	ch.stop = true;
	churner.join();
	// Late receive completions: a SEND completed successfully only once its
	// receive completed (the responder acknowledges after that), so each is
	// in a CQ by now; poll until all of them were seen (up to 10 s: this was
	// a fixed 500 ms, which a stalled TCG guest can exceed), then stop.
	{
		auto t1 = Clock::now();
		auto all_seen = [&] {
			return std::all_of(sent_ok.begin(), sent_ok.end(),
					   [&](uint64_t s) { return ch.delivered[s].load(); });
		};
		while (!all_seen() && secs_since(t1) < 10)
			std::this_thread::sleep_for(1ms);
	}
	ch.stop_poll = true;
	poller.join();

	std::string ss, rs;
	for (auto &[k, n] : send_status)
		ss += strf("%s%s %llu", ss.empty() ? "" : ", ", k.c_str(), static_cast<unsigned long long>(n));
	for (auto &[k, n] : ch.recv_status)
		rs += strf("%s%s %llu", rs.empty() ? "" : ", ", k.c_str(), static_cast<unsigned long long>(n));
	v.info("%.1f s: %llu SENDs posted, %zu completed successfully, errors: %s; %llu QP pairs; %llu stalls "
	       "(no completion in 10 s); %llu waits for a live SRQ",
	       secs_since(t0), static_cast<unsigned long long>(posted), sent_ok.size(), ss.empty() ? "none" : ss.c_str(),
	       static_cast<unsigned long long>(reconnects), static_cast<unsigned long long>(stalls),
	       static_cast<unsigned long long>(no_srq_waits));
	v.info("XRC SRQs: %llu created (%llu left empty), %llu destroyed, %llu receives posted; receive completions: "
	       "%llu verified, %llu on reused slots (not checked), errors: %s",
	       static_cast<unsigned long long>(ch.created.load()), static_cast<unsigned long long>(ch.empty_srqs.load()),
	       static_cast<unsigned long long>(ch.destroyed.load()),
	       static_cast<unsigned long long>(ch.recvs_posted.load()),
	       static_cast<unsigned long long>(ch.verified.load()), static_cast<unsigned long long>(ch.stale.load()),
	       rs.empty() ? "none" : rs.c_str());
	std::string ev = drain_async(b->ctx.get());
	v.info("async events on %s: %s", b->devname.c_str(), ev.empty() ? "none" : ev.c_str());

	v.check(ch.bad_data == 0, "every receive completion delivered the message it claims, into the SRQ it named "
		"(%llu bad)", static_cast<unsigned long long>(ch.bad_data.load()));
	size_t missing = 0;
	std::string first;
	for (uint64_t s : sent_ok) {
		if (ch.delivered[s].load())
			continue;
		if (missing++ < 5)
			first += strf(" %llu", static_cast<unsigned long long>(s));
	}
	v.check(missing == 0, "every successfully completed SEND was delivered and verified (%zu missing%s%s)",
		missing, missing ? ", e.g. seq" : "", first.c_str());
	v.check(sent_ok.size() >= min_ok, "at least %u SENDs completed successfully (%zu)", min_ok, sent_ok.size());
	v.check(ch.created >= 10 && ch.created == ch.destroyed, "SRQs churned: %llu created, %llu destroyed",
		static_cast<unsigned long long>(ch.created.load()), static_cast<unsigned long long>(ch.destroyed.load()));
	rmr.reset();
	xrcd.reset();
	std::string why = rc_send_check(o, o.a, o.b);
	v.check(why.empty(), "afterwards an RC pair %s <-> %s passes a verified SEND each way%s%s", o.a.name.c_str(),
		o.b.name.c_str(), why.empty() ? "" : ": ", why.c_str());
}

} // namespace sl
