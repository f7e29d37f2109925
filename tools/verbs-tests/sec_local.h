// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// sec_local: security regression tests of sroce against a local,
// unprivileged process (see sec_local.cpp for the case table). Shared
// declarations of the case files.
#pragma once

#include "common.h"

#include <atomic>
#include <cstdarg>
#include <string>

namespace sl {

struct Options : vt::CommonOptions {
	double seconds = 0;          // 0: the case's default length
	unsigned min_ops = 0;        // 0: the case's default minimum of completed operations
	size_t read_min = 8u << 20;  // read_modify_race: READ sizes
	size_t read_max = 32u << 20;
	unsigned depth = 2;          // read_modify_race: READs in flight
	uint8_t ack_timeout = 16;    // QPs' local ACK timeout exponent
	std::string file;            // rereg_ro_file: the root-owned file
	std::string cgroup;          // memcg_limit: the cgroup directory the process is in
	uint64_t seed = 0;
	bool verbose = false;
};

// One case's verdict: checks print "  ok: ..." or "  FAIL: ...", notes
// "  info: ...". A case passes when no check failed and it threw nothing.
class Verdict {
public:
	bool check(bool ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
	void fail(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
	void info(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
	unsigned failures() const { return failures_.load(); }
	unsigned checks() const { return checks_.load(); }

private:
	void line(const char *tag, const char *fmt, va_list ap);
	std::atomic<unsigned> failures_{0}, checks_{0};
};

using CaseFn = void (*)(const Options &, Verdict &);

// The cases (sec_local_xrc.cpp, sec_local_race.cpp, sec_local_mem.cpp).
void case_xrc_tgt_post_send(const Options &o, Verdict &v);
void case_read_modify_race(const Options &o, Verdict &v);
void case_xrc_srq_churn(const Options &o, Verdict &v);
void case_rereg_ro_file(const Options &o, Verdict &v);
void case_memcg_limit(const Options &o, Verdict &v);

// --- shared helpers (sec_local.cpp) --------------------------------------------

// A fresh RC QP pair between devices a and b (either may be the same
// device): a verified 64 KiB SEND from a to b and a 100-byte one back.
// Returns an empty string on success, else what went wrong.
std::string rc_send_check(const Options &o, const vt::DevSpec &a, const vt::DevSpec &b);

// The RoCE address vector of ep's port towards peer_gid.
ibv_ah_attr ah_to(const vt::Endpoint &ep, const ibv_gid &peer_gid);

const char *errno_name(int e);
const char *wc_status(ibv_wc_status s);
// The current state of qp, or IBV_QPS_UNKNOWN (with errno) if ibv_query_qp fails.
ibv_qp_state query_state(ibv_qp *qp);
// Non-blocking: the affiliated/unaffiliated async events waiting on ctx.
std::string drain_async(ibv_context *ctx, unsigned *count = nullptr);

} // namespace sl
