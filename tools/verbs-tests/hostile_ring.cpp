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
//
// The files: hostile_ring.h lists them; this one holds the case table, the
// options and main.

#include "hostile_ring.h"

#include <getopt.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

using namespace vt;

namespace hr {
namespace {

// --- the case table ------------------------------------------------------------------

struct Case {
	const char *name;
	const char *group; // "ring", "limits", "optin"
	const char *desc;
	void (*fn)(Ctx &, Checker &);
};

const Case kCases[] = {
	{"sq_index", "ring", "SQ producer index past the ring, 2^31 ahead, backwards, 0xffffffff", case_sq_index},
	{"sq_full_ring", "ring", "SQ producer exactly a ring ahead: each slot runs once; stale slots",
	 case_sq_full_ring},
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
	{"producer_spin", "ring", "doorbells on a drained QP while a thread moves its SQ producer index",
	 case_producer_spin},
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
} // namespace hr

int main(int argc, char **argv)
{
	using namespace hr;

	Options o;
	o.seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
	enum {
		O_CASE = 256,
		O_LIST,
		O_GROUP,
		O_SEED,
		O_FUZZ,
		O_MUT,
		O_RACE,
		O_QPS,
		O_MRS,
		O_NOSRQ,
		O_NOVIC,
		O_BUGS,
		O_GENTLE
	};
	if (int rc = parse_args("hostile_ring", argc, argv, o.c, "h",
				{{"case", required_argument, nullptr, O_CASE},
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
				 {"gentle", no_argument, nullptr, O_GENTLE}},
				usage, [&](int ch, const char *arg) {
					switch (ch) {
					case O_CASE: o.cases.push_back(arg); break;
					case O_LIST: o.list = true; break;
					case O_GROUP: o.group = arg; break;
					case O_SEED: o.seed = std::stoull(arg, nullptr, 0); break;
					case O_FUZZ: o.fuzz_rounds = std::stoi(arg); break;
					case O_MUT: o.mutate_iters = std::stoi(arg); break;
					case O_RACE: o.race_seconds = std::stod(arg); break;
					case O_QPS: o.qps = std::stoi(arg); break;
					case O_MRS: o.mrs = std::stoi(arg); break;
					case O_NOSRQ: o.to_max = false; break;
					case O_NOVIC: o.victim = false; break;
					case O_BUGS: o.known_bugs = true; break;
					case O_GENTLE: o.known_bugs = false; break;
					default: return false;
					}
					return true;
				});
	    rc >= 0)
		return rc;
	if (o.group != "ring" && o.group != "limits" && o.group != "all") {
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
