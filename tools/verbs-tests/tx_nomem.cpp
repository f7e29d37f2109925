// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tx_nomem: what a packet the kernel could not allocate leaves behind.
 *
 * sroce's debugfs knobs sroce/fail_tx_alloc, fail_tx_alloc_skip and
 * fail_tx_alloc_qpn (root's) make the next N request packet allocations of
 * one QP fail, as if the kernel were out of memory, after letting K through. Each
 * case sets them for A's QP right before it posts, on a fresh pair of
 * connected QPs (A sends to B). It checks:
 *  - uc: a one-packet UC WRITE whose packet was not allocated completes
 *    successfully, like one lost on the wire (UC is unreliable), and so
 *    does the fenced WRITE posted behind it; the second's data is at B,
 *    the first's is not. (The first used to stay unretired: neither ever
 *    completed.)
 *  - uc-chained: the same, both WRITEs posted in one list (the second was
 *    fetched with the first: the requester must go on by itself).
 *  - uc-multi: a 4-packet UC WRITE whose first packet was not allocated
 *    completes by itself, none of it at B (the responder drops a message
 *    without its first packet), and a WRITE posted after it arrives.
 *  - rc-timeout-0: an RC WRITE (ACK timeout 0: none, retry_cnt 7) whose
 *    packet was not allocated still completes, its data at B: the
 *    requester holds off and sends it again without waiting for an ACK
 *    timeout that never comes. (It used to wait for the next post.)
 *  - rc-no-retry: an RC WRITE of 64 KiB (ACK timeout 18, retry_cnt 0) whose
 *    first 3 packets were not allocated completes successfully, its data
 *    at B: the host's memory costs no transport retry. (With retry_cnt 0
 *    the ACK timeout after the drop used to fail it with RETRY_EXC_ERR.)
 *  - rc-mid: an RC WRITE of 64 KiB (ACK timeout 18: a slow guest's ACK
 *    must not look late) whose 11th packet was not allocated completes,
 *    its data at B.
 *  - ud: a UD SEND whose packet was not allocated completes successfully
 *    (a datagram lost), B receives only the one posted behind it.
 * Every case checks that the knob was used up (it reads back 0); the RC
 * cases, that A's device retransmitted nothing (retransmitted_pkts): only
 * the packet that was not allocated is sent again, not those sent before
 * it.
 *
 * Output: "PASS CASE ..." or "FAIL CASE" per case, a failure's reasons on
 * indented "FAIL: ..." lines before it. Exit status 0 all passed, 1 a case
 * failed, 2 setup/usage error (the knob missing or not writable included).
 */
#include "common.h"

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace vt;

namespace
{

constexpr uint32_t kQkey = 0x11110000;
constexpr size_t kGrh = 40;
constexpr size_t kSmall = 256;          // one packet at any path MTU
constexpr size_t kBig = 64 * 1024;      // rc-no-retry's WRITE
constexpr size_t kBufLen = 2 * kBig;

struct Options : CommonOptions {
	std::string knob = "/sys/kernel/debug/sroce/fail_tx_alloc"; // and ..._skip beside it
	int timeout = 10; // seconds a completion may take
	std::vector<std::string> cases;
};

const std::vector<const char *> kCases = {"uc",     "uc-chained", "uc-multi", "rc-timeout-0", "rc-no-retry",
					  "rc-mid", "ud"};

using AhPtr = std::unique_ptr<ibv_ah, IbvDeleter<ibv_ah, ibv_destroy_ah>>;

void knob_write(const std::string &path, int n)
{
	std::ofstream f(path);
	if (!f)
		throw Error(strf("cannot open %s for writing (root, debugfs, sroce.ko loaded?)", path.c_str()));
	f << n << '\n';
	f.flush();
	if (!f)
		throw Error(strf("cannot write %d to %s", n, path.c_str()));
}

// Fail the next n allocations of QP number qpn (0: any QP's) after letting
// skip of them through.
void knob_arm(const Options &o, uint32_t qpn, int skip, int n)
{
	knob_write(o.knob + "_qpn", static_cast<int>(qpn));
	knob_write(o.knob + "_skip", skip);
	knob_write(o.knob, n);
}

int knob_read(const std::string &path)
{
	std::ifstream f(path);
	int n = -1;
	if (!(f >> n))
		throw Error(strf("cannot read %s", path.c_str()));
	return n;
}

QpPtr make_qp(const Endpoint &ep, ibv_qp_type t)
{
	ibv_qp_init_attr ia{};
	ia.send_cq = ep.scq.get();
	ia.recv_cq = ep.rcq.get();
	ia.qp_type = t;
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	QpPtr q(ibv_create_qp(ep.pd.get(), &ia));
	if (!q)
		throw_errno(strf("%s: ibv_create_qp", ep.label.c_str()), errno);
	return q;
}

// One case: A's QP and buffer, B's QP and buffer, of one type, connected.
class Case
{
public:
	Case(const Options &o, ibv_qp_type t, const ConnParams &p) : o_(o), t_(t)
	{
		a_ = open_endpoint("A", o.a, o.ipv6, false, 16);
		b_ = open_endpoint("B", o.b, o.ipv6, false, 16);
		qa_ = make_qp(*a_, t);
		qb_ = make_qp(*b_, t);
		ConnParams cp = p;
		cp.mtu = pick_mtu(*a_, *b_, o.mtu);
		mtu_ = static_cast<size_t>(128) << cp.mtu;
		cp.qkey = kQkey;
		connect_qp(*a_, qa_.get(), *b_, qb_->qp_num, cp, 0);
		connect_qp(*b_, qb_.get(), *a_, qa_->qp_num, cp, 0);
		sbuf_.assign(kBufLen, 0);
		rbuf_.assign(kBufLen + kGrh, 0);
		smr_ = reg_mr(a_->pd.get(), sbuf_.data(), sbuf_.size(), IBV_ACCESS_LOCAL_WRITE);
		rmr_ = reg_mr(b_->pd.get(), rbuf_.data(), rbuf_.size(),
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (t == IBV_QPT_UD) {
			ibv_ah_attr ah = ah_attr_to(*a_, *b_);
			ah_.reset(ibv_create_ah(a_->pd.get(), &ah));
			if (!ah_)
				throw_errno("A: ibv_create_ah", errno);
		}
	}

	// A's bytes [off, off + len) are fill; B's are zero.
	void fill(size_t off, size_t len, uint8_t fill) { std::memset(sbuf_.data() + off, fill, len); }

	struct Wr {
		uint64_t id;
		size_t off, len;
		unsigned flags;
	};

	// WRs, in one ibv_post_send: each a WRITE (UD: a SEND) of A's
	// [off, off + len) to B's same place.
	void post(const std::vector<Wr> &wrs)
	{
		std::vector<ibv_sge> sge(wrs.size());
		std::vector<ibv_send_wr> w(wrs.size());
		for (size_t i = 0; i < wrs.size(); i++) {
			sge[i] = {reinterpret_cast<uintptr_t>(sbuf_.data()) + wrs[i].off,
				  static_cast<uint32_t>(wrs[i].len), smr_->lkey};
			w[i] = signaled_wr(wrs[i].id, sge[i], t_ == IBV_QPT_UD ? IBV_WR_SEND : IBV_WR_RDMA_WRITE);
			w[i].send_flags |= wrs[i].flags;
			w[i].next = i + 1 < wrs.size() ? &w[i + 1] : nullptr;
			if (t_ == IBV_QPT_UD) {
				w[i].wr.ud.ah = ah_.get();
				w[i].wr.ud.remote_qpn = qb_->qp_num;
				w[i].wr.ud.remote_qkey = kQkey;
			} else {
				w[i].wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(rbuf_.data()) + wrs[i].off;
				w[i].wr.rdma.rkey = rmr_->rkey;
			}
		}
		ibv_send_wr *bad = nullptr;
		int rc = ibv_post_send(qa_.get(), w.data(), &bad);
		if (rc)
			throw_errno("A: ibv_post_send", rc);
	}
	void post(uint64_t id, size_t off, size_t len, unsigned flags = 0) { post({{id, off, len, flags}}); }

	// A's device's hardware counter name (sysfs).
	uint64_t a_counter(const char *name) const
	{
		std::string path = strf("/sys/class/infiniband/%s/ports/%u/hw_counters/%s",
					ibv_get_device_name(a_->ctx->device), a_->port, name);
		std::ifstream f(path);
		uint64_t v = 0;
		if (!(f >> v))
			throw Error(strf("cannot read %s", path.c_str()));
		return v;
	}
	size_t mtu() const { return mtu_; }
	uint32_t qpn_a() const { return qa_->qp_num; }

	// B posts a receive for a datagram at its [off, off + kGrh + len).
	void post_recv(uint64_t id, size_t off, size_t len)
	{
		ibv_sge sge{reinterpret_cast<uintptr_t>(rbuf_.data()) + off, static_cast<uint32_t>(kGrh + len),
			    rmr_->lkey};
		ibv_recv_wr w{}, *bad = nullptr;
		w.wr_id = id;
		w.sg_list = &sge;
		w.num_sge = 1;
		int rc = ibv_post_recv(qb_.get(), &w, &bad);
		if (rc)
			throw_errno("B: ibv_post_recv", rc);
	}

	// A's send completions: want them (ids, in order, successful) within
	// the timeout, and no more.
	void expect_completions(Checker &c, const std::vector<uint64_t> &ids)
	{
		auto wc = collect(*a_, a_->scq.get(), ids.size(), std::chrono::seconds(o_.timeout));
		std::string got;
		for (auto &w : wc)
			got += strf(" WR %llu %s;", static_cast<unsigned long long>(w.wr_id),
				    ibv_wc_status_str(w.status));
		bool ok = wc.size() == ids.size();
		for (size_t i = 0; ok && i < wc.size(); i++)
			ok = wc[i].wr_id == ids[i] && wc[i].status == IBV_WC_SUCCESS;
		c.expect(ok, strf("A: %zu send completions, successful, in order, within %d s", ids.size(), o_.timeout),
			 strf("got %zu:%s", wc.size(), got.c_str()));
		ibv_wc extra;
		c.expect(ibv_poll_cq(a_->scq.get(), 1, &extra) == 0, "A: no other send completion");
		c.expect(qp_state(qa_.get()) == IBV_QPS_RTS, "A: QP still in RTS",
			 qp_state_str(qp_state(qa_.get())));
	}

	// B's bytes [off, off + len) are what A sent (sent) or still zero.
	void expect_at_b(Checker &c, size_t off, size_t len, bool sent, const std::string &what)
	{
		size_t bad = 0;
		for (size_t i = 0; i < len; i++)
			bad += rbuf_[off + i] != (sent ? sbuf_[off + i] : 0);
		c.expect(!bad, strf("B: %s", what.c_str()), strf("%zu of %zu bytes differ", bad, len));
	}

	// B's bytes [off, off + len) are all fill.
	void expect_payload(Checker &c, size_t off, size_t len, uint8_t fill, const std::string &what)
	{
		size_t bad = 0;
		for (size_t i = 0; i < len; i++)
			bad += rbuf_[off + i] != fill;
		c.expect(!bad, strf("B: %s", what.c_str()), strf("%zu of %zu bytes differ", bad, len));
	}

	Endpoint &b() { return *b_; }
	const Options &o_;

private:
	ibv_qp_type t_;
	std::unique_ptr<Endpoint> a_, b_;
	QpPtr qa_, qb_;
	AhPtr ah_;
	std::vector<uint8_t> sbuf_, rbuf_;
	MrPtr smr_, rmr_;
	size_t mtu_ = 0;
};

void expect_knob_used(Checker &c, const Options &o)
{
	int left = knob_read(o.knob), skip = knob_read(o.knob + "_skip");
	c.expect(left == 0 && skip == 0, "every allocation failure the case asked for happened, where it asked",
		 strf("%d failures, %d to let through left", left, skip));
	knob_arm(o, 0, 0, 0);
}

ConnParams uc_params()
{
	ConnParams p;
	p.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	return p;
}

void case_uc(const Options &o, Checker &c, bool chained)
{
	Case k(o, IBV_QPT_UC, uc_params());
	k.fill(0, kSmall, 0x11);
	k.fill(kBig, kSmall, 0x22);
	knob_arm(o, k.qpn_a(), 0, 1);
	if (chained) {
		k.post({{1, 0, kSmall, 0}, {2, kBig, kSmall, IBV_SEND_FENCE}});
	} else {
		k.post(1, 0, kSmall);
		k.post(2, kBig, kSmall, IBV_SEND_FENCE);
	}
	k.expect_completions(c, {1, 2});
	expect_knob_used(c, o);
	k.expect_at_b(c, 0, kSmall, false, "the WRITE whose packet was not allocated did not arrive");
	k.expect_at_b(c, kBig, kSmall, true, "the fenced WRITE behind it arrived");
}

void case_uc_multi(const Options &o, Checker &c)
{
	Case k(o, IBV_QPT_UC, uc_params());
	size_t len = 4 * k.mtu();
	if (len > kBig)
		throw Error(strf("path MTU %zu: 4 packets do not fit the buffer", k.mtu()));
	k.fill(0, len, 0x55);
	k.fill(kBig, kSmall, 0x66);
	knob_arm(o, k.qpn_a(), 0, 1);
	// Alone: no later post may be what runs the requester again.
	k.post(1, 0, len);
	k.expect_completions(c, {1});
	expect_knob_used(c, o);
	k.post(2, kBig, kSmall);
	k.expect_completions(c, {2});
	k.expect_at_b(c, 0, len, false,
		      strf("nothing of the %zu-byte WRITE whose first packet was not allocated", len));
	k.expect_at_b(c, kBig, kSmall, true, "the WRITE behind it arrived");
}

void rc_case(const Options &o, Checker &c, uint8_t timeout, uint8_t retry_cnt, int skip, int fails, size_t len)
{
	ConnParams p;
	p.timeout = timeout;
	p.retry_cnt = retry_cnt;
	Case k(o, IBV_QPT_RC, p);
	for (size_t i = 0; i < len; i++)
		k.fill(i, 1, static_cast<uint8_t>(mix64(i)));
	uint64_t retx = k.a_counter("retransmitted_pkts");
	knob_arm(o, k.qpn_a(), skip, fails);
	k.post(1, 0, len);
	k.expect_completions(c, {1});
	expect_knob_used(c, o);
	k.expect_at_b(c, 0, len, true, strf("the %zu bytes arrived", len));
	uint64_t now = k.a_counter("retransmitted_pkts");
	c.expect(now == retx, "A: nothing sent again but what was not allocated (retransmitted_pkts)",
		 strf("+%llu", static_cast<unsigned long long>(now - retx)));
}

void case_ud(const Options &o, Checker &c)
{
	Case k(o, IBV_QPT_UD, ConnParams{});
	k.fill(0, kSmall, 0x33);
	k.fill(kBig, kSmall, 0x44);
	k.post_recv(1, 0, kSmall);
	k.post_recv(2, kBig, kSmall);
	knob_arm(o, k.qpn_a(), 0, 1);
	k.post(1, 0, kSmall);
	k.post(2, kBig, kSmall);
	k.expect_completions(c, {1, 2});
	expect_knob_used(c, o);
	// Only the second datagram: it lands in B's first receive.
	auto rw = collect(k.b(), k.b().rcq.get(), 2, std::chrono::seconds(2));
	c.expect(rw.size() == 1 && rw[0].status == IBV_WC_SUCCESS && rw[0].wr_id == 1 &&
			 rw[0].byte_len == kGrh + kSmall,
		 "B: received one datagram (the second), into its first receive",
		 strf("%zu receive completions", rw.size()));
	k.expect_payload(c, kGrh, kSmall, 0x44, "the datagram in its first receive is the second's");
}

void usage(FILE *f)
{
	std::fprintf(f,
		     "usage: tx_nomem [options]\n"
		     "%s"
		     "  --knob PATH       sroce's fail_tx_alloc (default /sys/kernel/debug/sroce/fail_tx_alloc)\n"
		     "  --case NAME       run only this case (repeatable): uc, uc-chained, uc-multi,\n"
		     "                    rc-timeout-0, rc-no-retry, rc-mid, ud\n"
		     "  --timeout SECS    a completion may take this long (default 10)\n"
		     "Exit status: 0 all cases passed, 1 a case failed, 2 setup/usage error.\n",
		     kCommonUsage);
}

} // namespace

int main(int argc, char **argv)
{
	return guarded_main("tx_nomem", [&] {
		Options o;
		enum { O_KNOB = 256, O_CASE, O_TIMEOUT };
		int rc = parse_args(argc, argv, o, "h",
				    {{"knob", required_argument, nullptr, O_KNOB},
				     {"case", required_argument, nullptr, O_CASE},
				     {"timeout", required_argument, nullptr, O_TIMEOUT}},
				    usage, [&](int c, const char *arg) {
					    switch (c) {
					    case O_KNOB: o.knob = arg; return true;
					    case O_CASE: o.cases.emplace_back(arg); return true;
					    case O_TIMEOUT: o.timeout = std::stoi(arg); return true;
					    default: return false;
					    }
				    });
		if (rc >= 0)
			return rc;
		if (o.timeout < 1)
			throw Error("--timeout at least 1");
		knob_arm(o, 0, 0, 0);
		int failed = run_named_cases(kCases, o.cases, [&](const std::string &n, Checker &c) {
			if (n == "uc")
				case_uc(o, c, false);
			else if (n == "uc-chained")
				case_uc(o, c, true);
			else if (n == "uc-multi")
				case_uc_multi(o, c);
			else if (n == "rc-timeout-0")
				rc_case(o, c, 0, 7, 0, 1, kSmall);
			else if (n == "rc-no-retry")
				rc_case(o, c, 18, 0, 0, 3, kBig);
			else if (n == "rc-mid")
				rc_case(o, c, 18, 7, 10, 1, kBig);
			else
				case_ud(o, c);
		});
		return failed ? 1 : 0;
	});
}
