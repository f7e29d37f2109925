// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// sec_local's memory cases: rereg_ro_file (an MR over a read-only mapping of
// a file the process cannot write, re-registered for remote write) and
// memcg_limit (the kernel memory behind a process's rings is charged to its
// memory cgroup, and running out of it is an ENOMEM, not an OOM kill).
#include "sec_local.h"

#include "pattern.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

using namespace vt;
using namespace std::chrono_literals;

namespace sl {

namespace {

// The whole file, with read(2) through a fresh descriptor.
std::vector<uint8_t> read_file(const std::string &path)
{
	int fd = open(path.c_str(), O_RDONLY);
	if (fd < 0)
		throw_errno("open(" + path + ")", errno);
	std::vector<uint8_t> v;
	uint8_t buf[4096];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0) {
			int e = errno;
			close(fd);
			throw_errno("read(" + path + ")", e);
		}
		if (!n)
			break;
		v.insert(v.end(), buf, buf + n);
	}
	close(fd);
	return v;
}

// One signaled RDMA op from a's QP, waited for: its completion status.
ibv_wc_status rdma_op(Endpoint &a, ibv_wr_opcode op, void *laddr, uint32_t len, uint32_t lkey, uint64_t raddr,
		      uint32_t rkey)
{
	ibv_sge s{reinterpret_cast<uintptr_t>(laddr), len, lkey};
	ibv_send_wr w = signaled_wr(1, s, op);
	w.wr.rdma.remote_addr = raddr;
	w.wr.rdma.rkey = rkey;
	ibv_send_wr *bad;
	if (int rc = ibv_post_send(a.qp.get(), &w, &bad))
		throw_errno("ibv_post_send", rc);
	auto wc = collect(a, a.scq.get(), 1, 30s);
	if (wc.size() != 1)
		throw Error("no completion in 30 s");
	return wc[0].status;
}

} // namespace

// --- rereg_ro_file ---------------------------------------------------------------------------

void case_rereg_ro_file(const Options &o, Verdict &v)
{
	if (o.file.empty())
		throw Error("rereg_ro_file needs --file PATH");
	const std::vector<uint8_t> orig = read_file(o.file);
	const size_t len = orig.size();
	if (len < 4096 || len % 4096)
		throw Error(strf("%s: %zu bytes, want whole pages", o.file.c_str(), len));
	struct stat st{};
	stat(o.file.c_str(), &st);
	v.info("%s: %zu bytes, owner uid %u, mode %04o; this process: uid %u", o.file.c_str(), len, st.st_uid,
	       st.st_mode & 07777, geteuid());
	int wfd = open(o.file.c_str(), O_RDWR);
	v.check(wfd < 0, "the process cannot open the file for writing (%s)", wfd < 0 ? errno_name(errno) : "it can");
	if (wfd >= 0)
		close(wfd);

	auto a = open_endpoint("A", o.a, o.ipv6, false, 16);
	auto b = open_endpoint("B", o.b, o.ipv6, false, 16);
	ConnParams p;
	p.mtu = pick_mtu(*a, *b, o.mtu);
	p.timeout = o.ack_timeout;
	Buffer lbuf(len);
	auto lmr = reg_mr(a->pd.get(), lbuf.data(), len, IBV_ACCESS_LOCAL_WRITE);
	const int want = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	std::string used;
	const struct {
		const char *name;
		int flags;
	} maps[] = {{"MAP_SHARED", MAP_SHARED}, {"MAP_PRIVATE", MAP_PRIVATE}};
	for (auto &m : maps) {
		int fd = open(o.file.c_str(), O_RDONLY);
		if (fd < 0)
			throw_errno("open(O_RDONLY)", errno);
		void *map = mmap(nullptr, len, PROT_READ, m.flags, fd, 0);
		if (map == MAP_FAILED)
			throw_errno(strf("mmap(PROT_READ, %s)", m.name), errno);
		ibv_mr *mr = ibv_reg_mr(b->pd.get(), map, len, IBV_ACCESS_REMOTE_READ);
		if (!mr) {
			v.info("%s PROT_READ: ibv_reg_mr(REMOTE_READ) failed with %s", m.name, errno_name(errno));
			munmap(map, len);
			close(fd);
			continue;
		}
		used += strf("%s%s", used.empty() ? "" : " and ", m.name);
		uint32_t rkey0 = mr->rkey;
		a->create_qp(QpCaps{});
		b->create_qp(QpCaps{});
		connect_pair(*a, *b, p, p);

		std::memset(lbuf.data(), 0, len);
		ibv_wc_status rs = rdma_op(*a, IBV_WR_RDMA_READ, lbuf.data(), len, lmr->lkey,
					   reinterpret_cast<uintptr_t>(map), mr->rkey);
		v.check(rs == IBV_WC_SUCCESS && std::memcmp(lbuf.data(), orig.data(), len) == 0,
			"%s: an RDMA READ through the read-only MR returns the file's contents (%s)", m.name,
			wc_status(rs));

		errno = 0;
		int rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, want);
		int err = errno;
		v.info("%s: ibv_rereg_mr(CHANGE_ACCESS, LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ): %s%s%s", m.name,
		       rc ? strf("failed (%d)", rc).c_str() : "succeeded", rc ? ", errno " : "",
		       rc ? errno_name(err) : "");
		// The pages were pinned for reading (6.1: copies for a private
		// mapping, FOLL_FORCE); write rights need them pinned for writing,
		// which a PROT_READ mapping does not allow.
		v.check(rc && (err == EFAULT || err == EACCES || err == EPERM),
			"%s: the rereg of an MR on a PROT_READ mapping to write access is refused with "
			"EFAULT/EACCES/EPERM (%s)",
			m.name, rc ? errno_name(err) : "it succeeded");

		// A peer writes another pattern over the whole MR with whatever
		// key it now has.
		std::memset(lbuf.data(), 0x66, len);
		a->qp.reset();
		b->qp.reset();
		a->create_qp(QpCaps{});
		b->create_qp(QpCaps{});
		connect_pair(*a, *b, p, p);
		ibv_wc_status ws = rdma_op(*a, IBV_WR_RDMA_WRITE, lbuf.data(), len, lmr->lkey,
					   reinterpret_cast<uintptr_t>(map), mr->rkey);
		bool mapping_changed = std::memcmp(map, orig.data(), len) != 0;
		v.info("%s: RDMA WRITE of %zu bytes with rkey 0x%x (was 0x%x): %s; the process's own mapping %s",
		       m.name, len, mr->rkey, rkey0, wc_status(ws), mapping_changed ? "changed" : "is unchanged");
		if (rc)
			v.check(ws == IBV_WC_REM_ACCESS_ERR,
				"%s: with the rereg refused, the MR still refuses remote writes (%s)", m.name,
				wc_status(ws));
		if (m.flags == MAP_SHARED)
			v.check(!mapping_changed, "%s: the shared mapping of the file is unchanged", m.name);
		a->qp.reset();
		b->qp.reset();
		if (int d = ibv_dereg_mr(mr))
			v.fail("%s: ibv_dereg_mr: %s", m.name, errno_name(d));
		munmap(map, len);
		close(fd);
		std::vector<uint8_t> now = read_file(o.file);
		v.check(now == orig, "%s: the file's contents (read(2) after munmap) are unchanged", m.name);
	}
	v.info("mapping used: %s", used.empty() ? "none (ibv_reg_mr refused both)" : used.c_str());
	std::string why = rc_send_check(o, o.a, o.b);
	v.check(why.empty(), "afterwards an RC pair %s <-> %s passes a verified SEND each way%s%s", o.a.name.c_str(),
		o.b.name.c_str(), why.empty() ? "" : ": ", why.c_str());
}

// --- memcg_limit -------------------------------------------------------------------------------

namespace {

std::string slurp(const std::string &path)
{
	std::ifstream f(path);
	if (!f)
		throw Error("cannot read " + path);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

uint64_t cg_num(const std::string &cg, const char *file)
{
	std::string s = slurp(cg + "/" + file);
	if (s.rfind("max", 0) == 0)
		return UINT64_MAX;
	return std::stoull(s);
}

// A key's value in a "key value" file (memory.events).
uint64_t cg_key(const std::string &cg, const char *file, const char *key)
{
	std::istringstream in(slurp(cg + "/" + file));
	std::string k;
	uint64_t val;
	while (in >> k >> val)
		if (k == key)
			return val;
	return 0;
}

// Bytes of the uverbs mappings (the rings) in this process.
uint64_t ring_bytes()
{
	std::ifstream f("/proc/self/maps");
	std::string line;
	uint64_t sum = 0;
	while (std::getline(f, line)) {
		if (line.find("/dev/infiniband/uverbs") == std::string::npos)
			continue;
		unsigned long long lo, hi;
		if (sscanf(line.c_str(), "%llx-%llx", &lo, &hi) == 2)
			sum += hi - lo;
	}
	return sum;
}

constexpr double MiB = 1048576.0;

} // namespace

void case_memcg_limit(const Options &o, Verdict &v)
{
	if (o.cgroup.empty())
		throw Error("memcg_limit needs --cgroup DIR (the cgroup this process is in)");
	const std::string &cg = o.cgroup;
	std::string self = slurp("/proc/self/cgroup");
	std::string rel = cg.substr(cg.find("/sys/fs/cgroup") == 0 ? std::strlen("/sys/fs/cgroup") : 0);
	v.check(self.find("0::" + rel + "\n") != std::string::npos, "this process is in cgroup %s (%s)", rel.c_str(),
		self.substr(0, self.find('\n')).c_str());
	const uint64_t max = cg_num(cg, "memory.max");
	if (max == UINT64_MAX)
		throw Error(cg + "/memory.max is not set");
	const uint64_t base = cg_num(cg, "memory.current");
	const uint64_t oom0 = cg_key(cg, "memory.events", "oom"), kill0 = cg_key(cg, "memory.events", "oom_kill");
	v.info("memory.max %.1f MiB, memory.current %.1f MiB at the start, memory.events oom %llu oom_kill %llu",
	       max / MiB, base / MiB, static_cast<unsigned long long>(oom0), static_cast<unsigned long long>(kill0));

	auto ep = open_endpoint("M", o.a, o.ipv6, false, 16);
	std::vector<CqPtr> cqs;
	std::vector<QpPtr> qps;
	std::vector<std::unique_ptr<ibv_srq, IbvDeleter<ibv_srq, ibv_destroy_srq>>> srqs;
	const uint64_t rings0 = ring_bytes(), cur0 = cg_num(cg, "memory.current");
	int err = 0;
	const char *failed_kind = "";
	uint64_t cur_at_fail = 0, rings = rings0, objects = 0;
	// The largest object below (a QP: SQ 4 MiB, its kernel shadow 4 MiB, RQ
	// 2 MiB, plus page tables and bookkeeping).
	const uint64_t largest = 12u << 20;
	for (unsigned i = 0;; i++) {
		uint64_t before = cg_num(cg, "memory.current");
		const char *kind = "";
		bool ok = false;
		switch (i % 3) {
		case 0: {
			kind = "CQ of 65535 CQEs";
			CqPtr cq(ibv_create_cq(ep->ctx.get(), std::min(65535, ep->dattr.max_cqe), nullptr, nullptr, 0));
			if ((ok = !!cq))
				cqs.push_back(std::move(cq));
			break;
		}
		case 1: {
			kind = "QP of 8192+8192 WRs, 8 SGEs, 256 B inline";
			ibv_qp_init_attr ia{};
			ia.send_cq = ep->scq.get();
			ia.recv_cq = ep->rcq.get();
			ia.qp_type = IBV_QPT_RC;
			ia.cap.max_send_wr = 8192;
			ia.cap.max_recv_wr = 8192;
			ia.cap.max_send_sge = 8;
			ia.cap.max_recv_sge = 8;
			ia.cap.max_inline_data = 256;
			QpPtr qp(ibv_create_qp(ep->pd.get(), &ia));
			if ((ok = !!qp))
				qps.push_back(std::move(qp));
			break;
		}
		default: {
			kind = "SRQ of 8192 WRs, 8 SGEs";
			ibv_srq_init_attr sa{};
			sa.attr.max_wr = 8192;
			sa.attr.max_sge = 8;
			ibv_srq *s = ibv_create_srq(ep->pd.get(), &sa);
			if ((ok = !!s))
				srqs.emplace_back(s);
			break;
		}
		}
		if (!ok) {
			err = errno;
			failed_kind = kind;
			cur_at_fail = cg_num(cg, "memory.current");
			v.info("#%u %s: failed with %s; memory.current %.1f MiB (%.1f before the call)", i, kind,
			       errno_name(err), cur_at_fail / MiB, before / MiB);
			break;
		}
		objects++;
		rings = ring_bytes();
		uint64_t cur = cg_num(cg, "memory.current");
		if (o.verbose || i < 3 || i % 8 == 0)
			v.info("#%u %s: rings mapped %.1f MiB in all; memory.current %.1f MiB (+%.1f)", i, kind,
			       (rings - rings0) / MiB, cur / MiB, (static_cast<double>(cur) - before) / MiB);
		if (rings - rings0 > 4 * max) {
			v.fail("%.1f MiB of rings created in a cgroup limited to %.1f MiB and no failure: memory.current "
			       "%.1f MiB (+%.1f since the first object): the rings are not charged to the cgroup",
			       (rings - rings0) / MiB, max / MiB, cur / MiB, (static_cast<double>(cur) - cur0) / MiB);
			break;
		}
	}
	const uint64_t peak_rings = rings - rings0;
	const uint64_t grown = cur_at_fail > cur0 ? cur_at_fail - cur0 : 0;
	const uint64_t oom1 = cg_key(cg, "memory.events", "oom"), kill1 = cg_key(cg, "memory.events", "oom_kill");
	v.info("%llu objects (%zu CQs, %zu QPs, %zu SRQs): %.1f MiB of rings; memory.current grew by %.1f MiB; "
	       "memory.events: oom %llu -> %llu, oom_kill %llu -> %llu, max %llu",
	       static_cast<unsigned long long>(objects), cqs.size(), qps.size(), srqs.size(), peak_rings / MiB,
	       grown / MiB, static_cast<unsigned long long>(oom0), static_cast<unsigned long long>(oom1),
	       static_cast<unsigned long long>(kill0), static_cast<unsigned long long>(kill1),
	       static_cast<unsigned long long>(cg_key(cg, "memory.events", "max")));
	if (cur_at_fail) {
		v.check(err == ENOMEM, "creating objects ended with ENOMEM (%s creating a %s)", errno_name(err),
			failed_kind);
		v.check(cur_at_fail + largest + (4u << 20) >= max,
			"it ended near memory.max: memory.current %.1f MiB of %.1f MiB (the next object needed up to "
			"%.1f MiB)",
			cur_at_fail / MiB, max / MiB, largest / MiB);
		v.check(grown + (8u << 20) >= peak_rings * 8 / 10,
			"the rings were charged to the cgroup: memory.current grew by %.1f MiB for %.1f MiB of rings",
			grown / MiB, peak_rings / MiB);
	}
	v.check(kill1 == kill0 && kill1 == 0, "memory.events shows oom_kill %llu (want 0)",
		static_cast<unsigned long long>(kill1));

	srqs.clear();
	qps.clear();
	cqs.clear();
	ep.reset();
	uint64_t after = cg_num(cg, "memory.current");
	v.info("after freeing everything: memory.current %.1f MiB (%.1f at the start)", after / MiB, base / MiB);
	v.check(after < cur0 + (8u << 20), "freeing the objects uncharged them (memory.current %.1f MiB, %.1f before "
		"the first)", after / MiB, cur0 / MiB);
	std::string why = rc_send_check(o, o.a, o.b);
	v.check(why.empty(), "afterwards an RC pair %s <-> %s passes a verified SEND each way (in the cgroup)%s%s",
		o.a.name.c_str(), o.b.name.c_str(), why.empty() ? "" : ": ", why.c_str());
}

} // namespace sl
