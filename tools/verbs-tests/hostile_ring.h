// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// hostile_ring: shared declarations of its files (hostile_ring.cpp says what
// the program does and holds the case table): options, verdicts, the victim
// process, the mapped rings as this program writes them, the attacker's
// connections, the expectations the cases share, and the cases.
//
//   hostile_ring.cpp          the case table, options, main
//   hostile_ring_victim.cpp   the victim process
//   hostile_ring_env.cpp      ring access, Ctx/Conn setup, common expectations
//   hostile_ring_sq.cpp       send queue indices, WQE contents, mutated WQEs
//   hostile_ring_queues.cpp   CQs, RQs, SRQs, ring headers, doorbell floods
//   hostile_ring_fuzz.cpp     the fuzz, the opt-in shadow race
//   hostile_ring_limits.cpp   the limits group
#pragma once

#include "common.h"
#include "pattern.h"

// The provider's private headers (user/src; include directory set for this
// program only in CMakeLists.txt).
#include "cq.h"
#include "provider.h"
#include "qp.h"
#include "srq.h"

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace hr {

using vt::Checker;

// --- options --------------------------------------------------------------------

struct Options {
	vt::CommonOptions c;
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
constexpr uint32_t kQkey = 0x11111111;
constexpr unsigned kAllAccess =
	IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

// --- verdicts -------------------------------------------------------------------

inline std::string st(ibv_wc_status s) { return ibv_wc_status_str(s); }

// Wait for n completions on cq for up to timeout.
std::vector<ibv_wc> poll_n(ibv_cq *cq, size_t n, std::chrono::milliseconds timeout);
// Everything cq reports within `window`.
std::vector<ibv_wc> poll_window(ibv_cq *cq, std::chrono::milliseconds window);

// --- victim process (hostile_ring_victim.cpp) -------------------------------------

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

// Another process (forked) that registers MRs on both devices, creates an
// AH, passes their keys and numbers over a pipe, runs verified RC traffic of
// its own until stop(), and then reports whether its MRs are unchanged.
struct Victim {
	pid_t pid = -1;
	int info_fd = -1, cmd_fd = -1;
	VictimInfo info{};

	void start(const Options &o);
	// Stop its traffic and collect the report.
	std::optional<VictimReport> stop();
	~Victim();
};

// --- rings (hostile_ring_env.cpp) ---------------------------------------------------

// A mapped ring as this program sees it. Geometry is read once from the
// kernel-written header (and checked), then cached: the program writes
// garbage into the header itself.
struct Ring {
	sroce_queue_hdr *hdr = nullptr;
	uint8_t *data = nullptr;
	uint32_t n = 0, shift = 0;
	size_t len = 0;

	static Ring attach(const sroce::mapping &m, const char *what, uint32_t min_slots, size_t min_slot);

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

Ring sq_ring(ibv_qp *qp, const ibv_qp_cap &cap);
Ring rq_ring(ibv_qp *qp, const ibv_qp_cap &cap);
Ring cq_ring(ibv_cq *cq);
Ring srq_ring(ibv_srq *srq, uint32_t max_wr, uint32_t max_sge);

// The provider's doorbell: an empty POST_SEND command on the QP.
int doorbell(ibv_qp *qp);

// A send WQE as it goes into a slot: the header, then SGEs or inline bytes.
struct Wqe {
	sroce_send_wqe h{};
	std::vector<sroce_sge> sge;
	std::vector<uint8_t> inl;
};

// Write w into slot (at most one slot's worth: a num_sge too large for the
// slot is written as a header only).
void put_wqe(const Ring &r, uint32_t idx, const Wqe &w);
void put_recv(const Ring &r, uint32_t idx, uint64_t wr_id, uint32_t num_sge, const std::vector<sroce_sge> &sg);
Wqe wqe(uint8_t opcode, uint64_t wr_id, std::vector<sroce_sge> sg = {}, uint8_t flags = SROCE_SEND_SIGNALED);

// --- async events -----------------------------------------------------------------

struct AsyncLog {
	struct Ev {
		ibv_event_type type;
		uint32_t qpn;
		const void *obj; // the ibv_cq / ibv_srq / ibv_qp
	};
	ibv_context *ctx = nullptr;
	std::vector<Ev> evs;

	void init(ibv_context *c);
	void drain();
	bool has(ibv_event_type t, const void *obj);
	bool wait(ibv_event_type t, const void *obj, std::chrono::milliseconds limit);
	// Forget an object's events (before it is destroyed: its address may be reused).
	void forget(const void *obj);
	std::string of(const void *obj);
};

// --- the attacker's environment ---------------------------------------------------

struct Conn;

struct Ctx {
	const Options &o;
	std::unique_ptr<vt::Endpoint> A, B; // A: the attacking side, B: its peer
	AsyncLog alog, blog;
	ibv_mtu mtu = IBV_MTU_1024;
	uint32_t mtu_bytes = 1024;
	vt::Buffer abuf, bbuf, acan, bcan, araw;
	vt::MrPtr amr, bmr, acmr, bcmr;
	VictimInfo vic{};
	bool have_victim = false;
	vt::Rng rng{1};
	// The well-behaved pair of this process (A.good <-> B.good).
	std::unique_ptr<Conn> good;
	vt::Buffer gbuf_a, gbuf_b;
	vt::MrPtr gmr_a, gmr_b;
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
	vt::CqPtr acq, bcq;
	vt::QpPtr a, b;
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

void connect_one(Ctx &c, vt::Endpoint &me, ibv_qp *qp, ibv_qp_type t, const vt::Endpoint &peer, uint32_t peer_qpn,
		 uint32_t my_psn, uint32_t peer_psn, const ConnCfg &cfg);
vt::QpPtr create_qp(vt::Endpoint &ep, ibv_cq *cq, ibv_qp_type t, const ConnCfg &cfg, ibv_srq *srq, ibv_qp_cap *out);
std::unique_ptr<Conn> make_conn(Ctx &c, ibv_qp_type t, const ConnCfg &cfg = {});

// Valid SGEs into the scratch MRs.
sroce_sge a_sge(Ctx &c, size_t off, uint32_t len);
sroce_sge b_sge(Ctx &c, size_t off, uint32_t len);

// The well-behaved pair: SEND both ways, RDMA WRITE and READ, through the
// provider's normal post path; every byte checked.
bool good_check(Ctx &c, Checker &chk);

// --- common expectations -----------------------------------------------------------

std::string wcs_str(const std::vector<ibv_wc> &v);
void expect_state(Checker &chk, const char *who, ibv_qp *qp, ibv_qp_state want);
// The completion with wr_id in `got` must have status `want`.
void expect_wc(Checker &chk, const std::vector<ibv_wc> &got, uint64_t wr_id, ibv_wc_status want, const char *what);
void expect_quiet(Checker &chk, ibv_cq *cq, const char *what,
		  std::chrono::milliseconds window = std::chrono::milliseconds(300));
bool b_untouched(Ctx &c, size_t off, size_t len, uint8_t fill);

// One bad WQE (and a valid SEND behind it) on a fresh connection: the bad one
// completes with `want`, the one behind is flushed, A ends in `a_state`.
// B: posts two receives first; `b_err` says whether B must end in ERR (with
// event b_event) or stay RTS with nothing received.
struct BadOne {
	ibv_qp_type type = IBV_QPT_RC;
	ibv_wc_status want = IBV_WC_LOC_QP_OP_ERR;
	ibv_qp_state a_state = IBV_QPS_ERR;
	bool b_err = false;
	std::optional<ibv_event_type> b_event{};
	bool b_recvs = true;
	bool behind = true;
	std::function<void(Ctx &, Conn &)> before{}; // e.g. raw receives on B
	std::function<Wqe(Ctx &, Conn &)> make{};
};

// What a bad WQE that B's responder fails (its receive ring or receive
// WQE is the bad part) must give: REMOTE_OP_ERR at A, B in ERR with
// IBV_EVENT_QP_FATAL, no receives posted on B first, no SEND behind it.
inline BadOne responder_fatal()
{
	BadOne x;
	x.want = IBV_WC_REM_OP_ERR;
	x.b_err = true;
	x.b_event = IBV_EVENT_QP_FATAL;
	x.b_recvs = false;
	x.behind = false;
	return x;
}

void run_bad_one(Ctx &c, Checker &chk, const std::string &label, const BadOne &x, ConnCfg cfg = {});

// One row of a table of bad-WQE attacks: run_bad_one(label, x), then `after`
// (further checks). With `gentle` set (why), --gentle leaves the row out.
struct BadCase {
	const char *label = "";
	BadOne x{};
	const char *gentle = nullptr;
	std::function<void(Ctx &, Checker &)> after{};
};

void run_bad_cases(Ctx &c, Checker &chk, std::span<const BadCase> rows);

// Post `n` valid signaled SENDs (wr_id base+i, 64 bytes each from A scratch
// offset 64*i) and check they arrive.
bool warmup_sends(Ctx &c, Checker &chk, Conn &k, uint32_t n, uint64_t base);

// --- WQEs changed after the doorbell -------------------------------------------------

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
		auto t0 = vt::Clock::now();
		while (flips_.load() < f + 2 && vt::Clock::now() - t0 < std::chrono::milliseconds(100))
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
				std::this_thread::sleep_for(std::chrono::microseconds(50));
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

// --- the cases ----------------------------------------------------------------------

// hostile_ring_sq.cpp
void case_sq_index(Ctx &c, Checker &chk);
void case_sq_full_ring(Ctx &c, Checker &chk);
void case_bad_opcode(Ctx &c, Checker &chk);
void case_huge_len(Ctx &c, Checker &chk);
void case_too_many_sge(Ctx &c, Checker &chk);
void case_foreign_keys(Ctx &c, Checker &chk);
void case_mutate(Ctx &c, Checker &chk);
// hostile_ring_queues.cpp
void case_cq_consumer(Ctx &c, Checker &chk);
void case_rq_index(Ctx &c, Checker &chk);
void case_srq_ring(Ctx &c, Checker &chk);
void case_hdr_garbage(Ctx &c, Checker &chk);
void case_doorbell_flood(Ctx &c, Checker &chk);
void case_producer_spin(Ctx &c, Checker &chk);
// hostile_ring_fuzz.cpp
void case_fuzz(Ctx &c, Checker &chk);
void case_shadow_race(Ctx &c, Checker &chk);
// hostile_ring_limits.cpp
void case_caps(Ctx &c, Checker &chk);
void case_srq_max(Ctx &c, Checker &chk);
void case_pd_max(Ctx &c, Checker &chk);
void case_cq_max(Ctx &c, Checker &chk);
void case_mr_max(Ctx &c, Checker &chk);
void case_qp_pairs(Ctx &c, Checker &chk);
void case_mr_10k(Ctx &c, Checker &chk);
// RLIMIT_MEMLOCK as the kernel (ib_umem_get) enforces it: only without
// CAP_IPC_LOCK. In a forked child that drops the capability; the parent
// must not have opened a device yet. Returns the child's exit status.
int memlock_child(const Options &o);

} // namespace hr
