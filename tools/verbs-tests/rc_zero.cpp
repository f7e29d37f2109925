// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rc_zero: zero-length RC operations. IBTA C9-88: a responder does not
 * check the R_Key or the virtual address of an RDMA READ or WRITE whose
 * DMA length is zero - there is no memory to protect - so a requester may
 * leave both 0. UCX does exactly that (a zero-length RDMA WRITE as its
 * rc_verbs endpoint check and flush), and sroce used to answer it with a
 * remote access error NAK, failing the QP.
 *
 * Cases, each on a fresh connected pair (A requester, B responder), with
 * remote address 0 and R_Key 0 (and, with --bad-addr, a nonzero address
 * and an R_Key that names nothing):
 *  - write0: RDMA WRITE, no SGE;
 *  - write0-imm: RDMA WRITE with immediate, no SGE: B's receive completes
 *    as IBV_WC_RECV_RDMA_WITH_IMM, byte_len 0, the immediate data;
 *  - read0: RDMA READ, no SGE;
 *  - send0: SEND, no SGE: B's receive completes, byte_len 0.
 * Each: A's completion successful, then a 64-byte WRITE on the same QP
 * arrives (the QP is still usable), both QPs in RTS, B's buffer touched
 * only by that WRITE. With --no-remote-access (B's QP grants none), the
 * WRITEs and the READ fail with a remote access error instead, B's
 * receive is not consumed and its buffer not touched: C9-88 spares the
 * R_Key check, not the QP's own rights.
 *
 * Output: "PASS CASE" / "FAIL CASE", reasons on indented "FAIL: ..." lines
 * before it. Exit status 0 all passed, 1 a case failed, 2 setup/usage
 * error.
 */
#include "common.h"

#include <cstring>
#include <string>
#include <vector>

using namespace vt;

namespace
{

constexpr size_t kBuf = 4096;
constexpr uint8_t kFillA = 0xa5, kFillB = 0x5b;
constexpr uint32_t kImm = 0x12345678;

struct Options : CommonOptions {
	bool bad_addr = false;
	bool no_access = false; // B's QP grants no remote access
	int timeout = 10;
	std::vector<std::string> cases;
};

const std::vector<const char *> kCases = {"write0", "write0-imm", "read0", "send0"};

void run_case(const Options &o, const std::string &name, Checker &c)
{
	auto a = open_endpoint("A", o.a, o.ipv6, o.use_event, 16);
	auto b = open_endpoint("B", o.b, o.ipv6, o.use_event, 16);
	QpCaps caps;
	caps.max_send_wr = caps.max_recv_wr = 8;
	caps.max_send_sge = caps.max_recv_sge = 1;
	caps.max_inline = 0;
	a->create_qp(caps);
	b->create_qp(caps);
	Buffer abuf(kBuf), bbuf(kBuf);
	std::memset(abuf.data(), kFillA, kBuf);
	std::memset(bbuf.data(), kFillB, kBuf);
	const unsigned all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	MrPtr amr = reg_mr(a->pd.get(), abuf.data(), kBuf, all);
	MrPtr bmr = reg_mr(b->pd.get(), bbuf.data(), kBuf, all);
	ConnParams pa, pb;
	pa.mtu = pb.mtu = pick_mtu(*a, *b, o.mtu);
	if (o.no_access)
		pb.access = IBV_ACCESS_LOCAL_WRITE;
	connect_pair(*a, *b, pa, pb);

	const bool needs_recv = name == "write0-imm" || name == "send0";
	if (needs_recv) {
		ibv_sge rs{bbuf.addr(), 64, bmr->lkey};
		ibv_recv_wr rw{}, *rbad = nullptr;
		rw.wr_id = 7;
		rw.sg_list = &rs;
		rw.num_sge = 1;
		int rc = ibv_post_recv(b->qp.get(), &rw, &rbad);
		if (rc)
			throw_errno("B: ibv_post_recv", rc);
	}
	ibv_send_wr w{}, *bad = nullptr;
	w.wr_id = 1;
	w.num_sge = 0;
	w.send_flags = IBV_SEND_SIGNALED;
	if (name == "write0") {
		w.opcode = IBV_WR_RDMA_WRITE;
	} else if (name == "write0-imm") {
		w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		w.imm_data = htobe32(kImm);
	} else if (name == "read0") {
		w.opcode = IBV_WR_RDMA_READ;
	} else {
		w.opcode = IBV_WR_SEND;
	}
	if (w.opcode != IBV_WR_SEND) {
		w.wr.rdma.remote_addr = o.bad_addr ? 0xdead0000ULL : 0;
		w.wr.rdma.rkey = o.bad_addr ? bmr->rkey ^ 0x5a5a00 : 0;
	}
	int rc = ibv_post_send(a->qp.get(), &w, &bad);
	if (rc)
		throw_errno("A: ibv_post_send", rc);
	auto wc = collect(*a, a->scq.get(), 1, std::chrono::seconds(o.timeout));
	if (o.no_access && w.opcode != IBV_WR_SEND) {
		// C9-88 spares the R_Key, not the QP's rights: a remote access
		// error, and B's receive (WRITE with immediate) not consumed.
		c.expect(wc.size() == 1 && wc[0].status == IBV_WC_REM_ACCESS_ERR && wc[0].wr_id == 1,
			 strf("A: the zero-length %s to a QP without remote access failed with a remote "
			      "access error", name.c_str()),
			 wc.empty() ? "no completion" : ibv_wc_status_str(wc[0].status));
		if (needs_recv) {
			auto rwc = collect(*b, b->rcq.get(), 1, std::chrono::seconds(o.timeout));
			c.expect(rwc.size() == 1 && rwc[0].status == IBV_WC_WR_FLUSH_ERR,
				 "B: its receive was not consumed (flushed with the QP's error)",
				 rwc.empty() ? "no completion" : ibv_wc_status_str(rwc[0].status));
		}
		size_t wrong = 0;
		for (size_t i = 0; i < kBuf; i++)
			wrong += bbuf.data()[i] != kFillB;
		c.expect(!wrong, "B's buffer untouched", strf("%zu bytes changed", wrong));
		return;
	}
	c.expect(wc.size() == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 1,
		 strf("A: the zero-length %s completed successfully", name.c_str()),
		 wc.empty() ? "no completion" : ibv_wc_status_str(wc[0].status));
	if (needs_recv) {
		auto rwc = collect(*b, b->rcq.get(), 1, std::chrono::seconds(o.timeout));
		bool imm = name == "write0-imm";
		std::string why = rwc.size() != 1 ? strf("%zu receive completions", rwc.size())
			: rwc[0].status != IBV_WC_SUCCESS ? ibv_wc_status_str(rwc[0].status)
			: recv_wc_mismatch(rwc[0], b->qpn(), imm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV, 0, imm,
					   kImm);
		c.expect(why.empty(), strf("B: its receive completed, %s, byte_len 0",
					   imm ? "RECV_RDMA_WITH_IMM with the immediate data" : "RECV"),
			 why);
	}
	if (o.no_access) {
		// The SEND needs no remote rights (and a WRITE behind it would).
		c.expect(qp_state(a->qp.get()) == IBV_QPS_RTS && qp_state(b->qp.get()) == IBV_QPS_RTS,
			 "both QPs still in RTS");
		return;
	}
	// The QP still works: a 64-byte WRITE to B's offset 1024.
	ibv_sge s{abuf.addr(), 64, amr->lkey};
	ibv_send_wr w2 = signaled_wr(2, s, IBV_WR_RDMA_WRITE);
	w2.wr.rdma.remote_addr = bbuf.addr() + 1024;
	w2.wr.rdma.rkey = bmr->rkey;
	rc = ibv_post_send(a->qp.get(), &w2, &bad);
	if (rc)
		throw_errno("A: ibv_post_send", rc);
	wc = collect(*a, a->scq.get(), 1, std::chrono::seconds(o.timeout));
	c.expect(wc.size() == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 2,
		 "A: a 64-byte WRITE behind it completed successfully",
		 wc.empty() ? "no completion" : ibv_wc_status_str(wc[0].status));
	c.expect(qp_state(a->qp.get()) == IBV_QPS_RTS && qp_state(b->qp.get()) == IBV_QPS_RTS,
		 "both QPs still in RTS",
		 strf("A %s, B %s", qp_state_str(qp_state(a->qp.get())), qp_state_str(qp_state(b->qp.get()))));
	size_t wrong = 0;
	for (size_t i = 0; i < kBuf; i++)
		wrong += bbuf.data()[i] != (i >= 1024 && i < 1024 + 64 ? kFillA : kFillB);
	c.expect(!wrong, "B's buffer: only the 64-byte WRITE landed", strf("%zu bytes wrong", wrong));
	// A's buffer: the READ of nothing wrote nothing.
	wrong = 0;
	for (size_t i = 0; i < kBuf; i++)
		wrong += abuf.data()[i] != kFillA;
	c.expect(!wrong, "A's buffer untouched", strf("%zu bytes changed", wrong));
}

void usage(FILE *f)
{
	std::fprintf(f,
		     "usage: rc_zero [options]\n"
		     "%s"
		     "  --bad-addr        a nonzero address and an R_Key that names nothing, not 0 and 0\n"
		     "  --no-remote-access  B's QP grants no remote access: the WRITEs and the READ must\n"
		     "                    fail with a remote access error (the SEND still completes)\n"
		     "  --case NAME       run only this case (repeatable): write0, write0-imm, read0, send0\n"
		     "  --timeout SECS    a completion may take this long (default 10)\n"
		     "Exit status: 0 all cases passed, 1 a case failed, 2 setup/usage error.\n",
		     kCommonUsage);
}

} // namespace

int main(int argc, char **argv)
{
	return guarded_main("rc_zero", [&] {
		Options o;
		enum { O_BAD = 256, O_NOACC, O_CASE, O_TIMEOUT };
		int rc = parse_args(argc, argv, o, "h",
				    {{"bad-addr", no_argument, nullptr, O_BAD},
				     {"no-remote-access", no_argument, nullptr, O_NOACC},
				     {"case", required_argument, nullptr, O_CASE},
				     {"timeout", required_argument, nullptr, O_TIMEOUT}},
				    usage, [&](int c, const char *arg) {
					    switch (c) {
					    case O_BAD: o.bad_addr = true; return true;
					    case O_NOACC: o.no_access = true; return true;
					    case O_CASE: o.cases.emplace_back(arg); return true;
					    case O_TIMEOUT: o.timeout = std::stoi(arg); return true;
					    default: return false;
					    }
				    });
		if (rc >= 0)
			return rc;
		if (o.timeout < 1)
			throw Error("--timeout at least 1");
		int failed = run_named_cases(kCases, o.cases,
					     [&](const std::string &name, Checker &c) { run_case(o, name, c); });
		return failed ? 1 : 0;
	});
}
