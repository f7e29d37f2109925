// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Shared plumbing of the verbs tests: RAII wrappers for ibv objects, device
// and GID selection, RC QP creation and the INIT->RTR->RTS dance that
// connects two QPs of the same process to each other, completion waiting
// (busy polling or completion channels).
#pragma once

#include <getopt.h>
#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace vt {

// Setup failures (anything that is not a test verdict) are thrown as Error;
// main() prints them and exits 2.
struct Error : std::runtime_error {
	using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_errno(const std::string &what, int err);
std::string strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// --- RAII ----------------------------------------------------------------------

template <typename T, int (*Free)(T *)> struct IbvDeleter {
	void operator()(T *p) const noexcept
	{
		if (p && Free(p))
			std::fprintf(stderr, "warning: releasing an ibv object failed: %m\n");
	}
};
using ContextPtr = std::unique_ptr<ibv_context, IbvDeleter<ibv_context, ibv_close_device>>;
using PdPtr = std::unique_ptr<ibv_pd, IbvDeleter<ibv_pd, ibv_dealloc_pd>>;
using MrPtr = std::unique_ptr<ibv_mr, IbvDeleter<ibv_mr, ibv_dereg_mr>>;
using ChannelPtr =
	std::unique_ptr<ibv_comp_channel, IbvDeleter<ibv_comp_channel, ibv_destroy_comp_channel>>;
using QpPtr = std::unique_ptr<ibv_qp, IbvDeleter<ibv_qp, ibv_destroy_qp>>;

// A CQ, and the completion events it got that still need acking.
struct CqDeleter {
	void operator()(ibv_cq *cq) const noexcept;
};
using CqPtr = std::unique_ptr<ibv_cq, CqDeleter>;

// Page-aligned anonymous memory (mmap), released with munmap.
class Buffer {
public:
	Buffer() = default;
	explicit Buffer(size_t len);
	Buffer(Buffer &&o) noexcept : p_(o.p_), len_(o.len_) { o.p_ = nullptr, o.len_ = 0; }
	Buffer &operator=(Buffer &&o) noexcept;
	Buffer(const Buffer &) = delete;
	Buffer &operator=(const Buffer &) = delete;
	~Buffer();
	uint8_t *data() const { return p_; }
	size_t size() const { return len_; }
	uint64_t addr() const { return reinterpret_cast<uintptr_t>(p_); }

private:
	uint8_t *p_ = nullptr;
	size_t len_ = 0;
};

MrPtr reg_mr(ibv_pd *pd, void *addr, size_t len, unsigned access);

// --- devices, GIDs ---------------------------------------------------------------

struct DevSpec {
	std::string name;            // empty: the first device
	std::string gid = "auto";    // an index, or "auto"
};

// "auto": the first RoCE v2 GID of port 1 whose address family matches
// (IPv4-mapped for ipv4, otherwise a global IPv6 address, link-local as a
// last resort). Throws if there is none.
int pick_gid(ibv_context *ctx, uint8_t port, bool ipv6);
std::string gid_str(const ibv_gid &gid);
const char *mtu_str(ibv_mtu mtu);
ibv_mtu mtu_from_bytes(int bytes); // throws on a bad value
const char *qp_state_str(ibv_qp_state s);
const char *wc_opcode_str(ibv_wc_opcode op);

// --- endpoints ------------------------------------------------------------------

struct QpCaps {
	uint32_t max_send_wr = 64, max_recv_wr = 64;
	uint32_t max_send_sge = 16, max_recv_sge = 16;
	uint32_t max_inline = 256;
	// Nonzero: create the QP with ibv_create_qp_ex and these
	// IBV_QP_EX_WITH_* flags (ibv_qp_to_qp_ex then works on it).
	uint64_t send_ops_flags = 0;
};

// One side: a device context (its own, even when both sides use the same
// device), PD, CQs (send and receive separate, on one completion channel
// with --use-event) and one RC QP.
struct Endpoint {
	std::string label; // "A", "B"
	std::string devname;
	ContextPtr ctx;
	ibv_device_attr dattr{};
	ibv_port_attr pattr{};
	uint8_t port = 1;
	int gid_index = 0;
	ibv_gid gid{};
	PdPtr pd;
	ChannelPtr chan;
	CqPtr scq, rcq;
	QpPtr qp;
	ibv_qp_cap cap{};
	bool use_event = false;

	uint32_t qpn() const { return qp->qp_num; }
	// (Re)create the QP (and nothing else) with caps clamped to the device.
	void create_qp(const QpCaps &want);
	// One more QP on this endpoint's CQs and PD (or on_pd, another PD of
	// ctx), leaving qp alone; its actual caps go to *out if given.
	QpPtr new_qp(const QpCaps &want, ibv_qp_cap *out = nullptr, ibv_pd *on_pd = nullptr) const;
};

std::unique_ptr<Endpoint> open_endpoint(const std::string &label, const DevSpec &spec, bool ipv6,
					bool use_event, int cqe);

struct ConnParams {
	ibv_mtu mtu = IBV_MTU_1024;
	uint8_t timeout = 14, retry_cnt = 7, rnr_retry = 7, min_rnr_timer = 12;
	uint8_t max_rd_atomic = 16; // clamped to the devices' limits
	unsigned access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	uint32_t psn = 0; // this side's send PSN
	uint32_t qkey = 0x11111111; // a UD QP's
};

// The address of peer's port from ep (GID by index, hop limit 64).
ibv_ah_attr ah_attr_to(const Endpoint &ep, const Endpoint &peer);

// Bring ep's QP to RTS, connected to peer (QPN, GID of peer, peer_psn).
// By the QP's type: RC with everything in mine; UC with its access flags,
// path MTU and PSNs; UD with its Q_Key only (peer and peer_psn unused).
void connect_qp(Endpoint &ep, const Endpoint &peer, const ConnParams &mine, uint32_t peer_psn);
// The same for another QP of ep (Endpoint::new_qp), connected to QP number
// peer_qpn of peer.
void connect_qp(Endpoint &ep, ibv_qp *qp, const Endpoint &peer, uint32_t peer_qpn, const ConnParams &mine,
		uint32_t peer_psn);
// Both directions: a <-> b.
void connect_pair(Endpoint &a, Endpoint &b, const ConnParams &pa, const ConnParams &pb);
// Path MTU: min of both ports' active_mtu, or the --mtu value if nonzero.
ibv_mtu pick_mtu(const Endpoint &a, const Endpoint &b, int mtu_bytes);

ibv_qp_state qp_state(ibv_qp *qp);
void modify_state(ibv_qp *qp, ibv_qp_state st);

// --- the options every program takes -------------------------------------------

// --dev-a NAME --dev-b NAME --gid-a N|auto --gid-b N|auto --ipv6 --mtu BYTES
// --use-event, for programs that parse them with common_longopts() and
// parse_common_opt() (every program but rc_remote, which has one device).
struct CommonOptions {
	DevSpec a, b;
	bool ipv6 = false;
	int mtu = 0; // 0: the smaller active_mtu
	bool use_event = false;
};
// getopt_long values of the common options: kCommonOptFirst and up (keep a
// program's own option values below it).
constexpr int kCommonOptFirst = 0x1000;
// The common entries followed by extra (which must end with the all-zero
// terminator).
std::vector<option> common_longopts(std::initializer_list<option> extra);
// If c (a getopt_long result) is a common option, apply it (arg: optarg)
// and return true. Throws on a bad value.
bool parse_common_opt(CommonOptions &o, int c, const char *arg);
// Their usage text, two-space indented lines.
extern const char *const kCommonUsage;

// A program's command line, parsed with getopt_long: the common options into
// o, -h/--help (usage(stdout), exit status 0), and the program's own options
// (extra, without --help and the terminator; shortopts has all its short
// options, h included), each handed to own(c, optarg), which returns false
// for one it does not know. An unknown option or an operand prints
// usage(stderr), exit status 2. Then --dev-b defaults to --dev-a. Returns -1
// when the program goes on, else its exit status. A bad value throws (from
// own or parse_common_opt); the caller says so.
int parse_args(int argc, char **argv, CommonOptions &o, const char *shortopts, std::initializer_list<option> extra,
	       void (*usage)(FILE *), const std::function<bool(int c, const char *arg)> &own);
// The same for program prog, saying a bad value itself: "PROG: bad
// argument: WHAT" on stderr, exit status 2 (it throws nothing).
int parse_args(const char *prog, int argc, char **argv, CommonOptions &o, const char *shortopts,
	       std::initializer_list<option> extra, void (*usage)(FILE *),
	       const std::function<bool(int c, const char *arg)> &own);

// A size: a number (decimal, 0x hex) with an optional binary suffix K, M or
// G (also k, m, g, KiB, MiB, GiB). Throws Error on anything else, or if it
// overflows.
size_t parse_size(const char *s);
// A comma-separated list of names[] (any case), as a mask: bit i for
// names[i]. Throws Error on an empty or unknown entry; the message names
// what a name is and lists the ones allowed.
unsigned parse_name_list(const std::string &s, const char *const *names, size_t n, const char *what);
template <size_t N>
unsigned parse_name_list(const std::string &s, const char *const (&names)[N], const char *what)
{
	static_assert(N <= 32, "a mask of unsigned bits");
	return parse_name_list(s, names, N, what);
}

// --- programs whose checks are a table of named cases ----------------------------

// Case has .name and .desc. --list prints the table (name padded to width).
template <typename Case, size_t N> void print_cases(const Case (&cases)[N], int width)
{
	for (const Case &k : cases)
		std::printf("%-*s %s\n", width, k.name, k.desc);
}
// --case NAME...: the case of that name, or nullptr.
template <typename Case, size_t N> const Case *find_case(const Case (&cases)[N], const std::string &name)
{
	for (const Case &k : cases)
		if (name == k.name)
			return &k;
	return nullptr;
}
// Every name given is a case's; else prints "PROG: no case 'NAME' (--list)"
// for the first that is not and returns false.
template <typename Case, size_t N>
bool known_cases(const char *prog, const Case (&cases)[N], const std::vector<std::string> &names)
{
	for (const std::string &n : names)
		if (!find_case(cases, n)) {
			std::fprintf(stderr, "%s: no case '%s' (--list)\n", prog, n.c_str());
			return false;
		}
	return true;
}

// --list (list is set): prints the table (name padded to width), exit status
// 0; a name in names that is no case's: says so, exit status 2. Else -1: the
// program goes on.
template <typename Case, size_t N>
int list_or_check_cases(const char *prog, const Case (&cases)[N], int width, bool list,
			const std::vector<std::string> &names)
{
	if (list) {
		print_cases(cases, width);
		return 0;
	}
	return known_cases(prog, cases, names) ? -1 : 2;
}
// Whether --case NAME... (names) selects case k: the cases named, or with
// none named every case but those marked only_by_name (when Case has that
// field: they need a set-up the caller makes).
template <typename Case> bool case_selected(const Case &k, const std::vector<std::string> &names)
{
	if (names.empty()) {
		if constexpr (requires { k.only_by_name; })
			return !k.only_by_name;
		return true;
	}
	for (const std::string &n : names)
		if (n == k.name)
			return true;
	return false;
}
struct CaseCounts {
	int passed = 0, failed = 0;
};
// The selected cases in table order: "--- NAME: DESC", then run(k), which runs
// the case, prints its verdict line and returns whether it passed.
template <typename Case, size_t N, typename Run>
CaseCounts run_cases(const Case (&cases)[N], const std::vector<std::string> &names, Run run)
{
	CaseCounts n;
	for (const Case &k : cases) {
		if (!case_selected(k, names))
			continue;
		std::printf("--- %s: %s\n", k.name, k.desc);
		std::fflush(stdout);
		bool ok = run(k);
		std::fflush(stdout);
		(ok ? n.passed : n.failed)++;
	}
	return n;
}

// A signaled send WR of the one SGE sge (opcode op, id wr_id), the rest zero.
inline ibv_send_wr signaled_wr(uint64_t wr_id, ibv_sge &sge, ibv_wr_opcode op)
{
	ibv_send_wr w{};
	w.wr_id = wr_id;
	w.sg_list = &sge;
	w.num_sge = 1;
	w.opcode = op;
	w.send_flags = IBV_SEND_SIGNALED;
	return w;
}

// --- completions ----------------------------------------------------------------

// Poll up to max completions from any of cqs (all of one process, possibly of
// several endpoints). With events, blocks on the channels of the endpoints
// (arming the CQs first) for up to timeout; returns what arrived (possibly
// nothing). Throws when an armed CQ had completions but no event came (a lost
// completion event) and strict_events is set.
struct CqWaiter {
	struct Entry {
		ibv_cq *cq;
		ibv_comp_channel *chan; // null: polled only
	};
	std::vector<Entry> cqs;
	bool use_event = false;
	uint64_t events = 0;        // completion events received
	uint64_t missed_events = 0; // armed CQ had work, no event in time
	// Returns the number of completions stored in wc (each tagged with the
	// index of its CQ in which[]).
	int wait(ibv_wc *wc, int *which, int max, std::chrono::milliseconds timeout);

private:
	int poll_all(ibv_wc *wc, int *which, int max);
};

// Collect exactly n completions from cq (busy or event waiting), failing
// after timeout. Returns what arrived.
std::vector<ibv_wc> collect(Endpoint &ep, ibv_cq *cq, size_t n, std::chrono::milliseconds timeout);

// What is wrong with wc as the successful receive completion, on QP qpn, of
// a message of len bytes that should complete with opcode want and, if imm,
// carry immediate data imm (host order): the first mismatch (its qp_num,
// opcode, byte_len, IBV_WC_WITH_IMM flag or imm_data), "" if none.
std::string recv_wc_mismatch(const ibv_wc &wc, uint32_t qpn, ibv_wc_opcode want, size_t len, bool imm,
			     uint32_t imm_data);

// --- misc ----------------------------------------------------------------------

// main()'s frame for a program that throws: body's exit status, or for an
// Error it throws "PROG: WHAT" on stderr and exit status on_error(e) (2
// without on_error), for any other exception "PROG: bad argument: WHAT"
// and exit status 2.
int guarded_main(const char *prog, const std::function<int()> &body,
		 const std::function<int(const Error &)> &on_error = {});

using Clock = std::chrono::steady_clock;
inline double secs_since(Clock::time_point t)
{
	return std::chrono::duration<double>(Clock::now() - t).count();
}
// A seed when none was given (printed, to replay the run): from the clock.
inline uint64_t clock_seed()
{
	return static_cast<uint64_t>(Clock::now().time_since_epoch().count()) % 1000000007ULL;
}

// splitmix64: the pattern and the random generator of the tests.
inline uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

class Rng {
public:
	explicit Rng(uint64_t seed) : s_(seed) {}
	uint64_t next() { return mix64(s_++ * 0x2545f4914f6cdd1dULL); }
	// Uniform in [lo, hi] (inclusive).
	uint64_t range(uint64_t lo, uint64_t hi)
	{
		if (hi <= lo)
			return lo;
		uint64_t span = hi - lo + 1;
		return span == 0 ? next() : lo + next() % span;
	}
	bool chance(unsigned percent) { return next() % 100 < percent; }

private:
	uint64_t s_;
};

// --- verdicts ---------------------------------------------------------------------

// A verdict collector for one case: each check prints "    ok: WHAT" or
// "    FAIL: WHAT (DETAIL)"; ok stays true while nothing failed.
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

// Run the cases names (in that order), or only those named in only (each
// must be one of names, else this throws): "--- NAME", run(name, checker),
// then "PASS NAME" or "FAIL NAME" as the checker found. Returns how many
// failed.
int run_named_cases(const std::vector<const char *> &names, const std::vector<std::string> &only,
		    const std::function<void(const std::string &name, Checker &c)> &run);

} // namespace vt
