// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// sec_local: security regression tests of sroce.ko against a local process
// that uses the verbs (and the raw uverbs commands) in ways the provider
// never would. Each case is run on its own (--case NAME), normally as an
// unprivileged user, by selftests/sec_local.sh, which also checks the kernel
// log. A case prints its checks ("  ok: ..." / "  FAIL: ...") and ends with
// "PASS NAME" or "FAIL NAME".
//
//   xrc_tgt_post_send  raw IB_USER_VERBS_CMD_POST_SEND on an XRC target QP
//                      (no send queue, no CQ) in INIT, RTR and ERR: inline
//                      data from a kernel address, inline lengths that wrap
//                      u32, RDMA WRITE/READ: every write(2) fails with
//                      EINVAL/EOPNOTSUPP; the device still works
//   read_modify_race   long RDMA READs verified byte for byte while two
//                      threads cycle the responder RTS->SQD->SQD(new
//                      max_dest_rd_atomic, same AV)->RTS; IBV_QP_CUR_STATE
//                      naming a state the QP is not in is refused
//   xrc_srq_churn      XRC SENDs naming XRC SRQs that a thread creates and
//                      destroys meanwhile; completed SENDs delivered verified
//                      data into the SRQ they named
//   rereg_ro_file      an MR over a read-only mapping of a root-owned file
//                      re-registered for remote write, then written by a peer:
//                      the file stays unchanged
//   memcg_limit        CQ/QP/SRQ rings charged to the creator's memory cgroup:
//                      creation ends with ENOMEM near memory.max, no OOM kill
//
// Exit: 0 every case run passed, 1 a case failed, 2 usage or setup error.
#include "sec_local.h"

#include "pattern.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

using namespace vt;
using namespace std::chrono_literals;

namespace sl {

// --- verdicts -----------------------------------------------------------------------

void Verdict::line(const char *tag, const char *fmt, va_list ap)
{
	std::string s = std::string("  ") + tag + ": ";
	char *m = nullptr;
	if (vasprintf(&m, fmt, ap) >= 0) {
		s += m;
		free(m);
	}
	s += "\n";
	std::fputs(s.c_str(), stdout);
	std::fflush(stdout);
}

bool Verdict::check(bool ok, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	line(ok ? "ok" : "FAIL", fmt, ap);
	va_end(ap);
	checks_++;
	if (!ok)
		failures_++;
	return ok;
}

void Verdict::fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	line("FAIL", fmt, ap);
	va_end(ap);
	checks_++;
	failures_++;
}

void Verdict::info(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	line("info", fmt, ap);
	va_end(ap);
}

// --- small helpers --------------------------------------------------------------------

const char *errno_name(int e)
{
	switch (e) {
	case 0: return "success";
	case EINVAL: return "EINVAL";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOMEM: return "ENOMEM";
	case EFAULT: return "EFAULT";
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case EBUSY: return "EBUSY";
	case ENOSPC: return "ENOSPC";
	case EAGAIN: return "EAGAIN";
	case ENOENT: return "ENOENT";
	case EIO: return "EIO";
	case ENOSYS: return "ENOSYS";
	default: break;
	}
	static thread_local char buf[32];
	snprintf(buf, sizeof(buf), "errno %d", e);
	return buf;
}

const char *wc_status(ibv_wc_status s)
{
	return ibv_wc_status_str(s);
}

ibv_qp_state query_state(ibv_qp *qp)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return IBV_QPS_UNKNOWN;
	return a.qp_state;
}

std::string drain_async(ibv_context *ctx, unsigned *count)
{
	int fl = fcntl(ctx->async_fd, F_GETFL);
	if (fl >= 0 && !(fl & O_NONBLOCK))
		fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
	std::string s;
	ibv_async_event ev;
	unsigned n = 0;
	while (ibv_get_async_event(ctx, &ev) == 0) {
		if (n < 8)
			s += std::string(s.empty() ? "" : ", ") + ibv_event_type_str(ev.event_type);
		n++;
		ibv_ack_async_event(&ev);
	}
	if (n > 8)
		s += strf(", ... (%u in all)", n);
	if (count)
		*count += n;
	return s;
}

ibv_ah_attr ah_to(const Endpoint &ep, const ibv_gid &peer_gid)
{
	ibv_ah_attr ah{};
	ah.is_global = 1;
	ah.grh.dgid = peer_gid;
	ah.grh.sgid_index = static_cast<uint8_t>(ep.gid_index);
	ah.grh.hop_limit = 64;
	ah.port_num = ep.port;
	return ah;
}

std::string rc_send_check(const Options &o, const DevSpec &da, const DevSpec &db)
{
	try {
		auto a = open_endpoint("A", da, o.ipv6, false, 64);
		auto b = open_endpoint("B", db, o.ipv6, false, 64);
		a->create_qp(QpCaps{});
		b->create_qp(QpCaps{});
		ConnParams pa, pb;
		pa.mtu = pb.mtu = pick_mtu(*a, *b, o.mtu);
		pa.timeout = pb.timeout = o.ack_timeout;
		pa.psn = 0x10203, pb.psn = 0xfffff0;
		connect_pair(*a, *b, pa, pb);

		constexpr size_t big = 64 << 10, small = 100;
		Buffer abuf(2 * big), bbuf(2 * big);
		auto amr = reg_mr(a->pd.get(), abuf.data(), abuf.size(), IBV_ACCESS_LOCAL_WRITE);
		auto bmr = reg_mr(b->pd.get(), bbuf.data(), bbuf.size(), IBV_ACCESS_LOCAL_WRITE);
		uint64_t tag = mix64(o.seed ^ 0x5ec10ca1);
		fill_stream(abuf.data(), big, tag, 0);
		fill_stream(bbuf.data() + big, small, tag + 1, 0);
		std::memset(bbuf.data(), 0xa5, big);
		std::memset(abuf.data() + big, 0x5a, small);

		struct Leg {
			Endpoint *src, *dst;
			ibv_mr *smr, *dmr;
			uint8_t *sbuf, *dbuf;
			size_t len;
			uint64_t tag;
		} legs[2] = {
			{a.get(), b.get(), amr.get(), bmr.get(), abuf.data(), bbuf.data(), big, tag},
			{b.get(), a.get(), bmr.get(), amr.get(), bbuf.data() + big, abuf.data() + big, small,
			 tag + 1},
		};
		for (auto &l : legs) {
			ibv_sge rs{reinterpret_cast<uintptr_t>(l.dbuf), static_cast<uint32_t>(l.len + 64),
				   l.dmr->lkey};
			ibv_recv_wr rwr{};
			rwr.wr_id = 7;
			rwr.sg_list = &rs;
			rwr.num_sge = 1;
			ibv_recv_wr *rbad;
			if (int rc = ibv_post_recv(l.dst->qp.get(), &rwr, &rbad))
				return strf("ibv_post_recv: %s", errno_name(rc));
			ibv_sge ss{reinterpret_cast<uintptr_t>(l.sbuf), static_cast<uint32_t>(l.len), l.smr->lkey};
			ibv_send_wr swr = signaled_wr(9, ss, IBV_WR_SEND);
			ibv_send_wr *sbad;
			if (int rc = ibv_post_send(l.src->qp.get(), &swr, &sbad))
				return strf("ibv_post_send: %s", errno_name(rc));
			auto sc = collect(*l.src, l.src->scq.get(), 1, 20s);
			auto rcv = collect(*l.dst, l.dst->rcq.get(), 1, 20s);
			if (sc.size() != 1 || sc[0].status != IBV_WC_SUCCESS)
				return strf("%s->%s SEND of %zu bytes: %s", l.src->devname.c_str(),
					    l.dst->devname.c_str(), l.len,
					    sc.empty() ? "no completion in 20 s" : wc_status(sc[0].status));
			if (rcv.size() != 1 || rcv[0].status != IBV_WC_SUCCESS || rcv[0].byte_len != l.len ||
			    rcv[0].wr_id != 7)
				return strf("%s receive of %zu bytes: %s (byte_len %u)", l.dst->devname.c_str(),
					    l.len, rcv.empty() ? "no completion in 20 s" : wc_status(rcv[0].status),
					    rcv.empty() ? 0 : rcv[0].byte_len);
			size_t bad = check_stream(l.dbuf, l.len, l.tag, 0);
			if (bad != l.len)
				return strf("%s received wrong data at byte %zu of %zu", l.dst->devname.c_str(),
					    bad, l.len);
		}
		return "";
	} catch (const std::exception &e) {
		return e.what();
	}
}

} // namespace sl

// --- the case table, main ---------------------------------------------------------------

namespace {

struct Case {
	const char *name;
	sl::CaseFn fn;
	const char *desc;
};

const Case kCases[] = {
	{"xrc_tgt_post_send", sl::case_xrc_tgt_post_send,
	 "raw POST_SEND on an XRC target QP (INIT, RTR, ERR): EINVAL/EOPNOTSUPP, device still works"},
	{"read_modify_race", sl::case_read_modify_race,
	 "verified long READs while the responder cycles RTS/SQD with new max_dest_rd_atomic; CUR_STATE lies"},
	{"xrc_srq_churn", sl::case_xrc_srq_churn,
	 "XRC SENDs to XRC SRQs being created and destroyed: delivered data verified"},
	{"rereg_ro_file", sl::case_rereg_ro_file,
	 "rereg of an MR on a read-only file mapping to remote write: the file stays unchanged"},
	{"memcg_limit", sl::case_memcg_limit,
	 "rings charged to the memory cgroup: ENOMEM near memory.max, no OOM kill"},
};

void usage(FILE *f)
{
	std::fprintf(f,
		     "usage: sec_local [options] --case NAME [--case NAME...] | --list\n"
		     "%s"
		     "  --seconds S          length of the timed phase (default: the case's)\n"
		     "  --min-ops N          completed operations a timed case needs (default: the case's)\n"
		     "  --read-min SIZE, --read-max SIZE   read_modify_race READ sizes (8M, 32M)\n"
		     "  --depth N            read_modify_race READs in flight (2)\n"
		     "  --ack-timeout N      local ACK timeout exponent of the QPs (16)\n"
		     "  --file PATH          rereg_ro_file: the root-owned file (2 pages)\n"
		     "  --cgroup DIR         memcg_limit: the cgroup v2 directory this process is in\n"
		     "  --seed N, -v\n",
		     vt::kCommonUsage);
}

} // namespace

int main(int argc, char **argv)
{
	sl::Options o;
	std::vector<std::string> cases;
	bool list = false;
	enum { O_CASE = 256, O_LIST, O_SECS, O_MINOPS, O_RMIN, O_RMAX, O_DEPTH, O_ACK, O_FILE, O_CG, O_SEED };
	if (int rc = vt::parse_args(
		"sec_local", argc, argv, o, "vh",
		{{"case", required_argument, nullptr, O_CASE},
		 {"list", no_argument, nullptr, O_LIST},
		 {"seconds", required_argument, nullptr, O_SECS},
		 {"min-ops", required_argument, nullptr, O_MINOPS},
		 {"read-min", required_argument, nullptr, O_RMIN},
		 {"read-max", required_argument, nullptr, O_RMAX},
		 {"depth", required_argument, nullptr, O_DEPTH},
		 {"ack-timeout", required_argument, nullptr, O_ACK},
		 {"file", required_argument, nullptr, O_FILE},
		 {"cgroup", required_argument, nullptr, O_CG},
		 {"seed", required_argument, nullptr, O_SEED}},
		usage, [&](int c, const char *arg) {
			switch (c) {
			case O_CASE: cases.push_back(arg); break;
			case O_LIST: list = true; break;
			case O_SECS: o.seconds = std::stod(arg); break;
			case O_MINOPS: o.min_ops = std::stoul(arg); break;
			case O_RMIN: o.read_min = vt::parse_size(arg); break;
			case O_RMAX: o.read_max = vt::parse_size(arg); break;
			case O_DEPTH: o.depth = std::clamp<unsigned>(std::stoul(arg), 1, 16); break;
			case O_ACK: o.ack_timeout = static_cast<uint8_t>(std::min(31ul, std::stoul(arg))); break;
			case O_FILE: o.file = arg; break;
			case O_CG: o.cgroup = arg; break;
			case O_SEED: o.seed = std::stoull(arg, nullptr, 0); break;
			case 'v': o.verbose = true; break;
			default: return false;
			}
			return true;
		});
	    rc >= 0)
		return rc;
	if ((!list && cases.empty()) || o.read_min < 4096 || o.read_max < o.read_min) {
		usage(stderr);
		return 2;
	}
	if (list) {
		print_cases(kCases, 20);
		return 0;
	}
	if (!o.seed)
		o.seed = vt::mix64(static_cast<uint64_t>(time(nullptr)) ^ (static_cast<uint64_t>(getpid()) << 20));
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	int rc = 0;
	for (auto &n : cases) {
		const Case *k = find_case(kCases, n);
		if (!k) {
			std::fprintf(stderr, "sec_local: no case '%s' (--list)\n", n.c_str());
			return 2;
		}
		std::printf("--- %s: %s (uid %d, seed %llu)\n", k->name, k->desc, static_cast<int>(geteuid()),
			    static_cast<unsigned long long>(o.seed));
		sl::Verdict v;
		auto t0 = vt::Clock::now();
		try {
			k->fn(o, v);
		} catch (const std::exception &e) {
			v.fail("%s: %s", k->name, e.what());
		}
		bool ok = v.failures() == 0 && v.checks() > 0;
		if (!v.checks())
			std::printf("  FAIL: the case checked nothing\n");
		std::printf("%s %s (%u checks, %u failed, %.1f s)\n", ok ? "PASS" : "FAIL", k->name, v.checks(),
			    v.failures(), vt::secs_since(t0));
		if (!ok)
			rc = 1;
	}
	return rc;
}
