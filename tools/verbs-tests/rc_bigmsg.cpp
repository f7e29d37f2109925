// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// rc_bigmsg: single RC messages of a very large size (default 1 GiB), each
// checked byte for byte.
//
// One process, two RC QPs connected to each other (two devices, or the same
// device twice). A owns buffer X, B owns buffer Y, each `--size` bytes plus
// a guard page either side, registered once. Three operations, A always the
// requester:
//
//   WRITE  X -> Y   X holds stream s1 (A's SGE list), Y gets it (one range);
//   READ   Y -> X   Y refilled with s2, read into X (A's SGE list);
//   SEND   X -> Y   X refilled with s3 (A's SGE list), received into Y
//                   through B's receive SGE list (cut at other places).
//
// A stream is 64-bit words w(seed, i) of the message offset 8i, so a byte
// that lands at the wrong place, stays stale (the previous stream is still
// there) or comes from nowhere shows. SGE lists cut the message at offsets
// that are neither 8-byte nor page aligned, and place the pieces in the
// buffer in a different order than in the message, so an SGE boundary
// handled wrong cannot go unnoticed. Guard pages around both buffers must
// stay untouched. A's first PSN is just below the 24-bit wrap, so the first
// message crosses it.
//
// Memory: 2 x size registered (X and Y), nothing else of that size. Filling
// and checking run on all CPUs (the TCG guest is slow at touching 1 GiB).

#include "common.h"

#include <getopt.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstring>
#include <thread>

using namespace vt;

namespace {

enum Kind { K_WRITE, K_READ, K_SEND, K_NKINDS };
const char *const kind_name[K_NKINDS] = {"WRITE", "READ", "SEND"};

struct Options : CommonOptions {
	size_t size = size_t{1} << 30;
	unsigned sges = 4;
	unsigned kinds = (1u << K_NKINDS) - 1;
	uint64_t seed = 0;
	bool seed_given = false;
	unsigned timeout = 600; // seconds per operation
	unsigned threads = 0;   // fill/check threads, 0: online CPUs (max 8)
	uint8_t ack_timeout = 14;
};

constexpr size_t kGuard = 4096;

// A failed check found before any traffic (exit 1, not 2).
struct Verdict : Error {
	using Error::Error;
};

// --- the pattern --------------------------------------------------------------------

// Word i (message bytes 8i..8i+7) of stream `tag`: a bijection of i for a
// given tag (odd multiply, xor-shift), different for every tag.
inline uint64_t pword(uint64_t tag, uint64_t i)
{
	uint64_t x = (i + tag) * 0x9e3779b97f4a7c15ULL;
	return x ^ (x >> 29) ^ tag;
}

inline uint8_t pbyte(uint64_t tag, uint64_t off)
{
	return static_cast<uint8_t>(pword(tag, off >> 3) >> ((off & 7) * 8));
}

// dst[0..len) = stream(tag)[off..off+len)
void pfill(uint8_t *dst, size_t len, uint64_t tag, uint64_t off)
{
	size_t i = 0;
	for (; i < len && ((off + i) & 7); i++)
		dst[i] = pbyte(tag, off + i);
	uint64_t wi = (off + i) >> 3;
	for (; i + 8 <= len; i += 8, wi++) {
		uint64_t w = pword(tag, wi);
		std::memcpy(dst + i, &w, 8);
	}
	for (; i < len; i++)
		dst[i] = pbyte(tag, off + i);
}

// Mismatches of src[0..len) against stream(tag) at off: the number of bad
// bytes, the first and last bad byte, and the first few runs of bad bytes
// (a run: bad bytes with fewer than 64 good ones between them).
struct Mismatch {
	uint64_t bad = 0;
	uint64_t first = ~uint64_t{0}, last = 0; // buffer offsets
	struct Run {
		uint64_t lo, hi; // [lo, hi) buffer offsets
	};
	std::vector<Run> runs;
	void add(uint64_t at)
	{
		bad++;
		first = std::min(first, at);
		last = std::max(last, at);
		if (!runs.empty() && at >= runs.back().lo && at <= runs.back().hi + 64) {
			runs.back().hi = std::max(runs.back().hi, at + 1);
			return;
		}
		if (runs.size() < 8)
			runs.push_back({at, at + 1});
	}
	void merge(const Mismatch &o)
	{
		bad += o.bad;
		first = std::min(first, o.first);
		last = std::max(last, o.last);
		for (auto &r : o.runs)
			if (runs.size() < 8)
				runs.push_back(r);
	}
};

// Fast path: xor-or over blocks, the slow byte scan only for a bad block.
// `base` is the buffer offset of src[0] (for the report).
void pcheck(const uint8_t *src, size_t len, uint64_t tag, uint64_t off, uint64_t base, Mismatch &m)
{
	size_t i = 0;
	auto slow = [&](size_t lo, size_t hi) {
		for (size_t k = lo; k < hi; k++)
			if (src[k] != pbyte(tag, off + k))
				m.add(base + k);
	};
	size_t head = 0;
	while (head < len && ((off + head) & 7))
		head++;
	slow(0, head);
	i = head;
	constexpr size_t kBlock = 4096;
	uint64_t wi = (off + i) >> 3;
	while (i + 8 <= len) {
		size_t n = std::min(kBlock, (len - i) & ~size_t{7});
		uint64_t acc = 0;
		for (size_t k = 0; k < n; k += 8, wi++) {
			uint64_t g;
			std::memcpy(&g, src + i + k, 8);
			acc |= g ^ pword(tag, wi);
		}
		if (acc)
			slow(i, i + n);
		i += n;
	}
	slow(i, len);
}

unsigned cpu_count()
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		return std::max(1, CPU_COUNT(&set));
	return 1;
}

// --- SGE layouts --------------------------------------------------------------------

// A piece of the message: message bytes [msg_off, msg_off+len) live at
// buffer offset buf_off.
struct Piece {
	uint64_t msg_off, len, buf_off;
};

// Cut `size` bytes into n pieces at unaligned places (`salt` moves the
// cuts), and lay them out in the buffer in the order perm (a rotation by
// `rot` reversed), back to back from kGuard.
std::vector<Piece> layout(size_t size, unsigned n, unsigned salt, unsigned rot)
{
	n = static_cast<unsigned>(std::clamp<size_t>(n, 1, std::max<size_t>(size, 1)));
	std::vector<uint64_t> cuts{0};
	for (unsigned k = 1; k < n; k++) {
		uint64_t c = size / n * k;
		// 1021 and 8191 are odd: the cuts are neither word nor page aligned.
		uint64_t adj = (k * 1021u + salt * 8191u) % 4096;
		c = c > adj + 1 ? c - adj : c;
		c = std::clamp<uint64_t>(c, cuts.back() + 1, size - (n - k));
		cuts.push_back(c);
	}
	cuts.push_back(size);
	std::vector<Piece> pieces;
	for (unsigned k = 0; k < n; k++)
		pieces.push_back({cuts[k], cuts[k + 1] - cuts[k], 0});
	// Buffer order: reversed, then rotated.
	std::vector<unsigned> order;
	for (unsigned k = 0; k < n; k++)
		order.push_back((n - 1 - k + rot) % n);
	uint64_t pos = kGuard;
	for (unsigned k : order) {
		pieces[k].buf_off = pos;
		pos += pieces[k].len;
	}
	return pieces;
}

std::string describe(const std::vector<Piece> &v)
{
	std::string s;
	for (auto &p : v)
		s += strf(" [msg %" PRIu64 "+%" PRIu64 " @buf %" PRIu64 "]", p.msg_off, p.len, p.buf_off);
	return s;
}

// --- the test -------------------------------------------------------------------------

struct Side {
	Buffer buf;
	MrPtr mr;
	const char *name;
};

class Test {
public:
	explicit Test(const Options &o) : opt_(o) {}
	int run();

private:
	Options opt_;
	std::unique_ptr<Endpoint> ep_[2];
	Side side_[2];
	unsigned nthreads_ = 1;
	uint64_t guard_tag_[2] = {};

	QpCaps caps_;
	ConnParams cp_[2];
	void setup();
	void reconnect();
	// Run fn(lo, hi) over [0, len) cut in nthreads_ 8-byte aligned parts.
	template <typename F> void parallel(uint64_t len, F fn);
	void fill(Side &s, const std::vector<Piece> &pieces, uint64_t tag);
	bool check(Side &s, const std::vector<Piece> &pieces, uint64_t tag, const char *what);
	bool check_guards(const char *when);
	void fill_guards();
	bool wait_wc(Endpoint &ep, ibv_cq *cq, ibv_wc &wc, const char *what, Clock::time_point start);
	bool do_op(Kind k, uint64_t tag);
	std::vector<ibv_sge> sges(const Side &s, const std::vector<Piece> &pieces);
};

template <typename F> void Test::parallel(uint64_t len, F fn)
{
	unsigned n = nthreads_;
	if (len < (uint64_t{1} << 20))
		n = 1;
	std::vector<std::thread> th;
	uint64_t part = (len / n + 7) & ~uint64_t{7};
	for (unsigned t = 0; t < n; t++) {
		uint64_t lo = std::min<uint64_t>(len, t * part), hi = t + 1 == n ? len : std::min<uint64_t>(len, lo + part);
		if (lo >= hi)
			continue;
		th.emplace_back([=, &fn] { fn(t, lo, hi); });
	}
	for (auto &t : th)
		t.join();
}

void Test::fill(Side &s, const std::vector<Piece> &pieces, uint64_t tag)
{
	for (auto &p : pieces)
		parallel(p.len, [&](unsigned, uint64_t lo, uint64_t hi) {
			pfill(s.buf.data() + p.buf_off + lo, hi - lo, tag, p.msg_off + lo);
		});
}

bool Test::check(Side &s, const std::vector<Piece> &pieces, uint64_t tag, const char *what)
{
	Mismatch total;
	for (auto &p : pieces) {
		std::vector<Mismatch> mm(nthreads_);
		parallel(p.len, [&](unsigned t, uint64_t lo, uint64_t hi) {
			pcheck(s.buf.data() + p.buf_off + lo, hi - lo, tag, p.msg_off + lo, p.buf_off + lo, mm[t]);
		});
		for (auto &m : mm)
			total.merge(m);
	}
	if (!total.bad)
		return true;
	std::fprintf(stderr, "FAIL (seed %" PRIu64 "): %s: %" PRIu64 " bad bytes in %s (buffer offsets %" PRIu64
		     "..%" PRIu64 ", buffer offset = message offset + %zu for a single piece)\n",
		     opt_.seed, what, total.bad, s.name, total.first, total.last, kGuard);
	auto msg_of = [&](uint64_t at) -> uint64_t {
		for (auto &p : pieces)
			if (at >= p.buf_off && at < p.buf_off + p.len)
				return p.msg_off + (at - p.buf_off);
		return ~uint64_t{0};
	};
	for (auto &r : total.runs) {
		uint64_t mo = msg_of(r.lo);
		uint64_t got = 0, want = pword(tag, mo >> 3);
		std::memcpy(&got, s.buf.data() + (r.lo & ~uint64_t{7}), 8);
		std::fprintf(stderr, "  bad run: buffer [%" PRIu64 ", %" PRIu64 ") = message [%" PRIu64 ", ...) (%" PRIu64
			     " bytes): first byte 0x%02x, expected 0x%02x; word at buffer %" PRIu64 " = 0x%016" PRIx64
			     " (expected word of message offset %" PRIu64 ": 0x%016" PRIx64 ")\n",
			     r.lo, r.hi, mo, r.hi - r.lo, s.buf.data()[r.lo], pbyte(tag, mo), r.lo & ~uint64_t{7}, got,
			     mo & ~uint64_t{7}, want);
	}
	return false;
}

void Test::fill_guards()
{
	for (int i = 0; i < 2; i++) {
		Side &s = side_[i];
		pfill(s.buf.data(), kGuard, guard_tag_[i], 0);
		pfill(s.buf.data() + kGuard + opt_.size, kGuard, guard_tag_[i], kGuard);
	}
}

bool Test::check_guards(const char *when)
{
	bool ok = true;
	for (int i = 0; i < 2; i++) {
		Side &s = side_[i];
		Mismatch m;
		pcheck(s.buf.data(), kGuard, guard_tag_[i], 0, 0, m);
		pcheck(s.buf.data() + kGuard + opt_.size, kGuard, guard_tag_[i], kGuard, kGuard + opt_.size, m);
		if (m.bad) {
			std::fprintf(stderr, "FAIL (seed %" PRIu64 "): %s: %" PRIu64 " bytes of the guard pages of %s changed "
				     "(buffer offsets %" PRIu64 "..%" PRIu64 "; data area is [%zu, %zu))\n",
				     opt_.seed, when, m.bad, s.name, m.first, m.last, kGuard, kGuard + opt_.size);
			ok = false;
		}
	}
	return ok;
}

void Test::setup()
{
	nthreads_ = opt_.threads ? opt_.threads : std::min(cpu_count(), 8u);
	ep_[0] = open_endpoint("A", opt_.a, opt_.ipv6, opt_.use_event, 16);
	ep_[1] = open_endpoint("B", opt_.b, opt_.ipv6, opt_.use_event, 16);
	for (auto &e : ep_) {
		if (e->pattr.max_msg_sz < opt_.size)
			throw Verdict(strf("%s: port max_msg_sz %u is smaller than the message size %zu", e->devname.c_str(),
					 e->pattr.max_msg_sz, opt_.size));
	}
	// One SGE covers at most 4 GiB - 1: use enough of them.
	unsigned min_sges = static_cast<unsigned>((opt_.size + 0xfffffffeULL) / 0xffffffffULL);
	opt_.sges = std::max(opt_.sges, std::max(min_sges, 1u));
	caps_.max_send_wr = caps_.max_recv_wr = 4;
	caps_.max_send_sge = caps_.max_recv_sge = opt_.sges;
	caps_.max_inline = 0;
	for (auto &e : ep_) {
		e->create_qp(caps_);
		if (e->cap.max_send_sge < opt_.sges || e->cap.max_recv_sge < opt_.sges ||
		    static_cast<unsigned>(e->dattr.max_sge_rd) < opt_.sges)
			throw Error(strf("%s: cannot have %u SGEs (max_send_sge %u max_recv_sge %u max_sge_rd %d)",
					 e->devname.c_str(), opt_.sges, e->cap.max_send_sge, e->cap.max_recv_sge,
					 e->dattr.max_sge_rd));
	}
	ConnParams &pa = cp_[0], &pb = cp_[1];
	pa.mtu = pb.mtu = pick_mtu(*ep_[0], *ep_[1], opt_.mtu);
	pa.timeout = pb.timeout = opt_.ack_timeout;
	// A's first PSN a few thousand below the 24-bit wrap: the first large
	// message crosses it (path MTU 1024: a GiB is 2^20 PSNs).
	pa.psn = 0xffffff - static_cast<uint32_t>(mix64(opt_.seed ^ 1) % 4096);
	pb.psn = static_cast<uint32_t>(mix64(opt_.seed ^ 2)) & 0xffffff;
	connect_pair(*ep_[0], *ep_[1], pa, pb);

	const char *names[2] = {"X (A's buffer)", "Y (B's buffer)"};
	for (int i = 0; i < 2; i++) {
		Side &s = side_[i];
		s.name = names[i];
		auto t0 = Clock::now();
		s.buf = Buffer(opt_.size + 2 * kGuard);
		s.mr = reg_mr(ep_[i]->pd.get(), s.buf.data(), s.buf.size(),
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
		guard_tag_[i] = mix64(opt_.seed ^ (0x6775617264ULL + i));
		std::printf("%s: %zu bytes registered on %s in %.1f s (lkey 0x%x rkey 0x%x)\n", s.name, s.buf.size(),
			    ep_[i]->devname.c_str(), secs_since(t0), s.mr->lkey, s.mr->rkey);
	}
	fill_guards();
	for (auto &e : ep_)
		std::printf("%s: %s gid[%d] %s qpn 0x%x max_msg_sz %u active_mtu %s\n", e->label.c_str(),
			    e->devname.c_str(), e->gid_index, gid_str(e->gid).c_str(), e->qpn(), e->pattr.max_msg_sz,
			    mtu_str(e->pattr.active_mtu));
	std::printf("path_mtu %s, size %zu, %u SGEs, %u fill/check threads, %s, ack timeout %u, psn A 0x%06x B 0x%06x\n",
		    mtu_str(pa.mtu), opt_.size, opt_.sges, nthreads_,
		    opt_.use_event ? "completion events" : "sleep-polling", opt_.ack_timeout, pa.psn, pb.psn);
	std::fflush(stdout);
}

std::vector<ibv_sge> Test::sges(const Side &s, const std::vector<Piece> &pieces)
{
	std::vector<ibv_sge> v;
	for (auto &p : pieces)
		v.push_back({s.buf.addr() + p.buf_off, static_cast<uint32_t>(p.len), s.mr->lkey});
	return v;
}

// One completion from cq (sleeping between polls, or on the channel).
bool Test::wait_wc(Endpoint &ep, ibv_cq *cq, ibv_wc &wc, const char *what, Clock::time_point start)
{
	auto last_note = Clock::now();
	while (true) {
		if (opt_.use_event) {
			auto got = collect(ep, cq, 1, std::chrono::milliseconds(1000));
			if (!got.empty()) {
				wc = got[0];
				return true;
			}
		} else {
			int n = ibv_poll_cq(cq, 1, &wc);
			if (n < 0)
				throw Error(strf("ibv_poll_cq: %d", n));
			if (n)
				return true;
			usleep(2000);
		}
		double el = secs_since(start);
		if (el > opt_.timeout) {
			std::fprintf(stderr, "FAIL (seed %" PRIu64 "): %s: no completion after %u s\n", opt_.seed, what,
				     opt_.timeout);
			return false;
		}
		if (Clock::now() - last_note > std::chrono::seconds(30)) {
			last_note = Clock::now();
			std::printf("... waiting for the %s completion, %.0f s\n", what, el);
			std::fflush(stdout);
		}
	}
}

bool Test::do_op(Kind k, uint64_t tag)
{
	Side &x = side_[0], &y = side_[1];
	Endpoint &a = *ep_[0], &b = *ep_[1];
	const size_t size = opt_.size;
	std::vector<Piece> whole{{0, size, kGuard}};
	std::vector<Piece> lpieces, rpieces;
	const char *name = kind_name[k];
	auto t0 = Clock::now();

	// Data in place.
	switch (k) {
	case K_WRITE:
		lpieces = layout(size, opt_.sges, 1, 0);
		fill(x, lpieces, tag);
		break;
	case K_READ:
		lpieces = layout(size, opt_.sges, 2, 1);
		fill(y, whole, tag);
		break;
	case K_SEND:
		lpieces = layout(size, opt_.sges, 3, 2);
		rpieces = layout(size, opt_.sges, 4, 1);
		fill(x, lpieces, tag);
		break;
	default:
		break;
	}
	double t_fill = secs_since(t0);

	if (k == K_SEND) {
		auto sg = sges(y, rpieces);
		ibv_recv_wr rwr{}, *bad = nullptr;
		rwr.wr_id = 0x5ec0;
		rwr.sg_list = sg.data();
		rwr.num_sge = static_cast<int>(sg.size());
		int rc = ibv_post_recv(b.qp.get(), &rwr, &bad);
		if (rc)
			throw_errno("ibv_post_recv", rc);
	}
	auto sg = sges(x, lpieces);
	ibv_send_wr wr{}, *bad = nullptr;
	wr.wr_id = 0xb160 + k;
	wr.sg_list = sg.data();
	wr.num_sge = static_cast<int>(sg.size());
	wr.send_flags = IBV_SEND_SIGNALED;
	switch (k) {
	case K_WRITE:
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = y.buf.addr() + kGuard;
		wr.wr.rdma.rkey = y.mr->rkey;
		break;
	case K_READ:
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = y.buf.addr() + kGuard;
		wr.wr.rdma.rkey = y.mr->rkey;
		break;
	default:
		wr.opcode = IBV_WR_SEND;
		break;
	}
	std::printf("%s: %zu bytes, local SGEs%s%s%s\n", name, size, describe(lpieces).c_str(),
		    k == K_SEND ? ", receive SGEs" : "", k == K_SEND ? describe(rpieces).c_str() : "");
	std::fflush(stdout);
	auto t1 = Clock::now();
	int rc = ibv_post_send(a.qp.get(), &wr, &bad);
	if (rc)
		throw_errno(strf("ibv_post_send(%s)", name), rc);

	ibv_wc wc{};
	if (!wait_wc(a, a.scq.get(), wc, name, t1))
		return false;
	double t_xfer = secs_since(t1);
	auto bad_wc = [&](const std::string &m) {
		std::fprintf(stderr, "FAIL (seed %" PRIu64 "): %s: %s\n", opt_.seed, name, m.c_str());
		return false;
	};
	if (wc.status != IBV_WC_SUCCESS)
		return bad_wc(strf("send completion status %s (%d), vendor_err 0x%x after %.1f s",
				   ibv_wc_status_str(wc.status), wc.status, wc.vendor_err, t_xfer));
	ibv_wc_opcode want = k == K_WRITE ? IBV_WC_RDMA_WRITE : k == K_READ ? IBV_WC_RDMA_READ : IBV_WC_SEND;
	if (wc.wr_id != wr.wr_id || wc.opcode != want || wc.qp_num != a.qpn())
		return bad_wc(strf("send completion wr_id 0x%" PRIx64 " opcode %s qp_num 0x%x, expected 0x%" PRIx64
				   " %s 0x%x",
				   wc.wr_id, wc_opcode_str(wc.opcode), wc.qp_num, wr.wr_id, wc_opcode_str(want), a.qpn()));
	if (k == K_READ && wc.byte_len != size)
		return bad_wc(strf("RDMA read completion byte_len %u, expected %zu", wc.byte_len, size));
	if (k == K_SEND) {
		ibv_wc rwc{};
		// The receive completes before the ACK that completes the send.
		if (!wait_wc(b, b.rcq.get(), rwc, "receive", t1))
			return false;
		if (rwc.status != IBV_WC_SUCCESS)
			return bad_wc(strf("receive completion status %s (%d), vendor_err 0x%x",
					   ibv_wc_status_str(rwc.status), rwc.status, rwc.vendor_err));
		if (rwc.wr_id != 0x5ec0 || rwc.opcode != IBV_WC_RECV || rwc.byte_len != size || rwc.qp_num != b.qpn() ||
		    (rwc.wc_flags & IBV_WC_WITH_IMM))
			return bad_wc(strf("receive completion wr_id 0x%" PRIx64 " opcode %s byte_len %u qp_num 0x%x "
					   "wc_flags 0x%x; expected 0x5ec0 RECV %zu 0x%x, no immediate",
					   rwc.wr_id, wc_opcode_str(rwc.opcode), rwc.byte_len, rwc.qp_num, rwc.wc_flags,
					   size, b.qpn()));
	}

	auto t2 = Clock::now();
	bool ok;
	switch (k) {
	case K_WRITE: ok = check(y, whole, tag, "WRITE target"); break;
	case K_READ: ok = check(x, lpieces, tag, "READ sink"); break;
	default: ok = check(y, rpieces, tag, "SEND receive buffer"); break;
	}
	// Sources unchanged.
	if (ok) {
		switch (k) {
		case K_WRITE: ok = check(x, lpieces, tag, "WRITE source (after the WRITE)"); break;
		case K_READ: ok = check(y, whole, tag, "READ source (after the READ)"); break;
		default: ok = check(x, lpieces, tag, "SEND source (after the SEND)"); break;
		}
	}
	ok = check_guards(name) && ok;
	double t_check = secs_since(t2);
	std::printf("%s: %s %zu bytes in %.2f s = %.1f MB/s (fill %.1f s, check %.1f s)\n", name, ok ? "ok" : "FAILED",
		    size, t_xfer, size / t_xfer / 1e6, t_fill, t_check);
	std::fflush(stdout);
	return ok;
}

// After a failed operation: fresh QPs (the old ones may be in ERR, or
// still busy with the operation), connected again, CQs emptied.
void Test::reconnect()
{
	for (auto &e : ep_)
		e->qp.reset();
	ibv_wc wc[16];
	for (auto &e : ep_)
		for (ibv_cq *cq : {e->scq.get(), e->rcq.get()})
			while (ibv_poll_cq(cq, 16, wc) > 0)
				;
	for (auto &e : ep_)
		e->create_qp(caps_);
	connect_pair(*ep_[0], *ep_[1], cp_[0], cp_[1]);
	std::printf("(new QPs after the failure: A qpn 0x%x, B qpn 0x%x)\n", ep_[0]->qpn(), ep_[1]->qpn());
	std::fflush(stdout);
}

int Test::run()
{
	setup();
	auto start = Clock::now();
	int done = 0;
	std::string bad;
	for (int k = 0; k < K_NKINDS; k++) {
		if (!(opt_.kinds & (1u << k)))
			continue;
		done++;
		if (!do_op(static_cast<Kind>(k), mix64(opt_.seed * 0x9e3779b97f4a7c15ULL + k + 1))) {
			// Go on with the other operations: each gets its verdict.
			bad += std::string(bad.empty() ? "" : ",") + kind_name[k];
			reconnect();
		}
	}
	// Nothing else may complete.
	ibv_wc wc;
	usleep(200000);
	for (auto &e : ep_)
		for (ibv_cq *cq : {e->scq.get(), e->rcq.get()})
			if (ibv_poll_cq(cq, 1, &wc) != 0) {
				std::fprintf(stderr, "FAIL (seed %" PRIu64 "): unexpected completion on %s: wr_id 0x%" PRIx64
					     " status %s\n",
					     opt_.seed, e->label.c_str(), wc.wr_id, ibv_wc_status_str(wc.status));
				return 1;
			}
	if (!bad.empty()) {
		std::printf("rc_bigmsg: FAIL seed=%" PRIu64 " size=%zu failed=%s (of %d) time=%.1fs\n", opt_.seed,
			    opt_.size, bad.c_str(), done, secs_since(start));
		return 1;
	}
	std::printf("rc_bigmsg: PASS seed=%" PRIu64 " size=%zu ops=%d sges=%u time=%.1fs\n", opt_.seed, opt_.size, done,
		    opt_.sges, secs_since(start));
	return 0;
}

void usage(FILE *f)
{
	std::fprintf(f,
		     "usage: rc_bigmsg [options]\n"
		     "%s"
		     "  --size BYTES                message size, K/M/G suffixes (default 1G); must not\n"
		     "                              exceed the ports' max_msg_sz. Needs 2 x size of memory.\n"
		     "  --sges N                    SGEs of the SGE lists (default 4)\n"
		     "  --ops LIST                  WRITE,READ,SEND (default all, in this order)\n"
		     "  --seed S                    pattern seed (default: from the clock; printed)\n"
		     "  --timeout SECS              limit per operation (default 600)\n"
		     "  --ack-timeout N             the QPs' local ACK timeout exponent (default 14)\n"
		     "  --threads N                 fill/check threads (default: the CPUs, at most 8)\n"
		     "Exit status: 0 all checks passed, 1 a check failed, 2 setup/usage error.\n",
		     kCommonUsage);
}

} // namespace

int main(int argc, char **argv)
{
	return guarded_main("rc_bigmsg", [&] {
		Options o;
		enum { O_SIZE = 256, O_SGES, O_OPS, O_SEED, O_TIMEOUT, O_ACKTO, O_THREADS };
		int rc = parse_args(argc, argv, o, "h",
				    {{"size", required_argument, nullptr, O_SIZE},
				     {"sges", required_argument, nullptr, O_SGES},
				     {"ops", required_argument, nullptr, O_OPS},
				     {"seed", required_argument, nullptr, O_SEED},
				     {"timeout", required_argument, nullptr, O_TIMEOUT},
				     {"ack-timeout", required_argument, nullptr, O_ACKTO},
				     {"threads", required_argument, nullptr, O_THREADS}},
				    usage, [&](int c, const char *arg) {
					    switch (c) {
					    case O_SIZE: o.size = parse_size(arg); break;
					    case O_SGES: o.sges = std::stoul(arg); break;
					    case O_OPS: o.kinds = parse_name_list(arg, kind_name, "operation"); break;
					    case O_SEED: o.seed = std::stoull(arg, nullptr, 0); o.seed_given = true; break;
					    case O_TIMEOUT: o.timeout = std::stoul(arg); break;
					    case O_ACKTO: o.ack_timeout = static_cast<uint8_t>(std::stoul(arg)); break;
					    case O_THREADS: o.threads = std::stoul(arg); break;
					    default: return false;
					    }
					    return true;
				    });
		if (rc >= 0)
			return rc;
		if (o.size < 1 || o.sges < 1 || o.sges > 64 || o.threads > 64 || o.ack_timeout > 31)
			throw Error("option out of range");
		if (!o.seed_given)
			o.seed = clock_seed();
		std::printf("rc_bigmsg: seed %" PRIu64 " size %zu\n", o.seed, o.size);
		std::fflush(stdout);
		try {
			Test t(o);
			return t.run();
		} catch (const Verdict &e) {
			std::fprintf(stderr, "rc_bigmsg: FAIL: %s\n", e.what());
			return 1;
		}
	});
}
