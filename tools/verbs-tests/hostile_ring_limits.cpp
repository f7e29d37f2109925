// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// hostile_ring's limits group: QP, CQ, SRQ and MR caps at and beyond the
// device's (caps); SRQs, PDs, CQs and MRs created up to the device's max_*
// (srq_max, pd_max, cq_max, mr_max); RLIMIT_MEMLOCK without CAP_IPC_LOCK in
// a forked child (memlock); QPs connected in pairs, one SEND each
// (qp_pairs); MRs used as RDMA WRITE targets (mr_10k).
#include "hostile_ring.h"

#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

using namespace vt;
using namespace std::chrono_literals;

namespace hr {

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
	const struct {
		const char *what;
		uint32_t wr, sge;
	} srq_refused[] = {
		{"max_srq_wr + 1", static_cast<uint32_t>(d.max_srq_wr) + 1, 1},
		{"max_srq_sge + 1", 1, static_cast<uint32_t>(d.max_srq_sge) + 1},
	};
	for (auto &x : srq_refused) {
		e = try_srq(x.wr, x.sge);
		chk.expect(e == EINVAL, strf("SRQ of %s refused with EINVAL", x.what),
			   e ? std::strerror(e) : "created");
	}
	// An MR beyond the device's max_mr_size: refused before anything is pinned.
	ibv_mr *mr = ibv_reg_mr(c.A->pd.get(), c.abuf.data(), d.max_mr_size + 4096, IBV_ACCESS_LOCAL_WRITE);
	e = mr ? 0 : errno;
	if (mr)
		ibv_dereg_mr(mr);
	chk.expect(e != 0, strf("MR larger than max_mr_size refused (%s)", e ? std::strerror(e) : "registered"));
}

namespace {

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

} // namespace

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
		chk, "CQs", c.A->dattr.max_cq, 16,
		[&] { return ibv_create_cq(c.A->ctx.get(), 1, nullptr, nullptr, 0); },
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
			chk.expect(mr != nullptr,
				   "with CAP_IPC_LOCK, a 1 MiB MR over a 256 KiB RLIMIT_MEMLOCK registers");
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
	chk.pass(
		strf("%d QPs created (%.1f s) and connected in %d pairs (%.1f s)", 2 * npairs, tcreate, npairs, tconn));
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
			ibv_send_wr w = signaled_wr(static_cast<uint64_t>(i), s, IBV_WR_SEND), *bad = nullptr;
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
	chk.expect(
		ga.size() == 2 * static_cast<size_t>(npairs) && gb.size() == ga.size() && !bad && !data_bad,
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
			ibv_send_wr w = signaled_wr(static_cast<uint64_t>(i), s, IBV_WR_RDMA_WRITE), *b = nullptr;
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
	chk.expect(!bad && !data_bad,
		   strf("one RDMA WRITE into each of the %d MRs, each landed where its R_Key says "
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
	ibv_send_wr w = signaled_wr(0, s, IBV_WR_RDMA_WRITE), *b = nullptr;
	w.wr.rdma = {old_addr, old_rkey};
	std::memset(big.data(), 0, page);
	ibv_post_send(k->a.get(), &w, &b);
	auto got = poll_n(k->acq.get(), 1, 15s);
	chk.expect(got.size() == 1 && got[0].status == IBV_WC_REM_ACCESS_ERR &&
			   std::all_of(big.data(), big.data() + page, [](uint8_t x) { return x == 0; }),
		   "a WRITE through a deregistered R_Key fails with REM_ACCESS_ERR and writes nothing", wcs_str(got));
}

} // namespace hr
