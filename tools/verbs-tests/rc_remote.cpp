// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// rc_remote: verified random RC traffic between two processes on two hosts
// (or two namespaces): the checks of rc_integrity, for QPs that one process
// cannot both see. One side listens (--listen PORT), the other connects
// (--connect HOST --port PORT); a TCP connection between them carries the
// setup (test parameters from the client, QPN, PSN, GID, MR address and rkey,
// QP caps from each side) and then paces the traffic.
//
// Both sides generate the same operations from (seed, operation number) and
// the caps of both QPs. Operations go in windows of --window: operation j of
// a window uses slot j of each side's buffer, on the requester and on the
// responder. Per window each side
//   1. prepares what it owns: sources of its own SENDs and WRITEs, the
//      receives for the peer's SENDs and WRITE_WITH_IMMs, the READ sources and
//      atomic targets the peer will use;
//   2. says READY and waits for the peer's READY;
//   3. posts its requests (both directions are in flight at once) and waits
//      for their completions and for its receives, checking each completion
//      (status, opcode, byte_len, immediate data, wr_id, qp_num; in order; an
//      unsignaled WR never completes on its own);
//   4. says DONE and waits for the peer's DONE: now everything the peer did
//      to this side's memory is complete;
//   5. checks every byte of its own slots that the window touched, with
//      guard bytes around each range: message bytes where they belong (SEND
//      data, WRITE targets, READ sinks, atomic results and targets), the
//      resting pattern everywhere else (sources unchanged, receive bytes
//      beyond the message, WRITE_WITH_IMM's receive buffer untouched), then
//      puts the resting pattern back.
// At the end: no further completion, every slot scanned whole, and both
// sides must pass (a failing side tells the other, which fails too).
//
// Exit: 0 pass, 1 a check failed here or on the peer, 2 setup/usage error.

#include "common.h"
#include "pattern.h"

#include <endian.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <deque>
#include <sstream>
#include <thread>

using namespace vt;

namespace {

enum Kind { K_SEND, K_SEND_IMM, K_WRITE, K_WRITE_IMM, K_READ, K_CAS, K_FADD, K_NKINDS };
const char *const kKindName[K_NKINDS] = {"SEND", "SEND_IMM", "WRITE", "WRITE_IMM",
					  "READ", "CMP_SWAP", "FETCH_ADD"};

constexpr size_t kGuard = 256;   // checked bytes either side of a range
constexpr size_t kJitter = 4096; // random start offset in a slot
constexpr size_t kMaxGap = 64;   // random gap between SGEs
constexpr size_t kAux = 4096;    // per-slot area for WRITE_WITH_IMM's receive SGEs
constexpr uint64_t kRecvTag = uint64_t{1} << 63;

struct Options {
	std::string dev, gid = "auto";
	bool use_event = false;
	std::string listen_port, host, port = "18800";
	unsigned accept_timeout = 120, connect_timeout = 60, timeout = 60;
	int verbose = 0;
	// Set by the client, sent to the server.
	uint64_t seed = 0;
	bool seed_given = false;
	uint64_t iters = 400;
	size_t max_size = 256 << 10;
	unsigned window = 16, kinds = (1u << K_NKINDS) - 1, max_sge = 16, signal_pct = 60;
	unsigned ack_timeout = 14, retry_cnt = 7;
	int mtu = 0;
	bool ipv6 = false;
};

// What each side tells the other about its QP and memory.
struct PeerInfo {
	uint32_t qpn = 0, psn = 0, rkey = 0;
	ibv_gid gid{};
	uint64_t addr = 0, len = 0;
	uint32_t active_mtu = 0, max_rd_atom = 0, max_init_rd_atom = 0;
	uint32_t send_sge = 0, recv_sge = 0, inline_max = 0, sge_rd = 0, max_msg_sz = 0;
};

// After the window, slot bytes [lo, hi) of `side` must be the pieces /
// resting.
struct Check {
	int side;
	size_t lo, hi;
	std::vector<Piece> pieces;
	const char *what;
};

struct Op {
	uint64_t id;
	int slot;
	int dir; // the requester: 0 client, 1 server
	Kind kind;
	size_t len = 0;
	bool signaled = true, inlined = false, has_recv = false;
	uint32_t imm = 0;
	uint64_t tag = 0, roff = 0;
	std::vector<Piece> lpieces, recv_pieces;
	uint64_t atom_orig = 0, atom_arg = 0, atom_swap = 0, atom_new = 0;
	size_t atom_loff = 0;
	std::vector<Check> checks;
};

// --- the control connection -------------------------------------------------------

class Ctl {
public:
	~Ctl()
	{
		if (fd_ >= 0)
			close(fd_);
	}
	void listen_accept(const std::string &port, unsigned timeout_s);
	void connect_to(const std::string &host, const std::string &port, unsigned timeout_s);
	void send(const std::string &line);
	// The next line, split in words; "FAIL ..." from the peer throws.
	std::vector<std::string> expect(const char *word, unsigned timeout_s);
	bool open() const { return fd_ >= 0; }

private:
	int fd_ = -1;
	std::string in_;
	std::string recv_line(unsigned timeout_s);
};

void Ctl::listen_accept(const std::string &port, unsigned timeout_s)
{
	int ls = socket(AF_INET6, SOCK_STREAM, 0);
	if (ls < 0)
		throw_errno("socket", errno);
	int one = 1, zero = 0;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)); // IPv4 too
	sockaddr_in6 sa{};
	sa.sin6_family = AF_INET6;
	sa.sin6_addr = in6addr_any;
	sa.sin6_port = htons(static_cast<uint16_t>(std::stoi(port)));
	if (bind(ls, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) || listen(ls, 1)) {
		int e = errno;
		close(ls);
		throw_errno("bind/listen on TCP port " + port, e);
	}
	std::printf("rc_remote: listening on TCP port %s\n", port.c_str());
	std::fflush(stdout);
	pollfd p{ls, POLLIN, 0};
	int rc = poll(&p, 1, static_cast<int>(timeout_s * 1000));
	if (rc <= 0) {
		close(ls);
		throw Error(strf("no client connected within %u s", timeout_s));
	}
	fd_ = accept(ls, nullptr, nullptr);
	int e = errno;
	close(ls);
	if (fd_ < 0)
		throw_errno("accept", e);
	setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void Ctl::connect_to(const std::string &host, const std::string &port, unsigned timeout_s)
{
	auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
	std::string last = "?";
	// The server may not be listening yet: retry until the deadline.
	while (Clock::now() < deadline) {
		addrinfo hints{}, *res = nullptr;
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		int g = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
		if (g)
			throw Error(strf("getaddrinfo(%s): %s", host.c_str(), gai_strerror(g)));
		for (addrinfo *a = res; a; a = a->ai_next) {
			int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
			if (fd < 0)
				continue;
			if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
				fd_ = fd;
				break;
			}
			last = std::strerror(errno);
			close(fd);
		}
		freeaddrinfo(res);
		if (fd_ >= 0) {
			int one = 1;
			setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			return;
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(200));
	}
	throw Error(strf("cannot connect to %s port %s within %u s: %s", host.c_str(), port.c_str(),
			 timeout_s, last.c_str()));
}

void Ctl::send(const std::string &line)
{
	std::string s = line + "\n";
	size_t off = 0;
	while (off < s.size()) {
		ssize_t n = ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			throw_errno("send on the control connection", errno);
		off += static_cast<size_t>(n);
	}
}

std::string Ctl::recv_line(unsigned timeout_s)
{
	auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
	while (true) {
		size_t nl = in_.find('\n');
		if (nl != std::string::npos) {
			std::string l = in_.substr(0, nl);
			in_.erase(0, nl + 1);
			return l;
		}
		auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
		if (left.count() <= 0)
			throw Error(strf("the peer said nothing for %u s", timeout_s));
		pollfd p{fd_, POLLIN, 0};
		int rc = poll(&p, 1, static_cast<int>(left.count()));
		if (rc < 0 && errno != EINTR)
			throw_errno("poll on the control connection", errno);
		if (rc <= 0)
			continue;
		char buf[4096];
		ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			throw_errno("recv on the control connection", errno);
		if (n == 0)
			throw Error("the peer closed the control connection");
		in_.append(buf, static_cast<size_t>(n));
	}
}

std::vector<std::string> Ctl::expect(const char *word, unsigned timeout_s)
{
	std::string l = recv_line(timeout_s);
	std::istringstream is(l);
	std::vector<std::string> w;
	for (std::string t; is >> t;)
		w.push_back(t);
	if (!w.empty() && w[0] == "FAIL")
		throw Error("the peer failed: " + l.substr(std::min<size_t>(5, l.size())));
	if (w.empty() || w[0] != word)
		throw Error(strf("protocol error: expected %s, got '%s'", word, l.c_str()));
	return w;
}

uint64_t num(const std::vector<std::string> &w, size_t i)
{
	if (i >= w.size())
		throw Error("protocol error: a message is too short");
	return std::stoull(w[i], nullptr, 0);
}

std::string gid_hex(const ibv_gid &g)
{
	std::string s;
	for (uint8_t b : g.raw)
		s += strf("%02x", b);
	return s;
}

ibv_gid gid_from_hex(const std::string &s)
{
	ibv_gid g{};
	if (s.size() != 32)
		throw Error("protocol error: bad GID " + s);
	for (size_t i = 0; i < 16; i++)
		g.raw[i] = static_cast<uint8_t>(std::stoul(s.substr(2 * i, 2), nullptr, 16));
	return g;
}

// --- the test ---------------------------------------------------------------------

class Test {
public:
	explicit Test(const Options &o) : opt_(o) {}
	int run();
	void tell_failure(const std::string &what)
	{
		try {
			if (ctl_.open())
				ctl_.send("FAIL " + what);
		} catch (...) {
		}
	}

private:
	Options opt_;
	int me_ = 0; // 0 client, 1 server
	Ctl ctl_;
	std::unique_ptr<Endpoint> ep_;
	PeerInfo info_[2]; // by side
	Buffer buf_;
	MrPtr mr_;
	size_t data_area_ = 0, slot_size_ = 0, path_mtu_ = 0;
	uint32_t psn_[2] = {};
	CqWaiter waiter_;
	uint64_t count_[K_NKINDS] = {}, inlined_ = 0, unsignaled_ = 0;
	uint64_t bytes_verified_ = 0, msg_bytes_ = 0, full_scans_ = 0, send_cqes_ = 0, recv_cqes_ = 0;
	std::vector<Op> win_;
	std::deque<Op *> sq_, rq_;

	const char *who(int side) const { return side == me_ ? "here" : "peer"; }
	uint64_t rest_tag(int side, int slot) const
	{
		return mix64(opt_.seed ^ 0x7265737400000000ULL ^ (uint64_t(side) << 32) ^ uint64_t(slot));
	}
	uint8_t *slot_ptr(int slot) const { return buf_.data() + size_t(slot) * slot_size_; }
	uint64_t remote_addr(int slot, uint64_t off) const
	{
		return info_[!me_].addr + uint64_t(slot) * slot_size_ + off;
	}

	void handshake();
	void setup_qp();
	Op make_op(uint64_t id, int slot);
	size_t pick_size(Rng &r, bool zero_ok);
	std::vector<Piece> cut(Rng &r, size_t cap, unsigned max_pieces, size_t base, size_t *end);
	void prepare(Op &op);
	void post(Op &op);
	void complete_window(uint64_t k);
	void on_send_wc(const ibv_wc &wc);
	void on_recv_wc(const ibv_wc &wc);
	void verify(const Op &op);
	void full_scan(int slot, const char *when);
	[[noreturn]] void fail(const Op *op, const std::string &msg);
	std::string describe(const Op &op) const;
};

std::string Test::describe(const Op &op) const
{
	std::string s = strf("op %" PRIu64 " (slot %d) %s %s len %zu %s%s", op.id, op.slot,
			     op.dir == 0 ? "client->server" : "server->client", kKindName[op.kind], op.len,
			     op.signaled ? "signaled" : "unsignaled", op.inlined ? " inline" : "");
	s += pieces_str(" lsge", op.lpieces);
	s += pieces_str(" rsge", op.recv_pieces);
	if (op.kind >= K_WRITE)
		s += strf(" roff %" PRIu64, op.roff);
	if (op.kind == K_CAS || op.kind == K_FADD)
		s += strf(" orig 0x%" PRIx64 " arg 0x%" PRIx64 " swap 0x%" PRIx64, op.atom_orig, op.atom_arg,
			  op.atom_swap);
	return s;
}

void Test::fail(const Op *op, const std::string &msg)
{
	std::fprintf(stderr, "FAIL (%s, seed %" PRIu64 "): %s\n", me_ ? "server" : "client", opt_.seed,
		     msg.c_str());
	if (op)
		std::fprintf(stderr, "  %s\n", describe(*op).c_str());
	std::fprintf(stderr, "  outstanding here: %zu sends, %zu receives\n", sq_.size(), rq_.size());
	throw Error("verification failed: " + msg);
}

size_t Test::pick_size(Rng &r, bool zero_ok)
{
	size_t limit = opt_.max_size;
	unsigned x = static_cast<unsigned>(r.range(0, 99));
	if (zero_ok && x < 3)
		return 0;
	if (x < 20) {
		size_t m = path_mtu_;
		const size_t edges[] = {1, 2, 7, 8, 9, 63, 64, 65, m - 1, m, m + 1, 2 * m - 1, 2 * m, 2 * m + 1,
					3 * m + 5, 4095, 4096, 4097, 8192, limit - 1, limit};
		return std::clamp<size_t>(edges[r.range(0, std::size(edges) - 1)], 1, limit);
	}
	unsigned top = 63 - __builtin_clzll(std::max<size_t>(limit, 1));
	unsigned b = static_cast<unsigned>(r.range(0, top));
	return r.range(size_t{1} << b, std::min(limit, (size_t{2} << b) - 1));
}

// cap bytes in 1..max_pieces pieces, laid out from base with random gaps
// between them; cap 0: none.
std::vector<Piece> Test::cut(Rng &r, size_t cap, unsigned max_pieces, size_t base, size_t *end)
{
	return random_pieces(r, cap, max_pieces, base, end, {35, 40, 8, kMaxGap});
}

Op Test::make_op(uint64_t id, int slot)
{
	Rng r(mix64(opt_.seed * 0xa24baed4963ee407ULL + id));
	Op op;
	op.id = id;
	op.slot = slot;
	op.dir = static_cast<int>(r.range(0, 1));
	std::vector<Kind> allowed;
	for (int k = 0; k < K_NKINDS; k++)
		if (opt_.kinds & (1u << k))
			allowed.push_back(static_cast<Kind>(k));
	op.kind = allowed[r.range(0, allowed.size() - 1)];
	op.signaled = r.chance(opt_.signal_pct);
	op.tag = mix64(opt_.seed ^ (id * 0x9fb21c651e98df25ULL) ^ 0x6d7367ULL);
	const PeerInfo &req = info_[op.dir], &resp = info_[!op.dir];
	unsigned send_sge = std::min(req.send_sge, opt_.max_sge), recv_sge = std::min(resp.recv_sge, opt_.max_sge);
	size_t base_l = kGuard + r.range(0, kJitter - 1), base_r = kGuard + r.range(0, kJitter - 1);
	size_t lend = base_l, rend = base_r;
	int rq = op.dir, rs = !op.dir; // sides of requester and responder
	auto clip = [&](size_t hi) { return std::min(hi + kGuard, data_area_); };

	switch (op.kind) {
	case K_SEND:
	case K_SEND_IMM:
	case K_WRITE:
	case K_WRITE_IMM: {
		op.len = pick_size(r, true);
		op.lpieces = cut(r, op.len, send_sge, base_l, &lend);
		op.inlined = op.len <= req.inline_max && r.chance(50);
		if (op.kind == K_SEND_IMM || op.kind == K_WRITE_IMM)
			op.imm = static_cast<uint32_t>(r.next());
		if (op.kind == K_SEND || op.kind == K_SEND_IMM) {
			op.has_recv = true;
			size_t cap = op.len + (r.chance(50) ? r.range(1, kMaxGap) : 0);
			op.recv_pieces = cut(r, cap, recv_sge, base_r, &rend);
			std::vector<Piece> data; // the first len bytes of the receive SGEs
			for (auto p : op.recv_pieces) {
				if (p.msg_off >= op.len)
					continue;
				p.len = std::min<size_t>(p.len, op.len - p.msg_off);
				data.push_back(p);
			}
			op.checks.push_back({rs, base_r - kGuard, clip(rend), std::move(data), "receive buffer"});
		} else {
			op.roff = base_r;
			std::vector<Piece> tgt;
			if (op.len)
				tgt.push_back({base_r, op.len, 0});
			op.checks.push_back({rs, base_r - kGuard, clip(base_r + op.len), std::move(tgt),
					     "RDMA WRITE target"});
			if (op.kind == K_WRITE_IMM) {
				op.has_recv = true;
				if (r.chance(60)) { // receive SGEs the WRITE must leave alone
					size_t cap = r.range(1, kAux / 4), end;
					op.recv_pieces = cut(r, cap, recv_sge, data_area_ + r.range(0, kAux / 4), &end);
					op.checks.push_back({rs, data_area_, data_area_ + kAux, {},
							     "WRITE_WITH_IMM receive buffer"});
				}
			}
		}
		op.checks.push_back({rq, base_l - kGuard, clip(lend),
				     op.inlined ? std::vector<Piece>{} : op.lpieces, "source buffer"});
		break;
	}
	case K_READ: {
		op.len = pick_size(r, true);
		op.lpieces = cut(r, op.len, std::min(send_sge, std::max(req.sge_rd, 1u)), base_l, &lend);
		op.roff = base_r;
		std::vector<Piece> src;
		if (op.len)
			src.push_back({base_r, op.len, 0});
		op.checks.push_back({rs, base_r - kGuard, clip(base_r + op.len), std::move(src), "RDMA READ source"});
		op.checks.push_back({rq, base_l - kGuard, clip(lend), op.lpieces, "RDMA READ sink"});
		break;
	}
	case K_CAS:
	case K_FADD: {
		op.len = 8;
		op.roff = (base_r + 7) & ~uint64_t{7};
		op.atom_loff = r.chance(50) ? (base_l + 7) & ~size_t{7} : base_l;
		op.atom_orig = r.chance(10) ? ~uint64_t{0} - r.range(0, 3) : r.next();
		if (op.kind == K_CAS) {
			op.atom_arg = r.chance(50) ? op.atom_orig : op.atom_orig ^ (uint64_t{1} << r.range(0, 63));
			op.atom_swap = r.next();
			op.atom_new = op.atom_arg == op.atom_orig ? op.atom_swap : op.atom_orig;
		} else {
			op.atom_arg = r.chance(20) ? r.range(1, 3) : r.next();
			op.atom_new = op.atom_orig + op.atom_arg;
		}
		Piece t{op.roff, 8, 0, true, {}};
		std::memcpy(t.lit, &op.atom_new, 8);
		op.checks.push_back({rs, op.roff - kGuard, op.roff + 8 + kGuard, {t}, "atomic target"});
		Piece l{op.atom_loff, 8, 0, true, {}};
		std::memcpy(l.lit, &op.atom_orig, 8);
		op.lpieces = {l};
		op.checks.push_back({rq, op.atom_loff - kGuard, op.atom_loff + 8 + kGuard, {l}, "atomic result"});
		break;
	}
	default:
		break;
	}
	return op;
}

// Step 1: what this side owns of op.
void Test::prepare(Op &op)
{
	uint8_t *base = slot_ptr(op.slot);
	if (op.dir == me_) {
		if (op.kind <= K_WRITE_IMM)
			for (auto &p : op.lpieces)
				fill_stream(base + p.off, p.len, op.tag, p.msg_off);
		return;
	}
	if (op.kind == K_READ && op.len)
		fill_stream(base + op.roff, op.len, op.tag, 0);
	if (op.kind == K_CAS || op.kind == K_FADD)
		std::memcpy(base + op.roff, &op.atom_orig, 8);
	if (op.has_recv) {
		std::vector<ibv_sge> sg;
		for (auto &p : op.recv_pieces)
			sg.push_back({buf_.addr() + size_t(op.slot) * slot_size_ + p.off, uint32_t(p.len), mr_->lkey});
		ibv_recv_wr wr{}, *bad = nullptr;
		wr.wr_id = op.id | kRecvTag;
		wr.sg_list = sg.empty() ? nullptr : sg.data();
		wr.num_sge = static_cast<int>(sg.size());
		int rc = ibv_post_recv(ep_->qp.get(), &wr, &bad);
		if (rc)
			fail(&op, strf("ibv_post_recv: %s", strerror(rc)));
		rq_.push_back(&op);
	}
}

// Step 3: one of this side's requests.
void Test::post(Op &op)
{
	uint8_t *base = slot_ptr(op.slot);
	std::vector<ibv_sge> sg;
	uint64_t laddr = buf_.addr() + size_t(op.slot) * slot_size_;
	for (auto &p : op.lpieces)
		sg.push_back({laddr + p.off, uint32_t(p.len), mr_->lkey});
	ibv_send_wr wr{}, *bad = nullptr;
	wr.wr_id = op.id;
	wr.sg_list = sg.empty() ? nullptr : sg.data();
	wr.num_sge = static_cast<int>(sg.size());
	wr.send_flags = (op.signaled ? IBV_SEND_SIGNALED : 0) | (op.inlined ? IBV_SEND_INLINE : 0);
	switch (op.kind) {
	case K_SEND: wr.opcode = IBV_WR_SEND; break;
	case K_SEND_IMM: wr.opcode = IBV_WR_SEND_WITH_IMM; break;
	case K_WRITE: wr.opcode = IBV_WR_RDMA_WRITE; break;
	case K_WRITE_IMM: wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM; break;
	case K_READ: wr.opcode = IBV_WR_RDMA_READ; break;
	case K_CAS: wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP; break;
	default: wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD; break;
	}
	if (op.kind == K_SEND_IMM || op.kind == K_WRITE_IMM)
		wr.imm_data = htobe32(op.imm);
	if (op.kind == K_WRITE || op.kind == K_WRITE_IMM || op.kind == K_READ) {
		wr.wr.rdma.remote_addr = remote_addr(op.slot, op.roff);
		wr.wr.rdma.rkey = info_[!me_].rkey;
	} else if (op.kind == K_CAS || op.kind == K_FADD) {
		wr.wr.atomic.remote_addr = remote_addr(op.slot, op.roff);
		wr.wr.atomic.rkey = info_[!me_].rkey;
		wr.wr.atomic.compare_add = op.atom_arg;
		wr.wr.atomic.swap = op.atom_swap;
	}
	if (opt_.verbose)
		std::printf("post %s\n", describe(op).c_str());
	int rc = ibv_post_send(ep_->qp.get(), &wr, &bad);
	if (rc)
		fail(&op, strf("ibv_post_send: %s", strerror(rc)));
	sq_.push_back(&op);
	if (op.inlined) { // copied at post time: the source is free again
		for (auto &p : op.lpieces)
			fill_stream(base + p.off, p.len, rest_tag(me_, op.slot), p.off);
		inlined_++;
	}
	unsignaled_ += !op.signaled;
	count_[op.kind]++;
	msg_bytes_ += op.len;
}

void Test::on_send_wc(const ibv_wc &wc)
{
	send_cqes_++;
	Op *op = nullptr;
	for (Op *o : sq_)
		if (o->id == wc.wr_id)
			op = o;
	if (wc.status != IBV_WC_SUCCESS)
		fail(op, strf("send completion wr_id %" PRIu64 " status %s (%d), vendor_err 0x%x", wc.wr_id,
			      ibv_wc_status_str(wc.status), wc.status, wc.vendor_err));
	if (!op)
		fail(sq_.empty() ? nullptr : sq_.front(),
		     strf("send completion for wr_id %" PRIu64 ", which is not outstanding", wc.wr_id));
	if (!op->signaled)
		fail(op, "a completion for an unsignaled WR");
	if (wc.qp_num != ep_->qpn())
		fail(op, strf("send completion qp_num 0x%x, expected 0x%x", wc.qp_num, ep_->qpn()));
	static const ibv_wc_opcode want[K_NKINDS] = {IBV_WC_SEND,	IBV_WC_SEND,	  IBV_WC_RDMA_WRITE,
						     IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_COMP_SWAP,
						     IBV_WC_FETCH_ADD};
	if (wc.opcode != want[op->kind])
		fail(op, strf("send completion opcode %s, expected %s", wc_opcode_str(wc.opcode),
			      wc_opcode_str(want[op->kind])));
	if (op->kind == K_READ && wc.byte_len != op->len)
		fail(op, strf("RDMA READ completion byte_len %u, expected %zu", wc.byte_len, op->len));
	if ((op->kind == K_CAS || op->kind == K_FADD) && wc.byte_len != 8)
		fail(op, strf("atomic completion byte_len %u, expected 8", wc.byte_len));
	// In order: what was posted before it is complete too, and was unsignaled.
	while (!sq_.empty()) {
		Op *o = sq_.front();
		sq_.pop_front();
		if (o == op)
			break;
		if (o->signaled)
			fail(o, strf("completion order: wr_id %" PRIu64 " completed before this signaled WR", op->id));
	}
}

void Test::on_recv_wc(const ibv_wc &wc)
{
	recv_cqes_++;
	if (rq_.empty())
		fail(nullptr, strf("unexpected receive completion wr_id 0x%" PRIx64 " status %s", wc.wr_id,
				   ibv_wc_status_str(wc.status)));
	Op *op = rq_.front();
	if (wc.status != IBV_WC_SUCCESS)
		fail(op, strf("receive completion status %s (%d), vendor_err 0x%x", ibv_wc_status_str(wc.status),
			      wc.status, wc.vendor_err));
	if (wc.wr_id != (op->id | kRecvTag))
		fail(op, strf("receive completion order: wr_id %" PRIu64 ", expected %" PRIu64,
			      wc.wr_id & ~kRecvTag, op->id));
	rq_.pop_front();
	bool imm = op->kind == K_SEND_IMM || op->kind == K_WRITE_IMM;
	ibv_wc_opcode want = op->kind == K_WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
	if (std::string why = recv_wc_mismatch(wc, ep_->qpn(), want, op->len, imm, op->imm); !why.empty())
		fail(op, why);
}

// Step 3 (the waiting): until this side's requests and receives are complete.
void Test::complete_window(uint64_t k)
{
	auto last = Clock::now();
	while (!sq_.empty() || !rq_.empty()) {
		ibv_wc wc[32];
		int which[32];
		int n = waiter_.wait(wc, which, 32, std::chrono::milliseconds(1000));
		for (int i = 0; i < n; i++) {
			if (which[i] == 0)
				on_send_wc(wc[i]);
			else
				on_recv_wc(wc[i]);
		}
		if (n) {
			last = Clock::now();
		} else if (Clock::now() - last > std::chrono::seconds(opt_.timeout)) {
			const Op *o = !sq_.empty() ? sq_.front() : rq_.front();
			fail(o, strf("window %" PRIu64 ": no completion for %u s (%zu sends, %zu receives outstanding; "
				     "the oldest shown)",
				     k, opt_.timeout, sq_.size(), rq_.size()));
		}
	}
}

void Test::verify(const Op &op)
{
	uint8_t *base = slot_ptr(op.slot);
	uint64_t rest = rest_tag(me_, op.slot);
	for (const Check &c : op.checks) {
		if (c.side != me_)
			continue;
		auto pieces = c.pieces;
		std::sort(pieces.begin(), pieces.end(), [](auto &x, auto &y) { return x.off < y.off; });
		auto bad = [&](size_t at, const std::string &expect) {
			std::string dump;
			for (size_t i = at >= 8 ? at - 8 : 0; i < std::min(at + 24, c.hi); i++)
				dump += strf("%s%02x", i == at ? " [" : " ", base[i]);
			fail(&op, strf("%s (%s), slot %d: byte at offset %zu is wrong (expected %s); bytes from offset %zu:%s",
				       c.what, me_ ? "server" : "client", op.slot, at, expect.c_str(),
				       at >= 8 ? at - 8 : 0, dump.c_str()));
		};
		auto resting = [&](size_t from, size_t to, const char *where) {
			size_t m = check_stream(base + from, to - from, rest, from);
			if (m != to - from)
				bad(from + m, strf("untouched, resting 0x%02x; %zu bad bytes %s", stream_byte(rest, from + m),
						   count_mismatch(base + from, to - from, rest, from), where));
		};
		size_t pos = c.lo;
		for (auto &p : pieces) {
			if (p.off > pos)
				resting(pos, p.off, "in this gap");
			if (p.literal) {
				if (std::memcmp(base + p.off, p.lit, 8)) {
					uint64_t got, want;
					std::memcpy(&got, base + p.off, 8);
					std::memcpy(&want, p.lit, 8);
					for (size_t i = 0; i < 8; i++)
						if (base[p.off + i] != p.lit[i]) {
							bad(p.off + i, strf("the value 0x%016" PRIx64 ", got 0x%016" PRIx64, want, got));
						}
				}
			} else {
				size_t m = check_stream(base + p.off, p.len, op.tag, p.msg_off);
				if (m != p.len)
					bad(p.off + m, strf("message byte %" PRIu64 " = 0x%02x; %zu of the %zu bytes of this piece wrong",
							    p.msg_off + m, stream_byte(op.tag, p.msg_off + m),
							    count_mismatch(base + p.off, p.len, op.tag, p.msg_off), p.len));
			}
			pos = p.off + p.len;
		}
		if (c.hi > pos)
			resting(pos, c.hi, "after the data");
		bytes_verified_ += c.hi - c.lo;
		for (auto &p : pieces) // back to resting
			fill_stream(base + p.off, p.len, rest, p.off);
	}
}

void Test::full_scan(int slot, const char *when)
{
	uint8_t *base = slot_ptr(slot);
	uint64_t rest = rest_tag(me_, slot);
	size_t m = check_stream(base, slot_size_, rest, 0);
	full_scans_++;
	if (m != slot_size_)
		fail(nullptr, strf("full scan %s: slot %d byte %zu is 0x%02x, expected resting 0x%02x (%zu bad bytes "
				   "in the slot): a stray write",
				   when, slot, m, base[m], stream_byte(rest, m),
				   count_mismatch(base, slot_size_, rest, 0)));
	bytes_verified_ += slot_size_;
}

void Test::handshake()
{
	if (me_ == 0) {
		ctl_.connect_to(opt_.host, opt_.port, opt_.connect_timeout);
		ctl_.send(strf("HELLO 1 %" PRIu64 " %" PRIu64 " %zu %u %u %u %u %u %u %d %d", opt_.seed, opt_.iters,
			       opt_.max_size, opt_.window, opt_.kinds, opt_.max_sge, opt_.signal_pct,
			       opt_.ack_timeout, opt_.retry_cnt, opt_.mtu, opt_.ipv6 ? 1 : 0));
	} else {
		ctl_.listen_accept(opt_.listen_port, opt_.accept_timeout);
		auto w = ctl_.expect("HELLO", opt_.timeout);
		if (num(w, 1) != 1)
			throw Error("protocol version mismatch");
		opt_.seed = num(w, 2);
		opt_.iters = num(w, 3);
		opt_.max_size = num(w, 4);
		opt_.window = static_cast<unsigned>(num(w, 5));
		opt_.kinds = static_cast<unsigned>(num(w, 6));
		opt_.max_sge = static_cast<unsigned>(num(w, 7));
		opt_.signal_pct = static_cast<unsigned>(num(w, 8));
		opt_.ack_timeout = static_cast<unsigned>(num(w, 9));
		opt_.retry_cnt = static_cast<unsigned>(num(w, 10));
		opt_.mtu = std::stoi(w.at(11));
		opt_.ipv6 = num(w, 12) != 0;
	}
}

void Test::setup_qp()
{
	DevSpec spec{opt_.dev, opt_.gid};
	int cqe = 2 * static_cast<int>(opt_.window) + 16;
	ep_ = open_endpoint(me_ ? "server" : "client", spec, opt_.ipv6, opt_.use_event, cqe);
	QpCaps caps;
	caps.max_send_wr = opt_.window + 1;
	caps.max_recv_wr = opt_.window + 1;
	caps.max_send_sge = caps.max_recv_sge = opt_.max_sge;
	ep_->create_qp(caps);

	data_area_ = (kGuard + kJitter + opt_.max_size + (opt_.max_sge + 2) * kMaxGap + kGuard + 8 + 7) & ~size_t{7};
	slot_size_ = (data_area_ + kAux + 4095) & ~size_t{4095};
	buf_ = Buffer(slot_size_ * opt_.window);
	for (unsigned j = 0; j < opt_.window; j++)
		fill_stream(slot_ptr(int(j)), slot_size_, rest_tag(me_, int(j)), 0);
	mr_ = reg_mr(ep_->pd.get(), buf_.data(), buf_.size(),
		     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_ATOMIC);
	psn_[0] = static_cast<uint32_t>(mix64(opt_.seed ^ 0xc1)) & 0xffffff;
	psn_[1] = static_cast<uint32_t>(mix64(opt_.seed ^ 0x5e)) & 0xffffff;
	if (mix64(opt_.seed ^ 3) & 1) // PSNs near the wrap
		psn_[0] = 0xffffff - (psn_[0] & 0x3f);

	PeerInfo &mine = info_[me_];
	mine.qpn = ep_->qpn();
	mine.psn = psn_[me_];
	mine.rkey = mr_->rkey;
	mine.gid = ep_->gid;
	mine.addr = buf_.addr();
	mine.len = buf_.size();
	mine.active_mtu = ep_->pattr.active_mtu;
	mine.max_rd_atom = static_cast<uint32_t>(ep_->dattr.max_qp_rd_atom);
	mine.max_init_rd_atom = static_cast<uint32_t>(ep_->dattr.max_qp_init_rd_atom);
	mine.send_sge = ep_->cap.max_send_sge;
	mine.recv_sge = ep_->cap.max_recv_sge;
	mine.inline_max = ep_->cap.max_inline_data;
	mine.sge_rd = static_cast<uint32_t>(std::max(ep_->dattr.max_sge_rd, 1));
	mine.max_msg_sz = ep_->pattr.max_msg_sz;
	ctl_.send(strf("QP %u %u %s %u %" PRIu64 " %" PRIu64 " %u %u %u %u %u %u %u %u", mine.qpn, mine.psn,
		       gid_hex(mine.gid).c_str(), mine.rkey, mine.addr, mine.len, mine.active_mtu, mine.max_rd_atom,
		       mine.max_init_rd_atom, mine.send_sge, mine.recv_sge, mine.inline_max, mine.sge_rd,
		       mine.max_msg_sz));
	auto w = ctl_.expect("QP", opt_.timeout);
	PeerInfo &p = info_[!me_];
	p.qpn = uint32_t(num(w, 1));
	p.psn = uint32_t(num(w, 2));
	p.gid = gid_from_hex(w.at(3));
	p.rkey = uint32_t(num(w, 4));
	p.addr = num(w, 5);
	p.len = num(w, 6);
	p.active_mtu = uint32_t(num(w, 7));
	p.max_rd_atom = uint32_t(num(w, 8));
	p.max_init_rd_atom = uint32_t(num(w, 9));
	p.send_sge = uint32_t(num(w, 10));
	p.recv_sge = uint32_t(num(w, 11));
	p.inline_max = uint32_t(num(w, 12));
	p.sge_rd = uint32_t(num(w, 13));
	p.max_msg_sz = uint32_t(num(w, 14));
	if (p.len != mine.len || p.psn != psn_[!me_])
		throw Error("the peer's buffer layout or PSN differs: not the same parameters");
	if (opt_.max_size > std::min(p.max_msg_sz, mine.max_msg_sz))
		throw Error(strf("--max-size %zu is above max_msg_sz", opt_.max_size));

	ibv_mtu mtu = opt_.mtu ? mtu_from_bytes(opt_.mtu)
			       : std::min(static_cast<ibv_mtu>(p.active_mtu), ep_->pattr.active_mtu);
	path_mtu_ = size_t{128} << mtu;
	// connect_qp reads the peer's GID and its RDMA read/atomic limits.
	Endpoint peer;
	peer.label = "peer";
	peer.gid = p.gid;
	peer.dattr.max_qp_rd_atom = static_cast<int>(p.max_rd_atom);
	peer.dattr.max_qp_init_rd_atom = static_cast<int>(p.max_init_rd_atom);
	ConnParams cp;
	cp.mtu = mtu;
	cp.timeout = static_cast<uint8_t>(opt_.ack_timeout);
	cp.retry_cnt = static_cast<uint8_t>(opt_.retry_cnt);
	cp.psn = psn_[me_];
	connect_qp(*ep_, ep_->qp.get(), peer, p.qpn, cp, p.psn);
	// Both QPs must be in RTR before either sends.
	ctl_.send("RTS");
	ctl_.expect("RTS", opt_.timeout);

	waiter_.use_event = opt_.use_event;
	waiter_.cqs = {{ep_->scq.get(), ep_->chan.get()}, {ep_->rcq.get(), ep_->chan.get()}};
	std::printf("%s: %s gid[%d] %s qpn 0x%x psn 0x%06x; peer gid %s qpn 0x%x psn 0x%06x; path_mtu %zu; "
		    "caps here send_sge %u recv_sge %u inline %u, peer %u %u %u; %u slots x %zu B; %s\n",
		    me_ ? "server" : "client", ep_->devname.c_str(), ep_->gid_index, gid_str(ep_->gid).c_str(),
		    mine.qpn, mine.psn, gid_str(p.gid).c_str(), p.qpn, p.psn, path_mtu_, mine.send_sge,
		    mine.recv_sge, mine.inline_max, p.send_sge, p.recv_sge, p.inline_max, opt_.window, slot_size_,
		    opt_.use_event ? "completion events" : "polling");
	std::fflush(stdout);
}

int Test::run()
{
	me_ = opt_.listen_port.empty() ? 0 : 1;
	handshake();
	std::printf("rc_remote: %s, seed %" PRIu64 " iters %" PRIu64 " window %u max size %zu\n",
		    me_ ? "server" : "client", opt_.seed, opt_.iters, opt_.window, opt_.max_size);
	std::fflush(stdout);
	setup_qp();

	auto start = Clock::now(), report = start;
	uint64_t nwin = (opt_.iters + opt_.window - 1) / opt_.window;
	for (uint64_t k = 0; k < nwin; k++) {
		win_.clear();
		for (uint64_t id = k * opt_.window; id < std::min(opt_.iters, (k + 1) * opt_.window); id++)
			win_.push_back(make_op(id, static_cast<int>(id - k * opt_.window)));
		for (int d = 0; d < 2; d++) // each direction's last WR is signaled
			for (auto it = win_.rbegin(); it != win_.rend(); ++it)
				if (it->dir == d) {
					it->signaled = true;
					break;
				}
		for (auto &op : win_)
			prepare(op);
		ctl_.send(strf("READY %" PRIu64, k));
		if (num(ctl_.expect("READY", opt_.timeout), 1) != k)
			throw Error("protocol error: the peer is in another window");
		for (auto &op : win_)
			if (op.dir == me_)
				post(op);
		complete_window(k);
		ctl_.send(strf("DONE %" PRIu64, k));
		if (num(ctl_.expect("DONE", 4 * opt_.timeout), 1) != k)
			throw Error("protocol error: the peer is in another window");
		for (auto &op : win_)
			verify(op);
		if (slot_size_ <= 65536 || (k & 7) == 0)
			for (auto &op : win_)
				full_scan(op.slot, "after a window");
		if (Clock::now() - report > std::chrono::seconds(10)) {
			report = Clock::now();
			std::printf("... window %" PRIu64 "/%" PRIu64 ", %.1f s\n", k + 1, nwin, secs_since(start));
			std::fflush(stdout);
		}
	}
	// Nothing may complete after everything did.
	auto end = Clock::now() + std::chrono::milliseconds(300);
	while (Clock::now() < end) {
		ibv_wc wc[4];
		int which[4];
		int n = waiter_.wait(wc, which, 4, std::chrono::milliseconds(50));
		if (n)
			fail(nullptr, strf("%d completion(s) after all work was complete: wr_id 0x%" PRIx64 " status %s",
					   n, wc[0].wr_id, ibv_wc_status_str(wc[0].status)));
	}
	for (unsigned j = 0; j < opt_.window; j++)
		full_scan(int(j), "at the end");
	if (opt_.use_event && waiter_.missed_events)
		fail(nullptr, strf("%" PRIu64 " time(s) an armed CQ had completions but no event came within 1 s",
				   waiter_.missed_events));
	double t = secs_since(start);
	ctl_.send("END PASS");
	ctl_.expect("END", opt_.timeout);

	std::string per;
	for (int k = 0; k < K_NKINDS; k++)
		per += strf(" %s=%" PRIu64, kKindName[k], count_[k]);
	std::printf("rc_remote: PASS %s seed=%" PRIu64 " ops=%" PRIu64 " posted here:%s (inline=%" PRIu64
		    " unsignaled=%" PRIu64 ") cqes send=%" PRIu64 " recv=%" PRIu64 "%s message_bytes=%" PRIu64
		    " bytes_verified=%" PRIu64 " full_scans=%" PRIu64 " time=%.1fs\n",
		    me_ ? "server" : "client", opt_.seed, opt_.iters, per.c_str(), inlined_, unsignaled_, send_cqes_,
		    recv_cqes_, opt_.use_event ? strf(" events=%" PRIu64, waiter_.events).c_str() : "", msg_bytes_,
		    bytes_verified_, full_scans_, t);
	return 0;
}

void usage(FILE *f)
{
	std::fprintf(f,
		     "usage: rc_remote --listen PORT [options]          (server)\n"
		     "       rc_remote --connect HOST [--port PORT] [options]   (client)\n"
		     "  --dev NAME           RDMA device (default: the first)\n"
		     "  --gid N|auto         GID index (auto: the first RoCE v2 GID of the family)\n"
		     "  --use-event          wait on a completion channel instead of polling\n"
		     "  --timeout SECS       fail after this long without progress (default 60)\n"
		     "  --accept-timeout S   server: wait this long for the client (default 120)\n"
		     "  --connect-timeout S  client: keep trying to connect this long (default 60)\n"
		     "  -v, --verbose        print every WR\n"
		     "The client sets the test for both sides:\n"
		     "  --ipv6               IPv6 GIDs on both sides (default IPv4)\n"
		     "  --mtu BYTES          path MTU (default: the smaller active_mtu)\n"
		     "  --iters N            operations, both directions together (default 400)\n"
		     "  --seed S             random seed (default: from the clock; printed)\n"
		     "  --window N           operations per window, = slots per side (default 16)\n"
		     "  --max-size BYTES     largest message, K/M suffixes (default 256K)\n"
		     "  --ops LIST           only these: SEND,SEND_IMM,WRITE,WRITE_IMM,READ,CMP_SWAP,FETCH_ADD\n"
		     "  --max-sge N          SGEs per WR at most (default 16)\n"
		     "  --signal-pct P       share of signaled WRs (default 60)\n"
		     "  --ack-timeout N      local ACK timeout, 4.096 us * 2^N (default 14)\n"
		     "  --retry-cnt N        transport retries (default 7)\n"
		     "Exit status: 0 both sides passed, 1 a check failed (here or on the peer), 2 setup error.\n");
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	enum { O_DEV = 256, O_GID, O_EVENT, O_TIMEOUT, O_ACCEPT, O_CONNTO, O_LISTEN, O_CONNECT, O_PORT, O_IPV6,
	       O_MTU, O_ITERS, O_SEED, O_WINDOW, O_MAXSIZE, O_OPS, O_MAXSGE, O_SIGPCT, O_ACKTO, O_RETRY };
	static const option longopts[] = {
		{"dev", required_argument, nullptr, O_DEV},
		{"gid", required_argument, nullptr, O_GID},
		{"use-event", no_argument, nullptr, O_EVENT},
		{"timeout", required_argument, nullptr, O_TIMEOUT},
		{"accept-timeout", required_argument, nullptr, O_ACCEPT},
		{"connect-timeout", required_argument, nullptr, O_CONNTO},
		{"listen", required_argument, nullptr, O_LISTEN},
		{"connect", required_argument, nullptr, O_CONNECT},
		{"port", required_argument, nullptr, O_PORT},
		{"ipv6", no_argument, nullptr, O_IPV6},
		{"mtu", required_argument, nullptr, O_MTU},
		{"iters", required_argument, nullptr, O_ITERS},
		{"seed", required_argument, nullptr, O_SEED},
		{"window", required_argument, nullptr, O_WINDOW},
		{"max-size", required_argument, nullptr, O_MAXSIZE},
		{"ops", required_argument, nullptr, O_OPS},
		{"max-sge", required_argument, nullptr, O_MAXSGE},
		{"signal-pct", required_argument, nullptr, O_SIGPCT},
		{"ack-timeout", required_argument, nullptr, O_ACKTO},
		{"retry-cnt", required_argument, nullptr, O_RETRY},
		{"verbose", no_argument, nullptr, 'v'},
		{"help", no_argument, nullptr, 'h'},
		{nullptr, 0, nullptr, 0}};
	std::unique_ptr<Test> t;
	try {
		int c;
		while ((c = getopt_long(argc, argv, "vh", longopts, nullptr)) != -1) {
			switch (c) {
			case O_DEV: o.dev = optarg; break;
			case O_GID: o.gid = optarg; break;
			case O_EVENT: o.use_event = true; break;
			case O_TIMEOUT: o.timeout = std::stoul(optarg); break;
			case O_ACCEPT: o.accept_timeout = std::stoul(optarg); break;
			case O_CONNTO: o.connect_timeout = std::stoul(optarg); break;
			case O_LISTEN: o.listen_port = optarg; break;
			case O_CONNECT: o.host = optarg; break;
			case O_PORT: o.port = optarg; break;
			case O_IPV6: o.ipv6 = true; break;
			case O_MTU: o.mtu = std::stoi(optarg); mtu_from_bytes(o.mtu); break;
			case O_ITERS: o.iters = std::stoull(optarg); break;
			case O_SEED: o.seed = std::stoull(optarg, nullptr, 0); o.seed_given = true; break;
			case O_WINDOW: o.window = std::stoul(optarg); break;
			case O_MAXSIZE: o.max_size = parse_size(optarg); break;
			case O_OPS: o.kinds = parse_name_list(optarg, kKindName, "operation"); break;
			case O_MAXSGE: o.max_sge = std::stoul(optarg); break;
			case O_SIGPCT: o.signal_pct = std::stoul(optarg); break;
			case O_ACKTO: o.ack_timeout = std::stoul(optarg); break;
			case O_RETRY: o.retry_cnt = std::stoul(optarg); break;
			case 'v': o.verbose++; break;
			case 'h': usage(stdout); return 0;
			default: usage(stderr); return 2;
			}
		}
		if (optind != argc || o.listen_port.empty() == o.host.empty()) {
			usage(stderr);
			return 2;
		}
		if (o.window < 1 || o.window > 1024 || o.max_sge < 1 || o.max_sge > 64 || o.max_size < 1 ||
		    o.max_size > (64u << 20) || o.signal_pct > 100 || o.ack_timeout > 31 || o.retry_cnt > 7)
			throw Error("option out of range");
		if (!o.seed_given)
			o.seed = clock_seed();
		t = std::make_unique<Test>(o);
		return t->run();
	} catch (const Error &e) {
		std::fprintf(stderr, "rc_remote: %s\n", e.what());
		if (t)
			t->tell_failure(e.what());
		std::string w = e.what();
		return w.rfind("verification failed", 0) == 0 || w.rfind("the peer failed", 0) == 0 ? 1 : 2;
	} catch (const std::exception &e) {
		std::fprintf(stderr, "rc_remote: bad argument or message: %s\n", e.what());
		if (t)
			t->tell_failure(e.what());
		return 2;
	}
}
