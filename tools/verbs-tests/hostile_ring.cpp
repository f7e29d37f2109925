// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// hostile_ring: a process that attacks sroce.ko through the rings it shares
// with it. The send, receive and shared receive queues and the completion
// queues are mapped read-write into the process (include/sroce-abi.h); this
// program writes them directly, bypassing the provider's encoders: producer
// indices past the ring or moving backwards, WQEs with huge lengths, invalid
// opcodes, too many SGEs, the L_Keys/R_Keys/AH numbers of another process,
// WQEs changed after the doorbell, garbage consumer indices in CQs, garbage
// ring headers, doorbell floods and random fuzzing. The kernel must answer
// with error completions, an error state or an async event for that QP (or
// CQ) only: other QPs of this process and of another process keep working,
// and no byte outside this process's own MRs changes.
//
// A second group of cases (--group limits) checks the resource limits: QP,
// CQ, SRQ and MR caps at and beyond the device's; SRQs, PDs, CQs and MRs
// created up to the device's max_* (the next one fails with ENOMEM);
// RLIMIT_MEMLOCK without CAP_IPC_LOCK; 1,000 QPs connected in pairs, one
// SEND each; 10,000 MRs used as RDMA WRITE targets.
//
// The rings are reached through the provider's own objects (user/src: the
// ibv_qp / ibv_cq / ibv_srq libibverbs hands out are the first member of the
// provider's qp / cq / srq), checked against the ring headers and
// /proc/self/maps before use; the doorbell is the provider's (an empty
// POST_SEND command).
//
// Another process (the "victim", forked at start) registers MRs on both
// devices, creates an AH, passes their keys and numbers over a pipe, runs
// verified RC traffic of its own for as long as the attacks run, and at the
// end checks that its MRs are byte for byte unchanged.
//
// Two attacks crashed sroce.ko until kernel/sroce_req.c was fixed, and stay
// here as regression tests: a rejected WQE with more SGEs than its slot
// holds (kKnownBug; the fuzz also uses such WQEs and publishes to QPs in
// error), and the shadow-slot refetch race (kShadowRace; --case
// shadow_race). --gentle leaves them out, for a kernel without the fixes.
//
// Exit: 0 all cases passed, 1 a case failed, 2 setup error.

#include "common.h"
#include "pattern.h"

// The provider's private headers (user/src; include directory set for this
// program only in CMakeLists.txt).
#include "cq.h"
#include "provider.h"
#include "qp.h"
#include "srq.h"

#include <fcntl.h>
#include <getopt.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <thread>

using namespace vt;
using namespace std::chrono_literals;

namespace {

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

// --- options --------------------------------------------------------------------

struct Options {
	CommonOptions c;
	std::vector<std::string> cases;
	std::string group = "ring"; // ring | limits | all
	bool list = false;
	uint64_t seed = 0;
	int fuzz_rounds = 40;
	int mutate_iters = 100;
	double race_seconds = 30;
	int qps = 1000;
	int mrs = 10000;
	bool to_max = true; // create SRQs, PDs, CQs, MRs up to the device's max
	bool victim = true;
	// Also run the attacks that crash the kernel as of this writing (see
	// kKnownBug): off by default so the rest of the test can pass.
	bool known_bugs = true; // the regression attacks; --gentle: off
};

// A rejected send WQE's header stays in the kernel's shadow copy, and
// sroce_comp_retire() -> sroce_wqe_len() then sums num_sge SGE lengths from
// it: num_sge 0xffff reads up to 1 MiB past the shadow allocation (oops with
// sq_lock held: "Fatal exception in interrupt", panic).
// The requester builds a packet from its shadow copy of the WQE after
// dropping sq_lock; a flush meanwhile (QP to ERR) followed by a doorbell with
// a new producer refetches that shadow slot from the ring. See
// case_shadow_race.
constexpr const char *kShadowRace = "--gentle: a flush refetching the shadow WQE the requester is sending "
				    "from crashed old kernels (case shadow_race)";
constexpr const char *kKnownBug = "--gentle: sroce_wqe_len() of a rejected WQE walked its num_sge SGEs past "
				  "the shadow in old kernels (kernel/sroce_req.c)";

constexpr size_t kScratch = 1 << 20; // A's and B's scratch MRs
constexpr size_t kCanary = 64 * 1024;
constexpr size_t kVictimLen = 64 * 1024;
constexpr uint64_t kTagACanary = 0xa11ce, kTagBCanary = 0xb0b, kTagRaw = 0x4a4a;
constexpr uint64_t kTagVictim = 0x71c71;
constexpr uint32_t kQkey = 0x11111111;
constexpr unsigned kAllAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				IBV_ACCESS_REMOTE_ATOMIC;

// --- verdicts -------------------------------------------------------------------

class Checker {
public:
	bool ok = true;
	void note(const std::string &s) { std::printf("    %s\n", s.c_str()); }
	void pass(const std::string &s) { std::printf("    ok: %s\n", s.c_str()); }
	void fail(const std::string &s)
	{
		ok = false;
		std::printf("    FAIL: %s\n", s.c_str());
		std::fflush(stdout);
	}
	bool expect(bool cond, const std::string &what, const std::string &detail = "")
	{
		if (cond)
			pass(what);
		else
			fail(what + (detail.empty() ? "" : " (" + detail + ")"));
		return cond;
	}
};

std::string st(ibv_wc_status s) { return ibv_wc_status_str(s); }

// --- victim process -------------------------------------------------------------

// What the victim tells the attacker: one MR per device (index 0: dev A,
// 1: dev B) and one AH number on dev A.
struct VictimInfo {
	uint64_t addr[2];
	uint32_t len[2], lkey[2], rkey[2];
	uint32_t ah_num;
	int ready; // 1: ok, 0: setup failed
	char err[200];
};

struct VictimReport {
	uint64_t iters;
	uint64_t failures;
	int intact[2];
	char msg[240];
};

bool write_all(int fd, const void *p, size_t n)
{
	auto *c = static_cast<const char *>(p);
	while (n) {
		ssize_t w = ::write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		c += w, n -= static_cast<size_t>(w);
	}
	return true;
}

bool read_all(int fd, void *p, size_t n, int timeout_ms)
{
	auto *c = static_cast<char *>(p);
	auto t0 = Clock::now();
	while (n) {
		pollfd pf{fd, POLLIN, 0};
		int left = timeout_ms - static_cast<int>(secs_since(t0) * 1000);
		if (left <= 0)
			return false;
		int rc = ::poll(&pf, 1, left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			return false;
		ssize_t r = ::read(fd, c, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		c += r, n -= static_cast<size_t>(r);
	}
	return true;
}

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

// The victim's own traffic: SEND + RDMA WRITE between its two QPs, every
// byte checked, until the attacker says stop; then its exposed MRs are
// checked. Runs in the forked child; never returns.
[[noreturn]] void victim_main(const Options &o, int info_fd, int cmd_fd)
{
	VictimInfo info{};
	VictimReport rep{};
	auto die = [&](const std::string &m) {
		std::snprintf(info.err, sizeof(info.err), "%s", m.c_str());
		info.ready = 0;
		write_all(info_fd, &info, sizeof(info));
		_exit(2);
	};
	std::unique_ptr<Endpoint> va, vb;
	Buffer vbuf[2], tbuf_a, tbuf_b;
	MrPtr vmr[2], tmr_a, tmr_b;
	ibv_ah *ah = nullptr;
	try {
		va = open_endpoint("VA", o.c.a, o.c.ipv6, false, 64);
		vb = open_endpoint("VB", o.c.b, o.c.ipv6, false, 64);
		QpCaps caps;
		caps.max_send_wr = caps.max_recv_wr = 16;
		caps.max_send_sge = caps.max_recv_sge = 1;
		caps.max_inline = 0;
		va->create_qp(caps);
		vb->create_qp(caps);
		Endpoint *eps[2] = {va.get(), vb.get()};
		for (int i = 0; i < 2; i++) {
			vbuf[i] = Buffer(kVictimLen);
			fill_stream(vbuf[i].data(), kVictimLen, kTagVictim + i, 0);
			vmr[i] = reg_mr(eps[i]->pd.get(), vbuf[i].data(), kVictimLen, kAllAccess);
			info.addr[i] = vbuf[i].addr();
			info.len[i] = static_cast<uint32_t>(kVictimLen);
			info.lkey[i] = vmr[i]->lkey;
			info.rkey[i] = vmr[i]->rkey;
		}
		tbuf_a = Buffer(64 * 1024);
		tbuf_b = Buffer(64 * 1024);
		tmr_a = reg_mr(va->pd.get(), tbuf_a.data(), tbuf_a.size(), kAllAccess);
		tmr_b = reg_mr(vb->pd.get(), tbuf_b.data(), tbuf_b.size(), kAllAccess);
		ibv_ah_attr aa{};
		aa.is_global = 1;
		aa.grh.dgid = va->gid;
		aa.grh.sgid_index = static_cast<uint8_t>(va->gid_index);
		aa.grh.hop_limit = 64;
		aa.port_num = va->port;
		ah = ibv_create_ah(va->pd.get(), &aa);
		if (!ah)
			throw_errno("victim: ibv_create_ah", errno);
		info.ah_num = sroce::to_ah(ah)->ah_num;
		ConnParams p;
		p.mtu = pick_mtu(*va, *vb, o.c.mtu);
		p.psn = 0x300;
		ConnParams pb = p;
		pb.psn = 0x400;
		connect_pair(*va, *vb, p, pb);
	} catch (const std::exception &e) {
		die(std::string("victim setup: ") + e.what());
	}
	info.ready = 1;
	write_all(info_fd, &info, sizeof(info));

	// Traffic until told to stop (a byte on cmd_fd, or EOF).
	for (uint64_t it = 0;; it++) {
		pollfd pf{cmd_fd, POLLIN, 0};
		if (::poll(&pf, 1, 0) > 0)
			break;
		uint64_t tag = mix64(it + 0x5eed);
		const uint32_t slen = 1024, wlen = 4096;
		fill_stream(tbuf_a.data(), slen, tag, 0);
		fill_stream(tbuf_a.data() + 8192, wlen, tag + 1, 0);
		std::memset(tbuf_b.data(), 0, 16384);
		ibv_sge rs{tbuf_b.addr(), slen, tmr_b->lkey};
		ibv_recv_wr rw{};
		rw.wr_id = it;
		rw.sg_list = &rs;
		rw.num_sge = 1;
		ibv_recv_wr *rbad = nullptr;
		ibv_sge s1{tbuf_a.addr(), slen, tmr_a->lkey}, s2{tbuf_a.addr() + 8192, wlen, tmr_a->lkey};
		ibv_send_wr w1{}, w2{}, *sbad = nullptr;
		w1.wr_id = 1;
		w1.sg_list = &s1;
		w1.num_sge = 1;
		w1.opcode = IBV_WR_SEND;
		w1.send_flags = IBV_SEND_SIGNALED;
		w1.next = &w2;
		w2.wr_id = 2;
		w2.sg_list = &s2;
		w2.num_sge = 1;
		w2.opcode = IBV_WR_RDMA_WRITE;
		w2.send_flags = IBV_SEND_SIGNALED;
		w2.wr.rdma.remote_addr = tbuf_b.addr() + 8192;
		w2.wr.rdma.rkey = tmr_b->rkey;
		std::string err;
		if (ibv_post_recv(vb->qp.get(), &rw, &rbad) || ibv_post_send(va->qp.get(), &w1, &sbad)) {
			err = "post failed";
		} else {
			auto sw = poll_n(va->scq.get(), 2, 20s);
			auto rwc = poll_n(vb->rcq.get(), 1, 20s);
			if (sw.size() != 2 || rwc.size() != 1)
				err = strf("completions missing (%zu send, %zu recv)", sw.size(), rwc.size());
			for (auto &w : sw)
				if (w.status != IBV_WC_SUCCESS)
					err = "send completion " + st(w.status);
			for (auto &w : rwc)
				if (w.status != IBV_WC_SUCCESS || w.byte_len != slen)
					err = strf("recv completion %s len %u", ibv_wc_status_str(w.status), w.byte_len);
			if (err.empty() && check_stream(tbuf_b.data(), slen, tag, 0) != slen)
				err = "SEND data corrupted";
			if (err.empty() && check_stream(tbuf_b.data() + 8192, wlen, tag + 1, 0) != wlen)
				err = "WRITE data corrupted";
		}
		if (!err.empty()) {
			rep.failures++;
			std::snprintf(rep.msg, sizeof(rep.msg), "iteration %" PRIu64 ": %s", it, err.c_str());
			break;
		}
		rep.iters++;
		std::this_thread::sleep_for(15ms);
	}
	for (int i = 0; i < 2; i++)
		rep.intact[i] = check_stream(vbuf[i].data(), kVictimLen, kTagVictim + i, 0) == kVictimLen;
	write_all(info_fd, &rep, sizeof(rep));
	if (ah)
		ibv_destroy_ah(ah);
	_exit(0);
}

struct Victim {
	pid_t pid = -1;
	int info_fd = -1, cmd_fd = -1;
	VictimInfo info{};

	void start(const Options &o)
	{
		int a[2], b[2];
		if (pipe(a) || pipe(b))
			throw_errno("pipe", errno);
		std::fflush(stdout);
		pid = fork();
		if (pid < 0)
			throw_errno("fork", errno);
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			close(a[0]);
			close(b[1]);
			victim_main(o, a[1], b[0]);
		}
		close(a[1]);
		close(b[0]);
		info_fd = a[0];
		cmd_fd = b[1];
		if (!read_all(info_fd, &info, sizeof(info), 120000))
			throw Error("the victim process did not report its keys");
		if (!info.ready)
			throw Error(std::string("victim: ") + info.err);
	}

	// Stop its traffic and collect the report.
	std::optional<VictimReport> stop()
	{
		if (pid < 0)
			return std::nullopt;
		char c = 1;
		write_all(cmd_fd, &c, 1);
		VictimReport r{};
		bool got = read_all(info_fd, &r, sizeof(r), 120000);
		int status = 0;
		if (!got)
			kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		pid = -1;
		close(info_fd);
		close(cmd_fd);
		if (!got)
			return std::nullopt;
		return r;
	}

	~Victim()
	{
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, nullptr, 0);
		}
	}
};

// --- rings ----------------------------------------------------------------------

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

// A mapped ring as this program sees it. Geometry is read once from the
// kernel-written header (and checked), then cached: the program writes
// garbage into the header itself.
struct Ring {
	sroce_queue_hdr *hdr = nullptr;
	uint8_t *data = nullptr;
	uint32_t n = 0, shift = 0;
	size_t len = 0;

	static Ring attach(const sroce::mapping &m, const char *what, uint32_t min_slots, size_t min_slot)
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

	uint8_t *slot(uint32_t idx) const { return data + (static_cast<size_t>(idx & (n - 1)) << shift); }
	uint32_t slot_size() const { return 1U << shift; }
	static uint32_t ld(uint32_t &w) { return std::atomic_ref<uint32_t>(w).load(std::memory_order_acquire); }
	static void st(uint32_t &w, uint32_t v) { std::atomic_ref<uint32_t>(w).store(v, std::memory_order_release); }
	uint32_t producer() const { return ld(hdr->producer); }
	uint32_t consumer() const { return ld(hdr->consumer); }
	uint32_t flags() const { return ld(hdr->flags); }
	void set_producer(uint32_t v) const { st(hdr->producer, v); }
	void set_consumer(uint32_t v) const { st(hdr->consumer, v); }
	void fill_slots(uint8_t byte) const { std::memset(data, byte, size_t{n} << shift); }
};

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

// A send WQE as it goes into a slot: the header, then SGEs or inline bytes.
struct Wqe {
	sroce_send_wqe h{};
	std::vector<sroce_sge> sge;
	std::vector<uint8_t> inl;
};

// Write w into slot (at most one slot's worth: a num_sge too large for the
// slot is written as a header only).
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

Wqe wqe(uint8_t opcode, uint64_t wr_id, std::vector<sroce_sge> sg = {}, uint8_t flags = SROCE_SEND_SIGNALED)
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

struct AsyncLog {
	struct Ev {
		ibv_event_type type;
		uint32_t qpn;
		const void *obj; // the ibv_cq / ibv_srq / ibv_qp
	};
	ibv_context *ctx = nullptr;
	std::vector<Ev> evs;

	void init(ibv_context *c)
	{
		ctx = c;
		int fl = fcntl(c->async_fd, F_GETFL);
		if (fl < 0 || fcntl(c->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
			throw_errno("fcntl(O_NONBLOCK) on the async fd", errno);
	}
	void drain()
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
	bool has(ibv_event_type t, const void *obj)
	{
		drain();
		for (auto &e : evs)
			if (e.type == t && e.obj == obj)
				return true;
		return false;
	}
	bool wait(ibv_event_type t, const void *obj, std::chrono::milliseconds limit)
	{
		auto t0 = Clock::now();
		while (!has(t, obj)) {
			if (Clock::now() - t0 > limit)
				return false;
			std::this_thread::sleep_for(2ms);
		}
		return true;
	}
	// Forget an object's events (before it is destroyed: its address may be reused).
	void forget(const void *obj)
	{
		drain();
		evs.erase(std::remove_if(evs.begin(), evs.end(), [&](const Ev &e) { return e.obj == obj; }),
			  evs.end());
	}
	std::string of(const void *obj)
	{
		drain();
		std::string s;
		for (auto &e : evs)
			if (e.obj == obj)
				s += std::string(s.empty() ? "" : ", ") + ibv_event_type_str(e.type);
		return s.empty() ? "none" : s;
	}
};

// --- the attacker's environment ---------------------------------------------------

struct Conn;

struct Ctx {
	const Options &o;
	std::unique_ptr<Endpoint> A, B; // A: the attacking side, B: its peer
	AsyncLog alog, blog;
	ibv_mtu mtu = IBV_MTU_1024;
	uint32_t mtu_bytes = 1024;
	Buffer abuf, bbuf, acan, bcan, araw;
	MrPtr amr, bmr, acmr, bcmr;
	VictimInfo vic{};
	bool have_victim = false;
	Rng rng{1};
	// The well-behaved pair of this process (A.good <-> B.good).
	std::unique_ptr<Conn> good;
	Buffer gbuf_a, gbuf_b;
	MrPtr gmr_a, gmr_b;
	uint64_t good_runs = 0;

	explicit Ctx(const Options &opt) : o(opt) {}
	void open();
	bool canaries_intact(Checker &chk);
};

// A QP on A connected to a QP on B, each with its own CQ (send and receive
// on one CQ per side), or UD QPs with an AH from A to B.
struct Conn {
	Ctx &c;
	ibv_qp_type type;
	CqPtr acq, bcq;
	QpPtr a, b;
	ibv_qp_cap acap{}, bcap{};
	ibv_srq *srq = nullptr; // B's, if any (not owned)
	ibv_ah *ah = nullptr;   // UD: A -> B
	Ring sq, arq, brq;      // A's SQ and RQ, B's RQ (not for an SRQ)
	uint32_t prod = 0;      // what this program published on A's SQ
	uint32_t bprod = 0;     // ... on B's RQ

	Conn(Ctx &ctx, ibv_qp_type t) : c(ctx), type(t) {}
	~Conn()
	{
		if (ah)
			ibv_destroy_ah(ah);
		c.alog.forget(a.get());
		c.alog.forget(acq.get());
		c.blog.forget(b.get());
		c.blog.forget(bcq.get());
		a.reset();
		b.reset();
	}

	// Publish k more WQEs (already written at prod..prod+k-1) and ring.
	int publish(uint32_t k)
	{
		prod += k;
		sq.set_producer(prod);
		return doorbell(a.get());
	}
	void post(const Wqe &w) { put_wqe(sq, prod, w); }
	// B receives (raw, into B's RQ).
	void b_recv(uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey)
	{
		put_recv(brq, bprod, wr_id, 1, {{addr, len, lkey}});
		bprod++;
		brq.set_producer(bprod);
	}
};

struct ConnCfg {
	uint32_t send_wr = 8, recv_wr = 8, send_sge = 2, recv_sge = 2, inline_data = 64;
	int cqe = 64;
	ibv_srq *srq = nullptr; // for B
	uint8_t timeout = 14, retry = 7, rnr_retry = 6, min_rnr = 12;
	bool rd_atomic = true;
};

void modify(ibv_qp *qp, ibv_qp_attr &a, int mask, const char *what)
{
	int rc = ibv_modify_qp(qp, &a, mask);
	if (rc)
		throw_errno(strf("ibv_modify_qp(%s)", what), rc);
}

void connect_one(Ctx &c, Endpoint &me, ibv_qp *qp, ibv_qp_type t, const Endpoint &peer, uint32_t peer_qpn,
		 uint32_t my_psn, uint32_t peer_psn, const ConnCfg &cfg)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = me.port;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (t == IBV_QPT_UD) {
		a.qkey = kQkey;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = t == IBV_QPT_UC ? unsigned{IBV_ACCESS_REMOTE_WRITE} : kAllAccess;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	modify(qp, a, mask, "-> INIT");
	a = {};
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (t != IBV_QPT_UD) {
		a.path_mtu = c.mtu;
		a.dest_qp_num = peer_qpn;
		a.rq_psn = peer_psn;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = peer.gid;
		a.ah_attr.grh.sgid_index = static_cast<uint8_t>(me.gid_index);
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = me.port;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (t == IBV_QPT_RC) {
			a.max_dest_rd_atomic = cfg.rd_atomic ? static_cast<uint8_t>(std::min(4, me.dattr.max_qp_rd_atom)) : 0;
			a.min_rnr_timer = cfg.min_rnr;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	modify(qp, a, mask, "INIT -> RTR");
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = my_psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (t == IBV_QPT_RC) {
		a.timeout = cfg.timeout;
		a.retry_cnt = cfg.retry;
		a.rnr_retry = cfg.rnr_retry;
		a.max_rd_atomic = cfg.rd_atomic ? static_cast<uint8_t>(std::min(4, peer.dattr.max_qp_rd_atom)) : 0;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	modify(qp, a, mask, "RTR -> RTS");
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

std::unique_ptr<Conn> make_conn(Ctx &c, ibv_qp_type t, const ConnCfg &cfg = {})
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

const ibv_wc *find_wc(const std::vector<ibv_wc> &v, uint64_t wr_id)
{
	for (auto &w : v)
		if (w.wr_id == wr_id)
			return &w;
	return nullptr;
}

std::string wcs_str(const std::vector<ibv_wc> &v)
{
	std::string s;
	for (auto &w : v)
		s += strf("%s{wr_id 0x%" PRIx64 " %s}", s.empty() ? "" : " ", w.wr_id, ibv_wc_status_str(w.status));
	return s.empty() ? "none" : s;
}

ibv_qp_state wait_state(ibv_qp *qp, ibv_qp_state want, std::chrono::milliseconds limit = 10s)
{
	auto t0 = Clock::now();
	ibv_qp_state s;
	while ((s = qp_state(qp)) != want && Clock::now() - t0 < limit)
		std::this_thread::sleep_for(2ms);
	return s;
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

void expect_quiet(Checker &chk, ibv_cq *cq, const char *what, std::chrono::milliseconds window = 300ms)
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

// One bad WQE (and a valid SEND behind it) on a fresh connection: the bad one
// completes with `want`, the one behind is flushed, A ends in `a_state`.
// B: posts two receives first; `b_err` says whether B must end in ERR (with
// event b_event) or stay RTS with nothing received.
struct BadOne {
	ibv_qp_type type = IBV_QPT_RC;
	ibv_wc_status want = IBV_WC_LOC_QP_OP_ERR;
	ibv_qp_state a_state = IBV_QPS_ERR;
	bool b_err = false;
	std::optional<ibv_event_type> b_event;
	std::function<Wqe(Ctx &, Conn &)> make;
	std::function<void(Ctx &, Conn &)> before; // e.g. raw receives on B
	bool b_recvs = true;
	bool behind = true;
};

void run_bad_one(Ctx &c, Checker &chk, const std::string &label, const BadOne &x, ConnCfg cfg = {})
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
				   strf("B got %s", ibv_event_type_str(*x.b_event)), "events: " + c.blog.of(k->b.get()));
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

// --- cases: send queue indices ------------------------------------------------------

// Post `n` valid signaled SENDs (wr_id base+i, 64 bytes each from A scratch
// offset 64*i) and check they arrive.
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

void case_sq_index(Ctx &c, Checker &chk)
{
	struct V {
		const char *name;
		std::function<uint32_t(uint32_t kidx, uint32_t n)> f;
	};
	const V vs[] = {
		{"producer one past the ring", [](uint32_t k, uint32_t n) { return k + n + 1; }},
		{"producer 2^31 ahead", [](uint32_t k, uint32_t) { return k + 0x80000000U; }},
		{"producer moved back by one", [](uint32_t k, uint32_t) { return k - 1; }},
		{"producer moved back by a whole ring", [](uint32_t k, uint32_t n) { return k - n; }},
		{"producer 0xffffffff", [](uint32_t, uint32_t) { return 0xffffffffU; }},
	};
	for (auto &v : vs) {
		chk.note(std::string("- ") + v.name);
		auto k = make_conn(c, IBV_QPT_RC);
		if (!warmup_sends(c, chk, *k, 2, 0x100))
			continue;
		// Recognisable garbage in every slot: none of it may run.
		k->sq.fill_slots(0xcc);
		uint32_t kidx = k->prod;
		k->sq.set_producer(v.f(kidx, k->sq.n));
		int rc = doorbell(k->a.get());
		chk.expect(rc == 0, "the doorbell returns 0", strf("rc %d", rc));
		expect_state(chk, "A", k->a.get(), IBV_QPS_ERR);
		chk.expect(c.alog.wait(IBV_EVENT_QP_FATAL, k->a.get(), 5s), "A got IBV_EVENT_QP_FATAL",
			   "events: " + c.alog.of(k->a.get()));
		expect_quiet(chk, k->acq.get(), "A (nothing of the ring was consumed)");
		expect_quiet(chk, k->bcq.get(), "B");
		chk.expect(k->sq.consumer() == kidx, "A's SQ consumer index did not move",
			   strf("%u, was %u", k->sq.consumer(), kidx));
		// A flood of doorbells on the broken ring: each one bounded.
		double worst = 0;
		auto t0 = Clock::now();
		bool all0 = true;
		for (int i = 0; i < 200; i++) {
			auto t1 = Clock::now();
			all0 &= doorbell(k->a.get()) == 0;
			worst = std::max(worst, secs_since(t1));
		}
		double tot = secs_since(t0);
		chk.expect(all0 && worst < 2.0, strf("200 more doorbells return 0 (%.3f s, slowest %.1f ms)", tot,
						      worst * 1000));
		expect_quiet(chk, k->acq.get(), "A after the doorbells", 100ms);
		chk.expect(qp_state(k->b.get()) == IBV_QPS_RTS, "B stays RTS");
	}
}

// The producer exactly one ring ahead is legal: every slot runs once, and
// re-ringing does not run anything again until the producer moves.
void case_sq_full_ring(Ctx &c, Checker &chk)
{
	ConnCfg cfg;
	cfg.send_wr = 8;
	cfg.recv_wr = 32;
	auto k = make_conn(c, IBV_QPT_RC, cfg);
	const uint32_t n = k->sq.n;
	chk.note(strf("SQ of %u slots", n));
	for (uint32_t i = 0; i < n; i++) {
		fill_stream(c.abuf.data() + 64 * i, 64, 0x200 + i, 0);
		put_wqe(k->sq, i, wqe(SROCE_WR_SEND, 0x200 + i, {a_sge(c, 64 * i, 64)}));
	}
	for (uint32_t i = 0; i < 2 * n; i++)
		k->b_recv(0x300 + i, c.bbuf.addr() + 256 * i, 256, c.bmr->lkey);
	for (int round = 0; round < 2; round++) {
		// Round 0: n fresh WQEs; round 1: the same n slots again (stale,
		// but published again, so they run again - once).
		k->publish(n);
		auto got = poll_n(k->acq.get(), n, 15s);
		bool ok = got.size() == n;
		for (uint32_t i = 0; ok && i < n; i++)
			ok &= got[i].status == IBV_WC_SUCCESS && got[i].wr_id == 0x200 + i;
		chk.expect(ok, strf("round %d: producer %u slots ahead runs each slot exactly once, in order", round, n),
			   wcs_str(got));
		auto rb = poll_n(k->bcq.get(), n, 15s);
		ok = rb.size() == n;
		for (uint32_t i = 0; ok && i < n; i++)
			ok &= rb[i].status == IBV_WC_SUCCESS &&
			      check_stream(c.bbuf.data() + 256 * (round * n + i), 64, 0x200 + i, 0) == 64;
		chk.expect(ok, strf("round %d: B received the %u messages intact", round, n), wcs_str(rb));
		for (int d = 0; d < 3; d++)
			doorbell(k->a.get());
		expect_quiet(chk, k->acq.get(), "three more doorbells without a new producer");
		expect_quiet(chk, k->bcq.get(), "B", 100ms);
	}
	chk.expect(qp_state(k->a.get()) == IBV_QPS_RTS, "A stays RTS");
}

// --- cases: WQE contents -------------------------------------------------------------

void case_bad_opcode(Ctx &c, Checker &chk)
{
	for (uint8_t op : std::initializer_list<uint8_t>{10, 11, 12, 13, 14, 16, 31, SROCE_WR_REG_MR, 0x7f, 0xff}) {
		BadOne x;
		x.make = [op](Ctx &cc, Conn &) { return wqe(op, 0, {a_sge(cc, 0, 64)}); };
		run_bad_one(c, chk, strf("RC, opcode %u", op), x);
	}
	// Valid opcodes the QP type does not allow: UC and UD stop their SQ (SQE).
	for (uint8_t op : std::initializer_list<uint8_t>{SROCE_WR_RDMA_READ, SROCE_WR_ATOMIC_FETCH_AND_ADD,
							 SROCE_WR_ATOMIC_WRITE}) {
		BadOne x;
		x.type = IBV_QPT_UC;
		x.a_state = IBV_QPS_SQE;
		x.make = [op](Ctx &cc, Conn &) { return wqe(op, 0, {a_sge(cc, 0, 64)}); };
		run_bad_one(c, chk, strf("UC, opcode %u", op), x);
	}
	for (uint8_t op : std::initializer_list<uint8_t>{SROCE_WR_RDMA_WRITE, SROCE_WR_RDMA_READ, SROCE_WR_LOCAL_INV,
							 0x55}) {
		BadOne x;
		x.type = IBV_QPT_UD;
		x.a_state = IBV_QPS_SQE;
		x.make = [op](Ctx &cc, Conn &k) {
			Wqe w = wqe(op, 0, {a_sge(cc, 0, 64)});
			w.h.ah = sroce::to_ah(k.ah)->ah_num;
			w.h.remote_qpn = k.b->qp_num;
			w.h.remote_qkey = kQkey;
			return w;
		};
		run_bad_one(c, chk, strf("UD, opcode %u", op), x);
	}
}

void case_huge_len(Ctx &c, Checker &chk)
{
	{
		BadOne x;
		x.make = [](Ctx &cc, Conn &) { return wqe(SROCE_WR_SEND, 0, {a_sge(cc, 0, 0xffffffffU)}); };
		run_bad_one(c, chk, "SEND, one SGE of 0xffffffff bytes", x);
	}
	{
		BadOne x;
		x.make = [](Ctx &cc, Conn &) {
			return wqe(SROCE_WR_SEND, 0, {a_sge(cc, 0, 0x40000001U), a_sge(cc, 0, 0x40000001U)});
		};
		run_bad_one(c, chk, "SEND, two SGEs adding up to 2 GiB + 2", x);
	}
	{
		BadOne x;
		x.make = [](Ctx &, Conn &) {
			Wqe w = wqe(SROCE_WR_SEND, 0, {}, SROCE_SEND_SIGNALED | SROCE_SEND_INLINE);
			w.h.inline_len = 0xffffffffU;
			return w;
		};
		run_bad_one(c, chk, "inline SEND, inline_len 0xffffffff", x);
	}
	{
		BadOne x;
		x.make = [](Ctx &, Conn &k) {
			Wqe w = wqe(SROCE_WR_SEND, 0, {}, SROCE_SEND_SIGNALED | SROCE_SEND_INLINE);
			w.h.inline_len = k.acap.max_inline_data + 1;
			w.inl.assign(k.sq.slot_size(), 0x5a);
			return w;
		};
		run_bad_one(c, chk, "inline SEND, inline_len max_inline_data + 1", x);
	}
	{
		BadOne x;
		x.want = IBV_WC_REM_ACCESS_ERR;
		x.b_err = true;
		x.b_event = IBV_EVENT_QP_ACCESS_ERR;
		x.make = [](Ctx &cc, Conn &) {
			Wqe w = wqe(SROCE_WR_RDMA_WRITE, 0, {a_sge(cc, 0, 1U << 30)});
			w.h.rkey = cc.bmr->rkey;
			w.h.remote_addr = cc.bbuf.addr() + 512 * 1024;
			return w;
		};
		run_bad_one(c, chk, "RDMA WRITE of 1 GiB into a 1 MiB MR", x);
		chk.expect(b_untouched(c, 512 * 1024, 512 * 1024, 0xbb), "B's MR untouched");
	}
	{
		BadOne x;
		x.want = IBV_WC_REM_ACCESS_ERR;
		x.b_err = true;
		x.b_event = IBV_EVENT_QP_ACCESS_ERR;
		x.make = [](Ctx &cc, Conn &) {
			Wqe w = wqe(SROCE_WR_RDMA_READ, 0, {a_sge(cc, 0, 0x7fffffffU)});
			w.h.rkey = cc.bmr->rkey;
			w.h.remote_addr = cc.bbuf.addr();
			return w;
		};
		run_bad_one(c, chk, "RDMA READ of 2 GiB - 1 from a 1 MiB MR", x);
	}
	{
		// A 16 KiB local MR, an SGE claiming 1 GiB of it: the requester
		// sends what the MR holds, then fails locally.
		Buffer small(16 * 1024);
		fill_stream(small.data(), small.size(), 0x5111, 0);
		MrPtr smr = reg_mr(c.A->pd.get(), small.data(), small.size(), kAllAccess);
		BadOne x;
		x.want = IBV_WC_LOC_PROT_ERR;
		x.make = [&](Ctx &, Conn &) {
			return wqe(SROCE_WR_SEND, 0, {sroce_sge{small.addr(), 1U << 30, smr->lkey}});
		};
		run_bad_one(c, chk, "SEND of 1 GiB from a 16 KiB MR", x);
		size_t good = check_stream(c.bbuf.data(), 16 * 1024, 0x5111, 0);
		chk.expect(good == 16 * 1024, "what B received before the error is the MR's content",
			   strf("first bad byte %zu", good));
	}
}

void case_too_many_sge(Ctx &c, Checker &chk)
{
	{
		BadOne x;
		x.make = [](Ctx &cc, Conn &k) {
			std::vector<sroce_sge> sg(k.acap.max_send_sge + 1, a_sge(cc, 0, 8));
			return wqe(SROCE_WR_SEND, 0, sg);
		};
		run_bad_one(c, chk, "SEND with max_send_sge + 1 SGEs", x);
	}
	{
		// One more SGE than the slot holds (the WQE sits in slot 0, so
		// even a kernel that reads the SGEs of the rejected WQE stays
		// inside its shadow ring).
		BadOne x;
		x.make = [](Ctx &cc, Conn &k) {
			Wqe w = wqe(SROCE_WR_RDMA_WRITE, 0, {a_sge(cc, 0, 8)});
			w.h.num_sge = static_cast<uint16_t>((k.sq.slot_size() - SROCE_SEND_WQE_HDR_SIZE) / sizeof(sroce_sge) + 1);
			w.h.rkey = cc.bmr->rkey;
			w.h.remote_addr = cc.bbuf.addr();
			return w;
		};
		run_bad_one(c, chk, "RDMA WRITE with one SGE more than the slot holds", x);
	}
	if (!c.o.known_bugs) {
		chk.note(std::string("- RDMA WRITE with num_sge 0xffff: SKIPPED (") + kKnownBug + ")");
	} else {
		BadOne x;
		x.make = [](Ctx &cc, Conn &) {
			Wqe w = wqe(SROCE_WR_RDMA_WRITE, 0, {a_sge(cc, 0, 8)});
			w.h.num_sge = 0xffff;
			w.h.rkey = cc.bmr->rkey;
			w.h.remote_addr = cc.bbuf.addr();
			return w;
		};
		run_bad_one(c, chk, "RDMA WRITE with num_sge 0xffff", x);
	}
	// Receive WQEs: the responder refuses the request (NAK remote operational
	// error) and its QP goes to ERR with IBV_EVENT_QP_FATAL.
	for (uint32_t nsge : {0U, 0xffffffffU}) {
		BadOne x;
		x.want = IBV_WC_REM_OP_ERR;
		x.b_err = true;
		x.b_event = IBV_EVENT_QP_FATAL;
		x.b_recvs = false;
		x.behind = false;
		x.before = [nsge](Ctx &cc, Conn &k) {
			uint32_t n = nsge ? nsge : k.bcap.max_recv_sge + 1;
			std::vector<sroce_sge> sg(k.bcap.max_recv_sge + 1, b_sge(cc, 0, 64));
			put_recv(k.brq, k.bprod, 0xb0, n, sg);
			k.brq.set_producer(++k.bprod);
		};
		x.make = [](Ctx &cc, Conn &) { return wqe(SROCE_WR_SEND, 0, {a_sge(cc, 0, 64)}); };
		run_bad_one(c, chk, strf("receive WQE with %s SGEs", nsge ? "0xffffffff" : "max_recv_sge + 1"), x);
	}
	{
		// A's own receive queue flushed past a corrupt WQE: bounded, and
		// nothing after the corrupt WQE is completed.
		chk.note("- flush of a receive queue holding a corrupt WQE");
		auto k = make_conn(c, IBV_QPT_RC);
		uint32_t p = k->arq.producer();
		put_recv(k->arq, p, 0xa0, 1, {a_sge(c, 0, 64)});
		put_recv(k->arq, p + 1, 0xa1, 1, {a_sge(c, 64, 64)});
		put_recv(k->arq, p + 2, 0xa2, 0xffff, {});
		put_recv(k->arq, p + 3, 0xa3, 1, {a_sge(c, 128, 64)});
		k->arq.set_producer(p + 4);
		modify_state(k->a.get(), IBV_QPS_ERR);
		auto got = poll_window(k->acq.get(), 500ms);
		bool ok = got.size() == 2 && got[0].wr_id == 0xa0 && got[1].wr_id == 0xa1 &&
			  got[0].status == IBV_WC_WR_FLUSH_ERR && got[1].status == IBV_WC_WR_FLUSH_ERR;
		chk.expect(ok, "the two WQEs before it are flushed, nothing from it on", wcs_str(got));
		for (int i = 0; i < 50; i++)
			doorbell(k->a.get());
		expect_quiet(chk, k->acq.get(), "50 doorbells later");
	}
}

// The keys and AH number of another process.
void case_foreign_keys(Ctx &c, Checker &chk)
{
	if (!c.have_victim) {
		chk.note("no victim process (--no-victim): skipped");
		return;
	}
	const VictimInfo &v = c.vic;
	auto vsge_a = [&](uint32_t len) { return sroce_sge{v.addr[0], len, v.lkey[0]}; };
	{
		BadOne x;
		x.want = IBV_WC_LOC_PROT_ERR;
		x.make = [&](Ctx &, Conn &) { return wqe(SROCE_WR_SEND, 0, {vsge_a(64)}); };
		run_bad_one(c, chk, "SEND from the other process's MR (its L_Key)", x);
	}
	{
		BadOne x;
		x.want = IBV_WC_LOC_PROT_ERR;
		x.make = [&](Ctx &cc, Conn &) {
			Wqe w = wqe(SROCE_WR_RDMA_WRITE, 0, {vsge_a(4096)});
			w.h.rkey = cc.bmr->rkey;
			w.h.remote_addr = cc.bbuf.addr() + 200 * 1024;
			return w;
		};
		run_bad_one(c, chk, "RDMA WRITE sourced from the other process's MR", x);
		chk.expect(b_untouched(c, 200 * 1024, 4096, 0xbb), "B's target bytes untouched");
	}
	{
		BadOne x;
		x.want = IBV_WC_REM_ACCESS_ERR;
		x.b_err = true;
		x.b_event = IBV_EVENT_QP_ACCESS_ERR;
		x.make = [&](Ctx &cc, Conn &) {
			Wqe w = wqe(SROCE_WR_RDMA_WRITE, 0, {a_sge(cc, 0, 4096)});
			w.h.rkey = v.rkey[1];
			w.h.remote_addr = v.addr[1];
			return w;
		};
		run_bad_one(c, chk, "RDMA WRITE into the other process's MR (its R_Key)", x);
	}
	{
		BadOne x;
		// Fails in the completer: a WQE behind it may already have reached B.
		x.behind = false;
		x.want = IBV_WC_LOC_PROT_ERR;
		x.make = [&](Ctx &cc, Conn &) {
			Wqe w = wqe(SROCE_WR_RDMA_READ, 0, {vsge_a(4096)});
			w.h.rkey = cc.bmr->rkey;
			w.h.remote_addr = cc.bbuf.addr();
			return w;
		};
		run_bad_one(c, chk, "RDMA READ into the other process's MR (its L_Key)", x);
	}
	{
		BadOne x;
		x.want = IBV_WC_REM_ACCESS_ERR;
		x.b_err = true;
		x.b_event = IBV_EVENT_QP_ACCESS_ERR;
		x.make = [&](Ctx &cc, Conn &) {
			Wqe w = wqe(SROCE_WR_RDMA_READ, 0, {a_sge(cc, 0, 4096)});
			w.h.rkey = v.rkey[1];
			w.h.remote_addr = v.addr[1];
			return w;
		};
		run_bad_one(c, chk, "RDMA READ from the other process's MR (its R_Key)", x);
	}
	{
		BadOne x;
		x.want = IBV_WC_REM_ACCESS_ERR;
		x.b_err = true;
		x.b_event = IBV_EVENT_QP_ACCESS_ERR;
		x.make = [&](Ctx &cc, Conn &) {
			Wqe w = wqe(SROCE_WR_ATOMIC_FETCH_AND_ADD, 0, {a_sge(cc, 0, 8)});
			w.h.rkey = v.rkey[1];
			w.h.remote_addr = v.addr[1];
			w.h.compare_add = 1;
			return w;
		};
		run_bad_one(c, chk, "FETCH_ADD on the other process's MR", x);
	}
	{
		BadOne x;
		// Fails in the completer: a WQE behind it may already have reached B.
		x.behind = false;
		x.want = IBV_WC_LOC_PROT_ERR;
		x.make = [&](Ctx &cc, Conn &) {
			Wqe w = wqe(SROCE_WR_ATOMIC_CMP_AND_SWP, 0, {vsge_a(8)});
			w.h.rkey = cc.bmr->rkey;
			w.h.remote_addr = cc.bbuf.addr() + 1024;
			return w;
		};
		run_bad_one(c, chk, "CMP_SWAP returning its result into the other process's MR", x);
	}
	{
		BadOne x;
		// Fails in the completer: a WQE behind it may already have reached B.
		x.behind = false;
		x.want = IBV_WC_LOC_PROT_ERR;
		x.make = [&](Ctx &cc, Conn &) {
			// This process's own L_Key, pointing at its unregistered memory.
			Wqe w = wqe(SROCE_WR_RDMA_READ, 0, {sroce_sge{cc.araw.addr(), 4096, cc.amr->lkey}});
			w.h.rkey = cc.bmr->rkey;
			w.h.remote_addr = cc.bbuf.addr();
			return w;
		};
		run_bad_one(c, chk, "RDMA READ into unregistered memory through a valid L_Key", x);
	}
	{
		BadOne x;
		x.want = IBV_WC_REM_OP_ERR;
		x.b_err = true;
		x.b_event = IBV_EVENT_QP_FATAL;
		x.b_recvs = false;
		x.behind = false;
		x.before = [&](Ctx &, Conn &k) { k.b_recv(0xb0, v.addr[1], 4096, v.lkey[1]); };
		x.make = [&](Ctx &cc, Conn &) { return wqe(SROCE_WR_SEND, 0, {a_sge(cc, 0, 256)}); };
		run_bad_one(c, chk, "SEND into a receive WQE naming the other process's MR", x);
	}
	{
		BadOne x;
		x.make = [&](Ctx &, Conn &) {
			Wqe w = wqe(SROCE_WR_LOCAL_INV, 0);
			w.h.imm_or_inv = v.rkey[0];
			return w;
		};
		run_bad_one(c, chk, "LOCAL_INV of the other process's MR", x);
	}
	{
		ibv_mw *mw = ibv_alloc_mw(c.A->pd.get(), IBV_MW_TYPE_2);
		if (!mw) {
			chk.note(strf("ibv_alloc_mw(type 2) failed (%s): BIND_MW variant skipped", std::strerror(errno)));
		} else {
			BadOne x;
			x.want = IBV_WC_MW_BIND_ERR;
			x.make = [&](Ctx &, Conn &) {
				Wqe w = wqe(SROCE_WR_BIND_MW, 0);
				w.h.imm_or_inv = (mw->rkey & ~0xffU) | ((mw->rkey + 1) & 0xff);
				w.h.rkey = v.lkey[0];
				w.h.remote_addr = v.addr[0];
				w.h.compare_add = 4096;
				w.h.swap = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
				return w;
			};
			run_bad_one(c, chk, "BIND_MW of this process's window onto the other process's MR", x);
			ibv_dealloc_mw(mw);
		}
	}
	{
		BadOne x;
		x.type = IBV_QPT_UD;
		x.a_state = IBV_QPS_SQE;
		x.make = [&](Ctx &cc, Conn &k) {
			Wqe w = wqe(SROCE_WR_SEND, 0, {a_sge(cc, 0, 64)});
			w.h.ah = v.ah_num;
			w.h.remote_qpn = k.b->qp_num;
			w.h.remote_qkey = kQkey;
			return w;
		};
		run_bad_one(c, chk, "UD SEND through the other process's AH number", x);
	}
}

// --- cases: WQEs changed after the doorbell ------------------------------------------

// Another thread keeps rewriting one 8-byte word of the posted slot between
// two values while the kernel fetches and executes it.
class Mutator {
public:
	void start()
	{
		stop_ = false;
		th_ = std::thread([this] { run(); });
	}
	void stop()
	{
		stop_ = true;
		if (th_.joinable())
			th_.join();
	}
	~Mutator() { stop(); }
	// Flip *word between v0 and v1; returns once the flipping is under way.
	void aim(uint64_t *word, uint64_t v0, uint64_t v1)
	{
		v0_ = v0, v1_ = v1;
		uint64_t f = flips_.load();
		word_.store(word, std::memory_order_release);
		auto t0 = Clock::now();
		while (flips_.load() < f + 2 && Clock::now() - t0 < 100ms)
			std::this_thread::yield();
	}
	// Stop flipping; returns once the thread no longer touches the old word.
	void idle()
	{
		word_.store(nullptr, std::memory_order_release);
		uint64_t l = loops_.load();
		while (!stop_ && th_.joinable() && loops_.load() < l + 2)
			std::this_thread::yield();
	}
	uint64_t flips() const { return flips_; }

private:
	void run()
	{
		while (!stop_) {
			loops_++;
			uint64_t *w = word_.load(std::memory_order_acquire);
			if (!w) {
				// Idle: leave the CPU to the kernel (2 vCPUs under TCG).
				std::this_thread::sleep_for(50us);
				continue;
			}
			// One value per pass: each holds about half the time.
			std::atomic_ref<uint64_t>(*w).store(flips_++ & 1 ? v1_ : v0_, std::memory_order_relaxed);
		}
	}
	std::thread th_;
	std::atomic<bool> stop_{false};
	std::atomic<uint64_t *> word_{nullptr};
	std::atomic<uint64_t> v0_{0}, v1_{0};
	std::atomic<uint64_t> flips_{0}, loops_{0};
};

void case_mutate(Ctx &c, Checker &chk)
{
	const uint32_t len = 8 * c.mtu_bytes; // several packets
	const uint64_t t1 = 0x7e51, t2 = 0x7e52;
	uint8_t *src1 = c.abuf.data(), *src2 = c.abuf.data() + 256 * 1024;
	fill_stream(src1, len, t1, 0);
	fill_stream(src2, len, t2, 0);
	uint8_t *dst = c.bbuf.data();
	Mutator m;
	m.start();

	// 1: the SGE address flips between two valid buffers. The message must
	// be wholly one of them: a kernel that read the ring again while sending
	// would mix them.
	{
		chk.note(strf("- SGE address flipped between two sources during %d WRITEs of %u bytes",
			      c.o.mutate_iters, len));
		auto k = make_conn(c, IBV_QPT_RC);
		int n1 = 0, n2 = 0, bad = 0;
		std::string why;
		for (int i = 0; i < c.o.mutate_iters && !bad; i++) {
			std::memset(dst, 0, len);
			Wqe w = wqe(SROCE_WR_RDMA_WRITE, static_cast<uint64_t>(i), {a_sge(c, 0, len)});
			w.h.rkey = c.bmr->rkey;
			w.h.remote_addr = c.bbuf.addr();
			k->post(w);
			auto *addr = reinterpret_cast<uint64_t *>(k->sq.slot(k->prod) + SROCE_SEND_WQE_HDR_SIZE);
			m.aim(addr, c.abuf.addr(), c.abuf.addr() + 256 * 1024);
			k->publish(1);
			auto got = poll_n(k->acq.get(), 1, 15s);
			m.idle();
			if (got.size() != 1 || got[0].status != IBV_WC_SUCCESS || got[0].byte_len != len) {
				bad++;
				why = "completion " + wcs_str(got) + (got.empty() ? "" : strf(" byte_len %u", got[0].byte_len));
				break;
			}
			if (check_stream(dst, len, t1, 0) == len)
				n1++;
			else if (check_stream(dst, len, t2, 0) == len)
				n2++;
			else {
				bad++;
				why = strf("iteration %d: the message mixes both sources (%zu bytes from the first, %zu from "
					   "the second)",
					   i, len - count_mismatch(dst, len, t1, 0), len - count_mismatch(dst, len, t2, 0));
			}
		}
		chk.expect(!bad, strf("every message came wholly from one source (%d from the first, %d from the "
				      "second; %" PRIu64 " flips)",
				      n1, n2, m.flips()),
			   why);
	}

	// 2: the control word (opcode, flags, num_sge, inline_len) flips between
	// a valid WRITE and an inline one with an impossible length. Allowed:
	// the valid WRITE (whole message), an inline WRITE of 0 bytes (a byte
	// mix of the two words), or LOC_QP_OP_ERR with nothing written.
	{
		chk.note("- control word flipped between a valid WRITE and an invalid inline one");
		sroce_send_wqe v1{}, v2{};
		v1.opcode = v2.opcode = SROCE_WR_RDMA_WRITE;
		v1.flags = SROCE_SEND_SIGNALED;
		v2.flags = SROCE_SEND_SIGNALED | SROCE_SEND_INLINE;
		v1.num_sge = v2.num_sge = 1;
		v2.inline_len = 0xffffff00U;
		uint64_t w1, w2;
		std::memcpy(&w1, reinterpret_cast<uint8_t *>(&v1) + 8, 8);
		std::memcpy(&w2, reinterpret_cast<uint8_t *>(&v2) + 8, 8);
		auto k = make_conn(c, IBV_QPT_RC);
		int ok_full = 0, ok_zero = 0, refused = 0, bad = 0, conns = 1;
		std::string why;
		for (int i = 0; i < c.o.mutate_iters / 2 && !bad; i++) {
			std::memset(dst, 0, len);
			Wqe w = wqe(SROCE_WR_RDMA_WRITE, static_cast<uint64_t>(i), {a_sge(c, 0, len)});
			w.h.rkey = c.bmr->rkey;
			w.h.remote_addr = c.bbuf.addr();
			k->post(w);
			m.aim(reinterpret_cast<uint64_t *>(k->sq.slot(k->prod) + 8), w1, w2);
			k->publish(1);
			auto got = poll_n(k->acq.get(), 1, 15s);
			m.idle();
			bool untouched = std::all_of(dst, dst + len, [](uint8_t b) { return b == 0; });
			if (got.size() != 1) {
				bad++;
				why = "no completion";
			} else if (got[0].status == IBV_WC_SUCCESS && got[0].byte_len == len &&
				   check_stream(dst, len, t1, 0) == len) {
				ok_full++;
			} else if (got[0].status == IBV_WC_SUCCESS && got[0].byte_len == 0 && untouched) {
				ok_zero++;
			} else if (got[0].status == IBV_WC_LOC_QP_OP_ERR && untouched) {
				refused++;
				if (conns >= 12)
					break;
				k = make_conn(c, IBV_QPT_RC);
				conns++;
			} else {
				bad++;
				why = strf("iteration %d: %s, byte_len %u, destination %s", i, ibv_wc_status_str(got[0].status),
					   got[0].byte_len, untouched ? "untouched" : "written");
			}
		}
		chk.expect(!bad, strf("each WQE ran as one consistent version (%d valid, %d zero-length inline, %d "
				      "refused on %d QPs)",
				      ok_full, ok_zero, refused, conns),
			   why);
	}

	// 3: a receive WQE's SGE address flips between two places in B's MR
	// while a multi-packet SEND lands: the message must be wholly in one
	// place, the other untouched.
	{
		chk.note(strf("- receive SGE address flipped between two places during %d SENDs", c.o.mutate_iters / 2));
		ConnCfg cfg;
		cfg.recv_wr = 4;
		auto k = make_conn(c, IBV_QPT_RC, cfg);
		uint8_t *p1 = c.bbuf.data(), *p2 = c.bbuf.data() + 256 * 1024;
		int n1 = 0, n2 = 0, bad = 0;
		std::string why;
		for (int i = 0; i < c.o.mutate_iters / 2 && !bad; i++) {
			std::memset(p1, 0, len);
			std::memset(p2, 0, len);
			k->b_recv(static_cast<uint64_t>(i), c.bbuf.addr(), len, c.bmr->lkey);
			auto *addr = reinterpret_cast<uint64_t *>(k->brq.slot(k->bprod - 1) + sizeof(sroce_recv_wqe));
			m.aim(addr, c.bbuf.addr(), c.bbuf.addr() + 256 * 1024);
			k->post(wqe(SROCE_WR_SEND, static_cast<uint64_t>(i), {a_sge(c, 0, len)}));
			k->publish(1);
			auto ga = poll_n(k->acq.get(), 1, 15s);
			auto gb = poll_n(k->bcq.get(), 1, 15s);
			m.idle();
			bool z1 = std::all_of(p1, p1 + len, [](uint8_t b) { return b == 0; });
			bool z2 = std::all_of(p2, p2 + len, [](uint8_t b) { return b == 0; });
			if (ga.size() != 1 || gb.size() != 1 || ga[0].status != IBV_WC_SUCCESS ||
			    gb[0].status != IBV_WC_SUCCESS || gb[0].byte_len != len) {
				bad++;
				why = "completions: A " + wcs_str(ga) + ", B " + wcs_str(gb);
			} else if (check_stream(p1, len, t1, 0) == len && z2) {
				n1++;
			} else if (check_stream(p2, len, t1, 0) == len && z1) {
				n2++;
			} else {
				bad++;
				why = strf("iteration %d: the message is split between the two places", i);
			}
		}
		chk.expect(!bad, strf("every message landed wholly in one place (%d in the first, %d in the second)", n1,
				      n2),
			   why);
	}
	m.stop();
}

// --- cases: completion queues ---------------------------------------------------------

void case_cq_consumer(Ctx &c, Checker &chk)
{
	struct V {
		const char *name;
		std::function<uint32_t(uint32_t prod, uint32_t n)> f;
	};
	const V vs[] = {
		{"consumer 5 ahead of the producer", [](uint32_t p, uint32_t) { return p + 5; }},
		{"consumer more than a ring behind", [](uint32_t p, uint32_t n) { return p - n - 1; }},
		{"consumer 0xdeadbeef", [](uint32_t, uint32_t) { return 0xdeadbeefU; }},
	};
	auto send_once = [&](Conn &k, uint64_t tag) {
		fill_stream(c.abuf.data(), 512, tag, 0);
		k.b_recv(tag, c.bbuf.addr(), 512, c.bmr->lkey);
		ibv_sge s{c.abuf.addr(), 512, c.amr->lkey};
		ibv_send_wr w{}, *bad = nullptr;
		w.wr_id = tag;
		w.sg_list = &s;
		w.num_sge = 1;
		w.opcode = IBV_WR_SEND;
		w.send_flags = IBV_SEND_SIGNALED;
		return ibv_post_send(k.a.get(), &w, &bad);
	};
	for (auto &v : vs) {
		chk.note(std::string("- ") + v.name);
		ConnCfg cfg;
		cfg.cqe = 16;
		auto k = make_conn(c, IBV_QPT_RC, cfg);
		Ring cr = cq_ring(k->acq.get());
		if (send_once(*k, 0x401) || poll_n(k->acq.get(), 1, 15s).size() != 1 ||
		    poll_n(k->bcq.get(), 1, 15s).size() != 1) {
			chk.fail("the first SEND did not complete");
			continue;
		}
		uint32_t p = cr.producer();
		cr.fill_slots(0x5a);
		cr.set_consumer(v.f(p, cr.n));
		std::memset(c.bbuf.data(), 0, 512);
		chk.expect(send_once(*k, 0x402) == 0, "ibv_post_send succeeds");
		auto rb = poll_n(k->bcq.get(), 1, 15s);
		chk.expect(rb.size() == 1 && rb[0].status == IBV_WC_SUCCESS && check_stream(c.bbuf.data(), 512, 0x402, 0) == 512,
			   "B still receives the SEND intact", wcs_str(rb));
		chk.expect(c.alog.wait(IBV_EVENT_CQ_ERR, k->acq.get(), 5s), "IBV_EVENT_CQ_ERR for A's CQ",
			   "events: " + c.alog.of(k->acq.get()));
		bool canary = std::all_of(cr.data, cr.data + (size_t{cr.n} << cr.shift), [](uint8_t b) { return b == 0x5a; });
		chk.expect(canary && cr.producer() == p, "the kernel wrote no CQE and left the producer index alone",
			   strf("producer %u (was %u), slots %s", cr.producer(), p, canary ? "intact" : "written"));
		int rc = ibv_resize_cq(k->acq.get(), 64);
		chk.expect(rc != 0, "ibv_resize_cq refuses the corrupt CQ", "it succeeded");
		if (rc)
			chk.note(strf("ibv_resize_cq: %s", std::strerror(rc)));
		else
			cr = cq_ring(k->acq.get());
		auto v2 = poll_window(k->acq.get(), 100ms);
		chk.expect(v2.empty(), "polling the CQ returns nothing", wcs_str(v2));
		chk.expect(c.blog.of(k->b.get()) == "none" && qp_state(k->b.get()) == IBV_QPS_RTS,
			   "B unaffected (RTS, no event)");
	}
	{
		chk.note("- garbage in the CQ header's geometry, flags and notify words");
		ConnCfg cfg;
		cfg.cqe = 16;
		auto k = make_conn(c, IBV_QPT_RC, cfg);
		Ring cr = cq_ring(k->acq.get());
		cr.hdr->num_slots = 0x7fffffff;
		cr.hdr->slot_shift = 31;
		cr.hdr->flags = 0xffffffff;
		cr.hdr->notify = 0xffffffff;
		std::memset(cr.hdr->reserved0, 0xee, sizeof(cr.hdr->reserved0));
		int ok = 0;
		for (uint64_t t = 0x501; t < 0x501 + 20; t++) {
			if (send_once(*k, t))
				break;
			auto a = poll_n(k->acq.get(), 1, 15s);
			auto b = poll_n(k->bcq.get(), 1, 15s);
			if (a.size() == 1 && b.size() == 1 && a[0].status == IBV_WC_SUCCESS && a[0].wr_id == t &&
			    b[0].status == IBV_WC_SUCCESS && check_stream(c.bbuf.data(), 512, t, 0) == 512)
				ok++;
		}
		chk.expect(ok == 20, "20 SENDs (more than the ring holds) complete normally", strf("%d of 20", ok));
		chk.expect(!c.alog.has(IBV_EVENT_CQ_ERR, k->acq.get()), "no CQ error");
	}
}

// --- cases: receive queues --------------------------------------------------------------

void case_rq_index(Ctx &c, Checker &chk)
{
	struct V {
		const char *name;
		std::function<uint32_t(uint32_t kidx, uint32_t n)> f;
	};
	const V vs[] = {
		{"producer one past the ring", [](uint32_t k, uint32_t n) { return k + n + 1; }},
		{"producer moved back", [](uint32_t k, uint32_t) { return k - 1; }},
		{"producer 0x80000000 ahead", [](uint32_t k, uint32_t) { return k + 0x80000000U; }},
	};
	for (auto &v : vs) {
		BadOne x;
		x.want = IBV_WC_REM_OP_ERR;
		x.b_err = true;
		x.b_event = IBV_EVENT_QP_FATAL;
		x.b_recvs = false;
		x.behind = false;
		x.before = [&](Ctx &cc, Conn &k) {
			// One receive consumed by a valid SEND first.
			warmup_sends(cc, chk, k, 1, 0x600);
			k.brq.fill_slots(0xcc);
			k.brq.set_producer(v.f(k.bprod, k.brq.n));
		};
		x.make = [](Ctx &cc, Conn &) { return wqe(SROCE_WR_SEND, 0, {a_sge(cc, 0, 64)}); };
		run_bad_one(c, chk, std::string("B's receive queue: ") + v.name, x);
	}
	{
		// An SGE claiming 4 GiB of a 1 MiB MR: the SEND fills the MR and
		// then fails at the responder, never writing past it.
		BadOne x;
		x.want = IBV_WC_REM_OP_ERR;
		x.b_err = true;
		x.b_event = IBV_EVENT_QP_FATAL;
		x.b_recvs = false;
		x.behind = false;
		x.before = [](Ctx &cc, Conn &k) { k.b_recv(0xb0, cc.bbuf.addr(), 0xffffffffU, cc.bmr->lkey); };
		x.make = [](Ctx &cc, Conn &) { return wqe(SROCE_WR_SEND, 0, {a_sge(cc, 0, kScratch), a_sge(cc, 0, 4096)}); };
		run_bad_one(c, chk, "receive SGE of 0xffffffff bytes, SEND longer than its MR", x);
	}
}

void case_srq_ring(Ctx &c, Checker &chk)
{
	for (int variant = 0; variant < 2; variant++) {
		ibv_srq_init_attr sa{};
		sa.attr.max_wr = 8;
		sa.attr.max_sge = 2;
		ibv_srq *srq = ibv_create_srq(c.B->pd.get(), &sa);
		if (!srq)
			throw_errno("ibv_create_srq", errno);
		{
			Ring sr = srq_ring(srq, sa.attr.max_wr, sa.attr.max_sge);
			BadOne x;
			x.want = IBV_WC_REM_OP_ERR;
			x.b_err = true;
			x.b_event = IBV_EVENT_QP_FATAL;
			x.b_recvs = false;
			x.behind = false;
			x.before = [&](Ctx &cc, Conn &) {
				uint32_t p = sr.producer();
				if (variant == 0) {
					sr.fill_slots(0xcc);
					sr.set_producer(p + sr.n + 1);
				} else {
					std::vector<sroce_sge> sg(4, b_sge(cc, 0, 64));
					put_recv(sr, p, 0xb5, 3, sg);
					sr.set_producer(p + 1);
				}
			};
			x.make = [](Ctx &cc, Conn &) { return wqe(SROCE_WR_SEND, 0, {a_sge(cc, 0, 64)}); };
			ConnCfg cfg;
			cfg.srq = srq;
			run_bad_one(c, chk, variant ? "SRQ WQE with more SGEs than the SRQ allows" : "SRQ producer past the ring",
				    x, cfg);
			if (variant == 0) {
				ibv_srq_attr at{};
				at.max_wr = 16;
				int rc = ibv_modify_srq(srq, &at, IBV_SRQ_MAX_WR);
				chk.expect(rc != 0, "resizing the corrupt SRQ is refused", "it succeeded");
			}
		}
		c.blog.forget(srq);
		if (ibv_destroy_srq(srq))
			chk.fail("ibv_destroy_srq failed");
	}
}

// --- cases: ring headers, doorbells ------------------------------------------------------

void case_hdr_garbage(Ctx &c, Checker &chk)
{
	auto k = make_conn(c, IBV_QPT_RC);
	for (Ring *r : {&k->sq, &k->brq}) {
		r->hdr->num_slots = 0xffffffff;
		r->hdr->slot_shift = 0xffffffff;
		r->hdr->flags = 0xffffffff;
		r->hdr->notify = 0xffffffff;
		std::memset(r->hdr->reserved1, 0xee, sizeof(r->hdr->reserved1));
	}
	k->sq.hdr->consumer = 0x12345678;
	k->brq.hdr->consumer = 0x9abcdef0;
	if (!warmup_sends(c, chk, *k, 5, 0x700))
		return;
	chk.expect(k->sq.consumer() == k->prod, "the kernel keeps publishing its own SQ consumer index",
		   strf("%#x", k->sq.consumer()));
	chk.expect(k->brq.consumer() == k->bprod, "... and its own RQ consumer index", strf("%#x", k->brq.consumer()));
	chk.expect(qp_state(k->a.get()) == IBV_QPS_RTS && qp_state(k->b.get()) == IBV_QPS_RTS, "both QPs stay RTS");
}

void case_doorbell_flood(Ctx &c, Checker &chk)
{
	auto k = make_conn(c, IBV_QPT_RC);
	const int n = 1000;
	double worst = 0;
	auto t0 = Clock::now();
	bool all0 = true;
	for (int i = 0; i < n; i++) {
		auto t1 = Clock::now();
		all0 &= doorbell(k->a.get()) == 0;
		worst = std::max(worst, secs_since(t1));
	}
	chk.expect(all0 && worst < 2.0, strf("%d doorbells with nothing posted: %.3f s, slowest %.1f ms", n,
					     secs_since(t0), worst * 1000));
	expect_quiet(chk, k->acq.get(), "A", 100ms);
	chk.expect(qp_state(k->a.get()) == IBV_QPS_RTS, "A stays RTS");
	// In ERR: each doorbell flushes; with nothing to flush, bounded too.
	modify_state(k->a.get(), IBV_QPS_ERR);
	t0 = Clock::now();
	worst = 0;
	for (int i = 0; i < n; i++) {
		auto t1 = Clock::now();
		all0 &= doorbell(k->a.get()) == 0;
		worst = std::max(worst, secs_since(t1));
	}
	chk.expect(all0 && worst < 2.0, strf("%d doorbells on a QP in ERR: %.3f s, slowest %.1f ms", n, secs_since(t0),
					     worst * 1000));
	// A WQE published in ERR is flushed by the doorbell, once.
	k->post(wqe(SROCE_WR_SEND, 0x801, {a_sge(c, 0, 64)}));
	k->publish(1);
	for (int i = 0; i < 20; i++)
		doorbell(k->a.get());
	auto got = poll_window(k->acq.get(), 300ms);
	chk.expect(got.size() == 1 && got[0].wr_id == 0x801 && got[0].status == IBV_WC_WR_FLUSH_ERR,
		   "a WQE published in ERR is flushed exactly once", wcs_str(got));
}

// --- fuzz ------------------------------------------------------------------------------

uint32_t pick(Rng &r, std::initializer_list<uint32_t> v)
{
	return *(v.begin() + r.range(0, v.size() - 1));
}

Wqe random_wqe(Ctx &c, Conn &k, Rng &r)
{
	Wqe w;
	const VictimInfo &v = c.vic;
	w.h.wr_id = r.next();
	static const uint8_t ops[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 0x20};
	w.h.opcode = r.chance(85) ? ops[r.range(0, sizeof(ops) - 1)] : static_cast<uint8_t>(r.next());
	w.h.flags = r.chance(80) ? static_cast<uint8_t>(r.next() & 0xf) : static_cast<uint8_t>(r.next());
	uint32_t maxs = k.acap.max_send_sge;
	w.h.num_sge = static_cast<uint16_t>(r.chance(80) ? r.range(0, maxs) : pick(r, {maxs + 1, 0xffff, 255,
											static_cast<uint32_t>(r.next())}));
	w.h.inline_len = r.chance(70) ? static_cast<uint32_t>(r.range(0, k.acap.max_inline_data))
				      : pick(r, {k.acap.max_inline_data + 1, 0xffffffff, 0x80000000,
						 static_cast<uint32_t>(r.next())});
	auto lkey = [&] {
		return pick(r, {c.amr->lkey, c.amr->lkey, c.have_victim ? v.lkey[0] : 0, 0, c.amr->lkey ^ 0x100,
				static_cast<uint32_t>(r.next())});
	};
	auto len = [&] {
		return r.chance(70) ? static_cast<uint32_t>(r.range(0, 3 * c.mtu_bytes))
				    : pick(r, {0xffffffff, 0x80000000, static_cast<uint32_t>(kScratch),
					       static_cast<uint32_t>(kScratch) + 1, static_cast<uint32_t>(r.next())});
	};
	auto addr = [&](uint64_t base) {
		return r.chance(75) ? base + r.range(0, kScratch - 1)
				    : (r.chance(50) ? base - r.range(1, 4096) : r.next());
	};
	for (uint32_t i = 0; i < maxs + 1; i++)
		w.sge.push_back({addr(c.abuf.addr()), len(), lkey()});
	if (w.h.flags & SROCE_SEND_INLINE) {
		w.inl.resize(k.sq.slot_size());
		for (auto &b : w.inl)
			b = static_cast<uint8_t>(r.next());
	}
	w.h.rkey = pick(r, {c.bmr->rkey, c.bmr->rkey, c.have_victim ? v.rkey[1] : 0, static_cast<uint32_t>(r.next())});
	w.h.remote_addr = addr(c.bbuf.addr()) & (r.chance(80) ? ~7ULL : ~0ULL);
	w.h.imm_or_inv = pick(r, {c.bmr->rkey, c.amr->lkey, c.have_victim ? v.rkey[0] : 0,
				  static_cast<uint32_t>(r.next())});
	w.h.compare_add = r.next();
	w.h.swap = r.next();
	w.h.ah = k.ah ? pick(r, {sroce::to_ah(k.ah)->ah_num, sroce::to_ah(k.ah)->ah_num, c.have_victim ? v.ah_num : 0, 0,
				 static_cast<uint32_t>(r.next())})
		      : static_cast<uint32_t>(r.next() & 0xff);
	w.h.remote_qpn = r.chance(80) ? k.b->qp_num : static_cast<uint32_t>(r.next());
	w.h.remote_qkey = r.chance(80) ? kQkey : static_cast<uint32_t>(r.next());
	return w;
}

// A well-formed WQE for k's QP type: keys, addresses and lengths inside the
// scratch MRs (so the QP lives on and the WQEs behind it reach deeper: multi-
// packet messages, READs and atomics in flight, RNR, flushes of sent WQEs).
Wqe valid_wqe(Ctx &c, Conn &k, Rng &r)
{
	static const uint8_t rc_ops[] = {SROCE_WR_SEND,		SROCE_WR_SEND_WITH_IMM,	      SROCE_WR_RDMA_WRITE,
					 SROCE_WR_RDMA_WRITE_WITH_IMM, SROCE_WR_RDMA_READ,	      SROCE_WR_ATOMIC_CMP_AND_SWP,
					 SROCE_WR_ATOMIC_FETCH_AND_ADD};
	uint8_t op;
	if (k.type == IBV_QPT_RC)
		op = rc_ops[r.range(0, 6)];
	else if (k.type == IBV_QPT_UC)
		op = rc_ops[r.range(0, 3)];
	else
		op = rc_ops[r.range(0, 1)];
	const bool atomic = op == SROCE_WR_ATOMIC_CMP_AND_SWP || op == SROCE_WR_ATOMIC_FETCH_AND_ADD;
	uint32_t len = atomic ? 8
		       : k.type == IBV_QPT_UD ? static_cast<uint32_t>(r.range(0, c.mtu_bytes))
		       : r.chance(90) ? static_cast<uint32_t>(r.range(0, 3 * c.mtu_bytes))
				      : static_cast<uint32_t>(r.range(0, 64 * 1024));
	if (op == SROCE_WR_SEND || op == SROCE_WR_SEND_WITH_IMM)
		len = std::min<uint32_t>(len, 8192); // B's receives
	Wqe w;
	w.h.wr_id = r.next();
	w.h.opcode = op;
	w.h.flags = SROCE_SEND_SIGNALED;
	if (r.chance(10))
		w.h.flags |= SROCE_SEND_FENCE;
	if (r.chance(10))
		w.h.flags |= SROCE_SEND_SOLICITED;
	if (r.chance(20) && !atomic && op != SROCE_WR_RDMA_READ && len <= k.acap.max_inline_data) {
		w.h.flags |= SROCE_SEND_INLINE;
		w.h.inline_len = len;
		w.inl.resize(len);
		fill_stream(w.inl.data(), len, r.next(), 0);
	} else {
		uint32_t nsge = atomic ? 1 : static_cast<uint32_t>(r.range(1, std::min<uint32_t>(k.acap.max_send_sge, 3)));
		uint32_t left = len;
		for (uint32_t i = 0; i < nsge; i++) {
			uint32_t n = i + 1 == nsge ? left : static_cast<uint32_t>(r.range(0, left));
			uint64_t off = r.range(0, kScratch - 1 - n) & (atomic ? ~7ULL : ~0ULL);
			w.sge.push_back(a_sge(c, off, n));
			left -= n;
		}
		w.h.num_sge = static_cast<uint16_t>(nsge);
	}
	w.h.rkey = c.bmr->rkey;
	w.h.remote_addr = c.bbuf.addr() + (r.range(0, kScratch - 1 - len) & ~7ULL);
	w.h.imm_or_inv = static_cast<uint32_t>(r.next());
	w.h.compare_add = r.next();
	w.h.swap = r.next();
	if (k.ah) {
		w.h.ah = sroce::to_ah(k.ah)->ah_num;
		w.h.remote_qpn = k.b->qp_num;
		w.h.remote_qkey = kQkey;
	}
	return w;
}

// Mostly well-formed WQEs with one field made hostile, or garbage throughout.
Wqe fuzz_wqe(Ctx &c, Conn &k, Rng &r)
{
	if (r.chance(35))
		return random_wqe(c, k, r);
	Wqe w = valid_wqe(c, k, r);
	if (r.chance(60))
		return w;
	Wqe g = random_wqe(c, k, r);
	switch (r.range(0, 9)) {
	case 0: w.h.opcode = g.h.opcode; break;
	case 1: w.h.flags = g.h.flags, w.h.inline_len = g.h.inline_len, w.inl = g.inl; break;
	case 2: w.h.num_sge = g.h.num_sge, w.sge = g.sge; break;
	case 3: w.h.rkey = g.h.rkey; break;
	case 4: w.h.remote_addr = g.h.remote_addr; break;
	case 5: w.h.ah = g.h.ah; break;
	case 6: w.h.remote_qpn = g.h.remote_qpn, w.h.remote_qkey = g.h.remote_qkey; break;
	case 7:
		if (!w.sge.empty())
			w.sge[r.range(0, w.sge.size() - 1)].lkey = g.sge[0].lkey;
		break;
	case 8:
		if (!w.sge.empty())
			w.sge[r.range(0, w.sge.size() - 1)].length = g.sge[0].length;
		break;
	default: w.h.imm_or_inv = g.h.imm_or_inv; break;
	}
	return w;
}

// Without --known-bugs, every header put in the ring stays within its slot:
// a non-inline WQE has no more SGEs than the slot holds (kKnownBug), an
// inline one no more bytes - so that even a shadow slot refetched under a
// running requester (kShadowRace) cannot send it reading past the slot.
void known_bug_clamp(Ctx &c, Conn &k, Wqe &w)
{
	if (c.o.known_bugs)
		return;
	const uint32_t fit = (k.sq.slot_size() - SROCE_SEND_WQE_HDR_SIZE) / sizeof(sroce_sge);
	if (!(w.h.flags & SROCE_SEND_INLINE) && w.h.num_sge > fit)
		w.h.num_sge = static_cast<uint16_t>(fit);
	if ((w.h.flags & SROCE_SEND_INLINE) && w.h.inline_len > k.sq.slot_size() - SROCE_SEND_WQE_HDR_SIZE)
		w.h.inline_len = k.sq.slot_size() - SROCE_SEND_WQE_HDR_SIZE;
}

void case_fuzz(Ctx &c, Checker &chk)
{
	Rng r(c.o.seed ^ 0xf022);
	std::map<std::string, int> hist;
	uint64_t doorbells = 0, wqes = 0;
	double worst = 0;
	Mutator m;
	m.start();
	for (int round = 0; round < c.o.fuzz_rounds; round++) {
		ibv_qp_type t = r.chance(60) ? IBV_QPT_RC : r.chance(50) ? IBV_QPT_UC : IBV_QPT_UD;
		ConnCfg cfg;
		cfg.send_wr = pick(r, {2, 8, 32});
		cfg.recv_wr = 16;
		cfg.send_sge = pick(r, {1, 2, 4});
		cfg.cqe = 256;
		cfg.inline_data = pick(r, {0, 64, 200});
		cfg.timeout = 12;
		cfg.retry = 2;
		cfg.rnr_retry = 2;
		cfg.min_rnr = 1;
		auto k = make_conn(c, t, cfg);
		Ring acr = cq_ring(k->acq.get());
		// B: valid receives into B scratch, plus the odd corrupt one.
		for (int i = 0; i < 16; i++) {
			uint32_t n = r.chance(95) ? 1 : static_cast<uint32_t>(r.next());
			put_recv(k->brq, k->bprod, 0xb00 + static_cast<uint64_t>(i), n,
				 {b_sge(c, r.range(0, kScratch - 8192), 8192)});
			k->bprod++;
		}
		k->brq.set_producer(k->bprod);
		const bool mutate = r.chance(30);
		const int steps = static_cast<int>(r.range(4, 40));
		// Mostly valid traffic (messages in flight, READs and atomics
		// outstanding) with hostile steps among it.
		const unsigned hostile_pct = pick(r, {5, 15, 40});
		for (int s = 0; s < steps; s++) {
			if (!r.chance(hostile_pct)) {
				if (k->sq.flags() & SROCE_QUEUE_F_QP_ERR)
					break;
				// Room in the ring, as a well-behaved producer would wait for,
				// and receives on B for the SENDs.
				auto t1 = Clock::now();
				while (k->prod - k->sq.consumer() >= k->sq.n && secs_since(t1) < 2)
					for (auto &x : poll_window(k->acq.get(), 1ms))
						hist[ibv_wc_status_str(x.status)]++;
				while (k->bprod - k->brq.consumer() < 12)
					k->b_recv(0xb00, c.bbuf.addr() + r.range(0, kScratch - 8192 - 64), 8192 + 40, c.bmr->lkey);
				put_wqe(k->sq, k->prod, valid_wqe(c, *k, r));
				wqes++;
				t1 = Clock::now();
				k->publish(1);
				doorbells++;
				worst = std::max(worst, secs_since(t1));
				for (auto &x : poll_window(k->acq.get(), 1ms))
					hist[ibv_wc_status_str(x.status)]++;
				continue;
			}
			// Publishing more WQEs to a QP in ERR/SQE makes the flush
			// refetch shadow slots a requester may still be reading
			// (kShadowRace): only with --known-bugs.
			if (!c.o.known_bugs && (k->sq.flags() & SROCE_QUEUE_F_QP_ERR)) {
				hist["round ended at the error"]++;
				break;
			}
			Wqe w = fuzz_wqe(c, *k, r);
			known_bug_clamp(c, *k, w);
			put_wqe(k->sq, k->prod, w);
			wqes++;
			if (mutate) {
				// The word at 8 holds opcode, flags, num_sge and inline_len:
				// random values there are a num_sge of up to 0xffff
				// (kKnownBug), so only with --known-bugs.
				uint64_t wi = r.range(0, 7);
				if (wi == 1 && !c.o.known_bugs)
					wi = 2;
				m.aim(reinterpret_cast<uint64_t *>(k->sq.slot(k->prod) + 8 * wi), r.next(), r.next());
			}
			uint32_t n = k->sq.n;
			switch (r.range(0, 19)) {
			case 0: k->prod += static_cast<uint32_t>(r.range(0, 2 * n)); break;
			case 1: k->prod -= static_cast<uint32_t>(r.range(1, n)); break;
			case 2: k->prod = static_cast<uint32_t>(r.next()); break;
			case 3:
				if (r.chance(30))
					Ring::st(k->sq.hdr->consumer, static_cast<uint32_t>(r.next()));
				else
					acr.set_consumer(static_cast<uint32_t>(r.next()));
				k->prod++;
				break;
			case 4:
				if (r.chance(20))
					modify_state(k->a.get(), IBV_QPS_ERR);
				k->prod++;
				break;
			default: k->prod++; break;
			}
			k->sq.set_producer(k->prod);
			auto t1 = Clock::now();
			int rc = doorbell(k->a.get());
			worst = std::max(worst, secs_since(t1));
			doorbells++;
			if (rc)
				hist[strf("doorbell rc %d", rc)]++;
			for (auto &x : poll_window(k->acq.get(), 2ms))
				hist[ibv_wc_status_str(x.status)]++;
		}
		m.idle();
		for (auto &x : poll_window(k->acq.get(), 150ms))
			hist[ibv_wc_status_str(x.status)]++;
		poll_window(k->bcq.get(), 10ms);
		hist[strf("A ends in %s", qp_state_str(qp_state(k->a.get())))]++;
	}
	m.stop();
	std::string h;
	for (auto &[kk, vv] : hist)
		h += strf("%s%s: %d", h.empty() ? "" : ", ", kk.c_str(), vv);
	if (!c.o.known_bugs) {
		chk.note(std::string("non-inline WQEs had at most as many SGEs as their slot holds (") + kKnownBug + ")");
		chk.note(std::string("a round ended once its QP was in error (") + kShadowRace + ")");
	}
	chk.note(strf("%d rounds, %" PRIu64 " WQEs, %" PRIu64 " doorbells (slowest %.1f ms); %s", c.o.fuzz_rounds, wqes,
		      doorbells, worst * 1000, h.c_str()));
	chk.expect(worst < 5.0, "every doorbell returned in bounded time");
	c.canaries_intact(chk);
}

// --- opt-in: the kernel's shadow copy reused under a running requester ------------------

// The requester builds each packet from the kernel's shadow copy of the WQE
// after dropping sq_lock; a flush (QP to ERR) followed by a doorbell with the
// producer a ring ahead refetches every shadow slot - including the one the
// requester is still reading - from the ring, where this program has put a
// WQE with an impossible inline length. The requester then copies "inline
// data" from the shadow at the old message offset: past the shadow
// allocation. A byte of B's buffer that is neither A's data nor zero is
// kernel memory that went out on the wire (or the kernel oopses).
void case_shadow_race(Ctx &c, Checker &chk)
{
	const uint32_t len = 512 * 1024;
	fill_stream(c.abuf.data(), len, 0x5bad, 0);
	std::atomic<bool> hog_stop{false};
	std::vector<std::thread> hogs;
	for (int i = 0; i < 2; i++)
		hogs.emplace_back([&] {
			volatile uint64_t x = 0;
			while (!hog_stop)
				x = x + 1;
		});
	Rng r(c.o.seed ^ 0x5bad);
	int tries = 0, hit_err = 0, leaks = 0;
	size_t leak_off = 0;
	auto t0 = Clock::now();
	while (secs_since(t0) < c.o.race_seconds && !leaks) {
		ConnCfg cfg;
		cfg.send_wr = 2;
		cfg.send_sge = 1;
		cfg.inline_data = 0;
		auto k = make_conn(c, IBV_QPT_RC, cfg);
		std::memset(c.bbuf.data(), 0, len);
		Wqe poison = wqe(SROCE_WR_SEND, 0xdead, {}, SROCE_SEND_SIGNALED | SROCE_SEND_INLINE);
		poison.h.inline_len = 0xfffffff0U;
		poison.h.num_sge = 0xffff;
		Wqe w = wqe(SROCE_WR_RDMA_WRITE, 1, {a_sge(c, 0, len)});
		w.h.rkey = c.bmr->rkey;
		w.h.remote_addr = c.bbuf.addr();
		k->post(w);
		for (uint32_t i = 1; i < k->sq.n; i++)
			put_wqe(k->sq, k->prod + i, poison);
		k->prod++;
		k->sq.set_producer(k->prod);
		std::thread db([&] { doorbell(k->a.get()); });
		// Wait until the message is under way, then strike.
		size_t at = r.range(16, 256) * c.mtu_bytes;
		static const uint8_t zero[16] = {};
		auto t1 = Clock::now();
		while (!std::memcmp(c.bbuf.data() + at, zero, sizeof(zero)) && secs_since(t1) < 5)
			;
		put_wqe(k->sq, k->prod - 1, poison);
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_ERR;
		ibv_modify_qp(k->a.get(), &a, IBV_QP_STATE);
		k->prod += k->sq.n;
		k->sq.set_producer(k->prod);
		doorbell(k->a.get());
		db.join();
		auto got = poll_window(k->acq.get(), 50ms);
		hit_err += !got.empty() && got[0].status != IBV_WC_SUCCESS;
		for (size_t i = 0; i < len; i++) {
			uint8_t b = c.bbuf.data()[i];
			if (b && b != c.abuf.data()[i]) {
				leaks++;
				leak_off = i;
				break;
			}
		}
		tries++;
	}
	hog_stop = true;
	for (auto &h : hogs)
		h.join();
	chk.expect(!leaks, strf("%d attempts in %.0f s: no foreign byte reached B", tries, secs_since(t0)),
		   strf("byte %zu of B's buffer is neither A's data nor zero: kernel memory went out in a packet",
			leak_off));
	chk.note(strf("%d attempts ended with the WRITE in error", hit_err));
}

// --- limits ----------------------------------------------------------------------------

void case_caps(Ctx &c, Checker &chk)
{
	const ibv_device_attr &d = c.A->dattr;
	chk.note(strf("device: max_qp %d max_qp_wr %d max_sge %d max_cq %d max_cqe %d max_mr %d max_pd %d max_srq %d "
		      "max_srq_wr %d max_srq_sge %d max_ah %d",
		      d.max_qp, d.max_qp_wr, d.max_sge, d.max_cq, d.max_cqe, d.max_mr, d.max_pd, d.max_srq,
		      d.max_srq_wr, d.max_srq_sge, d.max_ah));
	CqPtr cq(ibv_create_cq(c.A->ctx.get(), 16, nullptr, nullptr, 0));
	if (!cq)
		throw_errno("ibv_create_cq", errno);
	auto try_qp = [&](uint32_t swr, uint32_t rwr, uint32_t ssge, uint32_t rsge, uint32_t inl) {
		ibv_qp_init_attr ia{};
		ia.send_cq = ia.recv_cq = cq.get();
		ia.qp_type = IBV_QPT_RC;
		ia.cap = {swr, rwr, ssge, rsge, inl};
		ibv_qp *q = ibv_create_qp(c.A->pd.get(), &ia);
		int err = q ? 0 : errno;
		if (q)
			ibv_destroy_qp(q);
		return err;
	};
	const uint32_t mw = static_cast<uint32_t>(d.max_qp_wr), ms = static_cast<uint32_t>(d.max_sge);
	chk.expect(try_qp(mw, mw, 1, 1, 0) == 0, strf("a QP of max_qp_wr (%u) send and receive WRs is created", mw));
	chk.expect(try_qp(1, 1, ms, ms, 0) == 0, strf("a QP of max_sge (%u) SGEs is created", ms));
	struct {
		const char *what;
		int err;
	} refused[] = {
		{"max_send_wr = max_qp_wr + 1", try_qp(mw + 1, 1, 1, 1, 0)},
		{"max_recv_wr = max_qp_wr + 1", try_qp(1, mw + 1, 1, 1, 0)},
		{"max_send_sge = max_sge + 1", try_qp(1, 1, ms + 1, 1, 0)},
		{"max_recv_sge = max_sge + 1", try_qp(1, 1, 1, ms + 1, 0)},
		{"max_inline_data = 513", try_qp(1, 1, 1, 1, 513)},
		{"max_send_wr = 2^31", try_qp(0x80000000U, 1, 1, 1, 0)},
	};
	for (auto &x : refused)
		chk.expect(x.err == EINVAL, strf("QP with %s refused with EINVAL", x.what),
			   x.err ? std::strerror(x.err) : "it was created");
	ibv_cq *bigcq = ibv_create_cq(c.A->ctx.get(), d.max_cqe + 1, nullptr, nullptr, 0);
	int e = bigcq ? 0 : errno;
	if (bigcq)
		ibv_destroy_cq(bigcq);
	chk.expect(e == EINVAL, "CQ of max_cqe + 1 entries refused with EINVAL", e ? std::strerror(e) : "created");
	bigcq = ibv_create_cq(c.A->ctx.get(), d.max_cqe, nullptr, nullptr, 0);
	chk.expect(bigcq != nullptr, "CQ of max_cqe entries is created");
	if (bigcq)
		ibv_destroy_cq(bigcq);
	auto try_srq = [&](uint32_t wr, uint32_t sge) {
		ibv_srq_init_attr sa{};
		sa.attr.max_wr = wr;
		sa.attr.max_sge = sge;
		ibv_srq *s = ibv_create_srq(c.A->pd.get(), &sa);
		int err = s ? 0 : errno;
		if (s)
			ibv_destroy_srq(s);
		return err;
	};
	e = try_srq(static_cast<uint32_t>(d.max_srq_wr) + 1, 1);
	chk.expect(e == EINVAL, "SRQ of max_srq_wr + 1 refused with EINVAL", e ? std::strerror(e) : "created");
	e = try_srq(1, static_cast<uint32_t>(d.max_srq_sge) + 1);
	chk.expect(e == EINVAL, "SRQ of max_srq_sge + 1 refused with EINVAL", e ? std::strerror(e) : "created");
	// An MR beyond the device's max_mr_size: refused before anything is pinned.
	ibv_mr *mr = ibv_reg_mr(c.A->pd.get(), c.abuf.data(), d.max_mr_size + 4096, IBV_ACCESS_LOCAL_WRITE);
	e = mr ? 0 : errno;
	if (mr)
		ibv_dereg_mr(mr);
	chk.expect(e != 0, strf("MR larger than max_mr_size refused (%s)", e ? std::strerror(e) : "registered"));
}

// Create objects until the device's advertised maximum: the next one must
// fail with ENOMEM, all of them must go away, and one can be created again.
// `others` is how many the device may already hold (this program's own, the
// kernel's for its MAD QP): the count created is within [max - others, max].
template <typename T>
void to_the_max(Checker &chk, const char *what, int max, int others, const std::function<T *()> &create,
		const std::function<int(T *)> &destroy, const std::function<void(T *)> &use = {})
{
	std::vector<T *> v;
	v.reserve(static_cast<size_t>(max) + 1);
	auto t0 = Clock::now();
	int err = 0;
	for (int i = 0; i <= max; i++) {
		errno = 0;
		T *x = create();
		if (!x) {
			err = errno;
			break;
		}
		v.push_back(x);
	}
	const int n = static_cast<int>(v.size());
	chk.expect(n <= max && n >= max - others && err == ENOMEM,
		   strf("%d %s created (device max %d, up to %d held before), the next fails with ENOMEM (%.1f s)", n,
			what, max, others, secs_since(t0)),
		   strf("then %s", err ? std::strerror(err) : "no failure"));
	if (use && !v.empty())
		use(v.back());
	t0 = Clock::now();
	int bad = 0;
	for (auto *x : v)
		bad += destroy(x) != 0;
	chk.expect(!bad, strf("all destroyed (%.1f s)", secs_since(t0)), strf("%d failures", bad));
	T *x = create();
	chk.expect(x != nullptr, strf("one can be created again afterwards (%s)", x ? "ok" : std::strerror(errno)));
	if (x)
		destroy(x);
}

void case_srq_max(Ctx &c, Checker &chk)
{
	if (!c.o.to_max) {
		chk.note("--no-max: skipped");
		return;
	}
	to_the_max<ibv_srq>(
		chk, "SRQs", c.A->dattr.max_srq, 0,
		[&]() -> ibv_srq * {
			ibv_srq_init_attr sa{};
			sa.attr.max_wr = 1;
			sa.attr.max_sge = 1;
			return ibv_create_srq(c.A->pd.get(), &sa);
		},
		[](ibv_srq *s) { return ibv_destroy_srq(s); },
		[&](ibv_srq *s) {
			// Still usable at the limit.
			ibv_sge sg{c.abuf.addr(), 64, c.amr->lkey};
			ibv_recv_wr w{}, *bad = nullptr;
			w.sg_list = &sg;
			w.num_sge = 1;
			chk.expect(ibv_post_srq_recv(s, &w, &bad) == 0, "the last SRQ accepts a receive");
		});
}

void case_pd_max(Ctx &c, Checker &chk)
{
	if (!c.o.to_max) {
		chk.note("--no-max: skipped");
		return;
	}
	to_the_max<ibv_pd>(
		chk, "PDs", c.A->dattr.max_pd, 16, [&] { return ibv_alloc_pd(c.A->ctx.get()); },
		[](ibv_pd *p) { return ibv_dealloc_pd(p); });
}

// Every CQ is a mapping: the process's vm.max_map_count must allow max_cq
// of them (the selftest raises it in the guest).
void case_cq_max(Ctx &c, Checker &chk)
{
	if (!c.o.to_max) {
		chk.note("--no-max: skipped");
		return;
	}
	long maps = 0;
	std::ifstream("/proc/sys/vm/max_map_count") >> maps;
	if (maps < c.A->dattr.max_cq + 4096L) {
		chk.note(strf("vm.max_map_count %ld is too low for %d mapped CQs: skipped", maps, c.A->dattr.max_cq));
		return;
	}
	to_the_max<ibv_cq>(
		chk, "CQs", c.A->dattr.max_cq, 16, [&] { return ibv_create_cq(c.A->ctx.get(), 1, nullptr, nullptr, 0); },
		[](ibv_cq *q) { return ibv_destroy_cq(q); });
}

// max_mr MRs, all on one page (each pins it once more).
void case_mr_max(Ctx &c, Checker &chk)
{
	if (!c.o.to_max) {
		chk.note("--no-max: skipped");
		return;
	}
	Buffer page(4096);
	std::memset(page.data(), 1, 4096);
	to_the_max<ibv_mr>(
		chk, "MRs (of one page)", c.A->dattr.max_mr, 16,
		[&] { return ibv_reg_mr(c.A->pd.get(), page.data(), 4096, IBV_ACCESS_LOCAL_WRITE); },
		[](ibv_mr *m) { return ibv_dereg_mr(m); });
}

// RLIMIT_MEMLOCK as the kernel (ib_umem_get) enforces it: only without
// CAP_IPC_LOCK. In a forked child that drops the capability; the parent
// must not have opened a device yet. Returns the child's exit status.
int memlock_child(const Options &o)
{
	std::fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		throw_errno("fork", errno);
	if (pid) {
		int status = 0;
		waitpid(pid, &status, 0);
		return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
	}
	Checker chk;
	try {
		auto ep = open_endpoint("M", o.c.a, o.c.ipv6, false, 16);
		const size_t lim = 256 * 1024;
		Buffer big(4 << 20);
		rlimit rl{lim, lim};
		if (setrlimit(RLIMIT_MEMLOCK, &rl))
			throw_errno("setrlimit(RLIMIT_MEMLOCK)", errno);
		// With CAP_IPC_LOCK (root) the limit does not apply.
		__user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
		__user_cap_data_struct cap[2]{};
		if (syscall(SYS_capget, &hdr, cap))
			throw_errno("capget", errno);
		bool had = cap[0].effective & (1U << CAP_IPC_LOCK);
		if (had) {
			ibv_mr *mr = ibv_reg_mr(ep->pd.get(), big.data(), 1 << 20, IBV_ACCESS_LOCAL_WRITE);
			chk.expect(mr != nullptr, "with CAP_IPC_LOCK, a 1 MiB MR over a 256 KiB RLIMIT_MEMLOCK registers");
			if (mr)
				ibv_dereg_mr(mr);
			cap[0].effective &= ~(1U << CAP_IPC_LOCK);
			cap[0].permitted &= ~(1U << CAP_IPC_LOCK);
			cap[0].inheritable &= ~(1U << CAP_IPC_LOCK);
			if (syscall(SYS_capset, &hdr, cap))
				throw_errno("capset (dropping CAP_IPC_LOCK)", errno);
		}
		chk.note("CAP_IPC_LOCK dropped, RLIMIT_MEMLOCK 256 KiB");
		errno = 0;
		ibv_mr *m1 = ibv_reg_mr(ep->pd.get(), big.data(), 1 << 20, IBV_ACCESS_LOCAL_WRITE);
		int e = m1 ? 0 : errno;
		chk.expect(!m1 && e == ENOMEM, "a 1 MiB MR fails with ENOMEM", m1 ? "registered" : std::strerror(e));
		if (m1)
			ibv_dereg_mr(m1);
		ibv_mr *m2 = ibv_reg_mr(ep->pd.get(), big.data(), 4096, IBV_ACCESS_LOCAL_WRITE);
		chk.expect(m2 != nullptr, "a 4 KiB MR registers", std::strerror(errno));
		ibv_mr *m3 = ibv_reg_mr(ep->pd.get(), big.data() + (1 << 20), lim, IBV_ACCESS_LOCAL_WRITE);
		e = m3 ? 0 : errno;
		chk.expect(!m3 && e == ENOMEM, "256 KiB more (over the limit with the 4 KiB one) fails with ENOMEM",
			   m3 ? "registered" : std::strerror(e));
		if (m3)
			ibv_dereg_mr(m3);
		if (m2)
			ibv_dereg_mr(m2);
		m3 = ibv_reg_mr(ep->pd.get(), big.data() + (1 << 20), lim, IBV_ACCESS_LOCAL_WRITE);
		chk.expect(m3 != nullptr, "after deregistering it, exactly 256 KiB registers", std::strerror(errno));
		// Rings are not pinned user memory: QPs and CQs still work.
		ep->create_qp(QpCaps{});
		chk.pass("a QP and its CQs are created under the limit");
		if (m3)
			ibv_dereg_mr(m3);
	} catch (const std::exception &ex) {
		chk.fail(ex.what());
	}
	std::fflush(stdout);
	_exit(chk.ok ? 0 : 1);
}

void case_qp_pairs(Ctx &c, Checker &chk)
{
	const int npairs = std::max(1, c.o.qps / 2);
	const int cqe = std::min(c.A->dattr.max_cqe, 2 * npairs + 16);
	CqPtr cqa(ibv_create_cq(c.A->ctx.get(), cqe, nullptr, nullptr, 0));
	CqPtr cqb(ibv_create_cq(c.B->ctx.get(), cqe, nullptr, nullptr, 0));
	if (!cqa || !cqb)
		throw_errno("ibv_create_cq", errno);
	ConnCfg cfg;
	cfg.send_wr = cfg.recv_wr = 1;
	cfg.send_sge = cfg.recv_sge = 1;
	cfg.inline_data = 0;
	cfg.rd_atomic = false;
	std::vector<QpPtr> qa, qb;
	std::vector<ibv_qp_cap> capa(npairs), capb(npairs);
	auto t0 = Clock::now();
	for (int i = 0; i < npairs; i++) {
		qa.push_back(create_qp(*c.A, cqa.get(), IBV_QPT_RC, cfg, nullptr, &capa[i]));
		qb.push_back(create_qp(*c.B, cqb.get(), IBV_QPT_RC, cfg, nullptr, &capb[i]));
	}
	double tcreate = secs_since(t0);
	t0 = Clock::now();
	for (int i = 0; i < npairs; i++) {
		connect_one(c, *c.A, qa[i].get(), IBV_QPT_RC, *c.B, qb[i]->qp_num, 0x10, 0x20, cfg);
		connect_one(c, *c.B, qb[i].get(), IBV_QPT_RC, *c.A, qa[i]->qp_num, 0x20, 0x10, cfg);
	}
	double tconn = secs_since(t0);
	chk.pass(strf("%d QPs created (%.1f s) and connected in %d pairs (%.1f s)", 2 * npairs, tcreate, npairs, tconn));
	// Each QP receives one message from its partner and sends one.
	const uint32_t len = 64;
	uint8_t *ra = c.abuf.data(), *rb = c.bbuf.data();
	std::memset(ra, 0, kScratch / 2);
	std::memset(rb, 0, kScratch / 2);
	uint8_t *sa = c.abuf.data() + kScratch / 2, *sb = c.bbuf.data() + kScratch / 2;
	t0 = Clock::now();
	bool post_ok = true;
	for (int i = 0; i < npairs; i++) {
		size_t off = static_cast<size_t>(i) * len;
		fill_stream(sa + off, len, 0xa0000 + static_cast<uint64_t>(i), 0);
		fill_stream(sb + off, len, 0xb0000 + static_cast<uint64_t>(i), 0);
		for (int side = 0; side < 2; side++) {
			ibv_qp *rq = side ? qb[i].get() : qa[i].get();
			ibv_sge s{(side ? c.bbuf.addr() : c.abuf.addr()) + off, len, side ? c.bmr->lkey : c.amr->lkey};
			ibv_recv_wr w{}, *bad = nullptr;
			w.wr_id = static_cast<uint64_t>(i);
			w.sg_list = &s;
			w.num_sge = 1;
			post_ok &= ibv_post_recv(rq, &w, &bad) == 0;
		}
	}
	for (int i = 0; i < npairs; i++) {
		size_t off = static_cast<size_t>(i) * len;
		for (int side = 0; side < 2; side++) {
			ibv_qp *sq = side ? qb[i].get() : qa[i].get();
			ibv_sge s{(side ? c.bbuf.addr() : c.abuf.addr()) + kScratch / 2 + off, len,
				  side ? c.bmr->lkey : c.amr->lkey};
			ibv_send_wr w{}, *bad = nullptr;
			w.wr_id = static_cast<uint64_t>(i);
			w.sg_list = &s;
			w.num_sge = 1;
			w.opcode = IBV_WR_SEND;
			w.send_flags = IBV_SEND_SIGNALED;
			post_ok &= ibv_post_send(sq, &w, &bad) == 0;
		}
	}
	chk.expect(post_ok, "every QP posted a receive and a SEND");
	auto ga = poll_n(cqa.get(), 2 * static_cast<size_t>(npairs), 120s);
	auto gb = poll_n(cqb.get(), 2 * static_cast<size_t>(npairs), 120s);
	int bad = 0;
	for (auto *v : {&ga, &gb})
		for (auto &w : *v)
			bad += w.status != IBV_WC_SUCCESS;
	int data_bad = 0;
	for (int i = 0; i < npairs; i++) {
		size_t off = static_cast<size_t>(i) * len;
		data_bad += check_stream(rb + off, len, 0xa0000 + static_cast<uint64_t>(i), 0) != len;
		data_bad += check_stream(ra + off, len, 0xb0000 + static_cast<uint64_t>(i), 0) != len;
	}
	chk.expect(ga.size() == 2 * static_cast<size_t>(npairs) && gb.size() == ga.size() && !bad && !data_bad,
		   strf("%d SENDs, one per QP, all delivered intact (%.1f s)", 2 * npairs, secs_since(t0)),
		   strf("A %zu, B %zu completions, %d errors, %d corrupt messages", ga.size(), gb.size(), bad, data_bad));
	// Destroyed from 8 threads at once (each destroy waits for an RCU grace
	// period in the kernel; one after the other that is slow).
	t0 = Clock::now();
	std::vector<std::thread> th;
	for (size_t t = 0; t < 8; t++)
		th.emplace_back([&, t] {
			for (size_t i = t; i < qa.size(); i += 8) {
				qa[i].reset();
				qb[i].reset();
			}
		});
	for (auto &x : th)
		x.join();
	chk.pass(strf("all destroyed, from 8 threads (%.1f s)", secs_since(t0)));
}

void case_mr_10k(Ctx &c, Checker &chk)
{
	const int n = c.o.mrs;
	const size_t page = 4096;
	Buffer big(static_cast<size_t>(n) * page);
	std::memset(big.data(), 0, big.size());
	std::vector<MrPtr> mrs;
	mrs.reserve(static_cast<size_t>(n));
	auto t0 = Clock::now();
	for (int i = 0; i < n; i++)
		mrs.push_back(reg_mr(c.B->pd.get(), big.data() + static_cast<size_t>(i) * page, page,
				     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
	chk.pass(strf("%d MRs registered (%.1f s)", n, secs_since(t0)));
	ConnCfg cfg;
	cfg.send_wr = 64;
	cfg.send_sge = 1;
	auto k = make_conn(c, IBV_QPT_RC, cfg);
	const uint32_t len = 64;
	t0 = Clock::now();
	int done = 0, posted = 0, bad = 0;
	const int depth = 32;
	while (done < n && !bad) {
		while (posted < n && posted - done < depth) {
			int i = posted;
			// Source slot i % 4096: its previous WRITE (i - 4096) completed long ago.
			fill_stream(c.abuf.data() + static_cast<size_t>(i % 4096) * len, len,
				    0xc0000 + static_cast<uint64_t>(i), 0);
			size_t off = (static_cast<size_t>(i) * 64) % (page - len);
			ibv_sge s{c.abuf.addr() + static_cast<size_t>(i % 4096) * len, len, c.amr->lkey};
			ibv_send_wr w{}, *b = nullptr;
			w.wr_id = static_cast<uint64_t>(i);
			w.sg_list = &s;
			w.num_sge = 1;
			w.opcode = IBV_WR_RDMA_WRITE;
			w.send_flags = IBV_SEND_SIGNALED;
			w.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(mrs[static_cast<size_t>(i)]->addr) + off;
			w.wr.rdma.rkey = mrs[static_cast<size_t>(i)]->rkey;
			if (ibv_post_send(k->a.get(), &w, &b)) {
				bad++;
				break;
			}
			posted++;
		}
		auto got = poll_n(k->acq.get(), 1, 20s);
		if (got.empty() || got[0].status != IBV_WC_SUCCESS) {
			bad++;
			chk.fail("WRITE completion: " + wcs_str(got));
			break;
		}
		done++;
	}
	int data_bad = 0;
	for (int i = 0; i < n && !bad; i++) {
		size_t off = (static_cast<size_t>(i) * 64) % (page - len);
		data_bad += check_stream(big.data() + static_cast<size_t>(i) * page + off, len,
					 0xc0000 + static_cast<uint64_t>(i), 0) != len;
	}
	chk.expect(!bad && !data_bad, strf("one RDMA WRITE into each of the %d MRs, each landed where its R_Key says "
					  "(%.1f s)",
					  n, secs_since(t0)),
		   strf("%d corrupt", data_bad));
	uint32_t old_rkey = mrs[0]->rkey;
	uint64_t old_addr = reinterpret_cast<uintptr_t>(mrs[0]->addr);
	t0 = Clock::now();
	mrs.clear();
	chk.pass(strf("all %d deregistered (%.1f s)", n, secs_since(t0)));
	// A WRITE through a deregistered R_Key is refused.
	ibv_sge s{c.abuf.addr(), len, c.amr->lkey};
	ibv_send_wr w{}, *b = nullptr;
	w.sg_list = &s;
	w.num_sge = 1;
	w.opcode = IBV_WR_RDMA_WRITE;
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.rdma = {old_addr, old_rkey};
	std::memset(big.data(), 0, page);
	ibv_post_send(k->a.get(), &w, &b);
	auto got = poll_n(k->acq.get(), 1, 15s);
	chk.expect(got.size() == 1 && got[0].status == IBV_WC_REM_ACCESS_ERR &&
			   std::all_of(big.data(), big.data() + page, [](uint8_t x) { return x == 0; }),
		   "a WRITE through a deregistered R_Key fails with REM_ACCESS_ERR and writes nothing", wcs_str(got));
}

// --- the case table ------------------------------------------------------------------

struct Case {
	const char *name;
	const char *group; // "ring", "limits", "optin"
	const char *desc;
	void (*fn)(Ctx &, Checker &);
};

const Case kCases[] = {
	{"sq_index", "ring", "SQ producer index past the ring, 2^31 ahead, backwards, 0xffffffff", case_sq_index},
	{"sq_full_ring", "ring", "SQ producer exactly a ring ahead: each slot runs once; stale slots", case_sq_full_ring},
	{"bad_opcode", "ring", "invalid opcodes (RC) and opcodes the QP type forbids (UC, UD)", case_bad_opcode},
	{"huge_len", "ring", "SGE and inline lengths up to 4 GiB, 1 GiB WRITE/READ/SEND on small MRs", case_huge_len},
	{"too_many_sge", "ring", "send and receive WQEs with more SGEs than allowed", case_too_many_sge},
	{"foreign_keys", "ring", "L_Keys, R_Keys, AH number of another process; unregistered memory",
	 case_foreign_keys},
	{"mutate", "ring", "WQE rewritten by another thread while the kernel fetches and runs it", case_mutate},
	{"cq_consumer", "ring", "CQ consumer index garbage; CQ header garbage", case_cq_consumer},
	{"rq_index", "ring", "receive queue producer past the ring / backwards; huge receive SGE", case_rq_index},
	{"srq_ring", "ring", "SRQ producer past the ring; SRQ WQE with too many SGEs", case_srq_ring},
	{"hdr_garbage", "ring", "garbage in the SQ/RQ headers (geometry, flags, kernel-owned consumer)",
	 case_hdr_garbage},
	{"doorbell_flood", "ring", "thousands of doorbells on a healthy and on an errored QP", case_doorbell_flood},
	{"fuzz", "ring", "random WQEs, indices, CQ consumers and state changes (--seed, --fuzz-rounds)", case_fuzz},
	{"shadow_race", "optin",
	 "requester reading its shadow WQE while a flush + doorbell refetches it (opt-in: --case shadow_race)",
	 case_shadow_race},
	{"caps", "limits", "QP/CQ/SRQ/MR caps at and beyond the device limits", case_caps},
	{"srq_max", "limits", "create SRQs up to max_srq; the next fails with ENOMEM", case_srq_max},
	{"pd_max", "limits", "allocate PDs up to max_pd; the next fails with ENOMEM", case_pd_max},
	{"cq_max", "limits", "create CQs up to max_cq (needs vm.max_map_count above it)", case_cq_max},
	{"mr_max", "limits", "register MRs up to max_mr (one page each); the next fails with ENOMEM", case_mr_max},
	{"memlock", "limits", "RLIMIT_MEMLOCK without CAP_IPC_LOCK (forked child)", nullptr},
	{"qp_pairs", "limits", "--qps QPs (default 1000) connected in pairs, one SEND each", case_qp_pairs},
	{"mr_10k", "limits", "--mrs MRs (default 10000) as RDMA WRITE targets, then deregistered", case_mr_10k},
};

bool selected(const Options &o, const Case &k)
{
	if (!o.cases.empty())
		return std::find(o.cases.begin(), o.cases.end(), k.name) != o.cases.end();
	return k.group == o.group || (o.group == "all" && std::string(k.group) != "optin");
}

void usage(FILE *f)
{
	std::fprintf(f,
		     "usage: hostile_ring [options]\n"
		     "  --group ring|limits|all  which cases (default ring)\n"
		     "  --case NAME           run only this case (repeatable; --list)\n"
		     "  --list                list the cases\n"
		     "  --seed N              fuzz seed (default: time)\n"
		     "  --fuzz-rounds N       fuzz rounds (default 40)\n"
		     "  --mutate-iters N      iterations of the WQE mutation case (default 100)\n"
		     "  --race-seconds S      duration of the opt-in shadow_race case (default 30)\n"
		     "  --qps N               QPs for qp_pairs (default 1000)\n"
		     "  --mrs N               MRs for mr_10k (default 10000)\n"
		     "  --no-max              skip creating SRQs, PDs, CQs, MRs up to the device's max\n"
		     "  --no-victim           no second process (foreign_keys is skipped)\n"
		     "  --gentle              leave out the attacks that crashed kernels before the\n"
		     "                        shadow-WQE fixes (--known-bugs: run them, the default)\n"
		     "%s",
		     kCommonUsage);
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	o.seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
	enum { O_CASE = 256, O_LIST, O_GROUP, O_SEED, O_FUZZ, O_MUT, O_RACE, O_QPS, O_MRS, O_NOSRQ, O_NOVIC, O_BUGS, O_GENTLE };
	auto longopts = common_longopts({{"case", required_argument, nullptr, O_CASE},
					 {"list", no_argument, nullptr, O_LIST},
					 {"group", required_argument, nullptr, O_GROUP},
					 {"seed", required_argument, nullptr, O_SEED},
					 {"fuzz-rounds", required_argument, nullptr, O_FUZZ},
					 {"mutate-iters", required_argument, nullptr, O_MUT},
					 {"race-seconds", required_argument, nullptr, O_RACE},
					 {"qps", required_argument, nullptr, O_QPS},
					 {"mrs", required_argument, nullptr, O_MRS},
					 {"no-max", no_argument, nullptr, O_NOSRQ},
					 {"no-victim", no_argument, nullptr, O_NOVIC},
					 {"known-bugs", no_argument, nullptr, O_BUGS},
					 {"gentle", no_argument, nullptr, O_GENTLE},
					 {"help", no_argument, nullptr, 'h'},
					 {nullptr, 0, nullptr, 0}});
	try {
		int ch;
		while ((ch = getopt_long(argc, argv, "h", longopts.data(), nullptr)) != -1) {
			if (parse_common_opt(o.c, ch, optarg))
				continue;
			switch (ch) {
			case O_CASE: o.cases.push_back(optarg); break;
			case O_LIST: o.list = true; break;
			case O_GROUP: o.group = optarg; break;
			case O_SEED: o.seed = std::stoull(optarg, nullptr, 0); break;
			case O_FUZZ: o.fuzz_rounds = std::stoi(optarg); break;
			case O_MUT: o.mutate_iters = std::stoi(optarg); break;
			case O_RACE: o.race_seconds = std::stod(optarg); break;
			case O_QPS: o.qps = std::stoi(optarg); break;
			case O_MRS: o.mrs = std::stoi(optarg); break;
			case O_NOSRQ: o.to_max = false; break;
			case O_NOVIC: o.victim = false; break;
			case O_BUGS: o.known_bugs = true; break;
			case O_GENTLE: o.known_bugs = false; break;
			case 'h': usage(stdout); return 0;
			default: usage(stderr); return 2;
			}
		}
	} catch (const std::exception &e) {
		std::fprintf(stderr, "hostile_ring: bad argument: %s\n", e.what());
		return 2;
	}
	if (optind != argc || (o.group != "ring" && o.group != "limits" && o.group != "all")) {
		usage(stderr);
		return 2;
	}
	if (o.list) {
		for (auto &k : kCases)
			std::printf("%-16s %-7s %s\n", k.name, k.group, k.desc);
		return 0;
	}
	if (!known_cases("hostile_ring", kCases, o.cases))
		return 2;
	if (o.c.b.name.empty())
		o.c.b.name = o.c.a.name;
	setvbuf(stdout, nullptr, _IOLBF, 0);
	std::printf("hostile_ring: seed %#" PRIx64 ", devices %s / %s\n", o.seed,
		    o.c.a.name.empty() ? "(first)" : o.c.a.name.c_str(),
		    o.c.b.name.empty() ? "(first)" : o.c.b.name.c_str());

	int passed = 0, failed = 0;
	std::vector<std::string> failures;
	auto verdict = [&](const char *name, bool ok, double secs) {
		std::printf("%s: %s (%.1f s)\n", ok ? "PASS" : "FAIL", name, secs);
		(ok ? passed : failed)++;
		if (!ok)
			failures.push_back(name);
	};

	// Forks come first, before this process opens any device.
	bool need_victim = false, need_ctx = false;
	for (auto &k : kCases) {
		if (!selected(o, k))
			continue;
		if (!k.fn) {
			std::printf("--- %s: %s\n", k.name, k.desc);
			auto t0 = Clock::now();
			int rc = memlock_child(o);
			verdict(k.name, rc == 0, secs_since(t0));
			continue;
		}
		need_ctx = true;
		need_victim |= std::string(k.group) != "limits";
	}
	if (!need_ctx)
		return failed ? 1 : 0;

	Victim victim;
	try {
		Ctx c(o);
		c.rng = Rng(o.seed);
		if (need_victim && o.victim) {
			victim.start(o);
			c.vic = victim.info;
			c.have_victim = true;
			std::printf("victim pid %d: MRs lkey %#x/%#x rkey %#x/%#x, AH %u\n", victim.pid, c.vic.lkey[0],
				    c.vic.lkey[1], c.vic.rkey[0], c.vic.rkey[1], c.vic.ah_num);
		}
		c.open();
		std::printf("A %s (gid %d), B %s (gid %d), path MTU %u\n", c.A->devname.c_str(), c.A->gid_index,
			    c.B->devname.c_str(), c.B->gid_index, c.mtu_bytes);
		{
			Checker chk;
			if (!good_check(c, chk))
				throw Error("the well-behaved QP pair does not work before any attack");
		}
		for (auto &k : kCases) {
			if (!selected(o, k) || !k.fn)
				continue;
			std::printf("--- %s: %s\n", k.name, k.desc);
			Checker chk;
			auto t0 = Clock::now();
			try {
				k.fn(c, chk);
			} catch (const std::exception &e) {
				chk.fail(std::string("exception: ") + e.what());
			}
			if (std::string(k.group) != "limits") {
				good_check(c, chk);
				c.canaries_intact(chk);
			}
			verdict(k.name, chk.ok, secs_since(t0));
		}
		if (c.have_victim) {
			Checker chk;
			auto rep = victim.stop();
			if (!rep) {
				chk.fail("the victim process did not report");
			} else {
				chk.expect(rep->failures == 0 && rep->iters > 0,
					   strf("the other process's own traffic ran throughout: %" PRIu64
						" verified iterations",
						rep->iters),
					   rep->msg);
				chk.expect(rep->intact[0] && rep->intact[1],
					   "the other process's MRs (whose keys were used) are byte for byte unchanged",
					   strf("dev A MR %s, dev B MR %s", rep->intact[0] ? "intact" : "CHANGED",
						rep->intact[1] ? "intact" : "CHANGED"));
			}
			verdict("victim", chk.ok, 0);
		}
		c.alog.drain();
		c.blog.drain();
	} catch (const std::exception &e) {
		std::printf("hostile_ring: setup error: %s\n", e.what());
		return 2;
	}
	std::string fl;
	for (auto &f : failures)
		fl += " " + f;
	std::printf("hostile_ring: %d passed, %d failed%s%s\n", passed, failed, failed ? ":" : "", fl.c_str());
	return failed ? 1 : 0;
}
