// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// hostile_ring's victim: another process, forked at start, that registers
// MRs on both devices, creates an AH, passes their keys and numbers over a
// pipe, runs verified RC traffic of its own for as long as the attacks run,
// and at the end checks that its MRs are byte for byte unchanged.
#include "hostile_ring.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstring>

using namespace vt;
using namespace std::chrono_literals;

namespace hr {

namespace {

constexpr size_t kVictimLen = 64 * 1024;
constexpr uint64_t kTagVictim = 0x71c71;

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
		ibv_send_wr w1 = signaled_wr(1, s1, IBV_WR_SEND);
		ibv_send_wr w2 = signaled_wr(2, s2, IBV_WR_RDMA_WRITE), *sbad = nullptr;
		w1.next = &w2;
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
					err = strf("recv completion %s len %u", ibv_wc_status_str(w.status),
						   w.byte_len);
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

} // namespace

void Victim::start(const Options &o)
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

std::optional<VictimReport> Victim::stop()
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

Victim::~Victim()
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
	}
}

} // namespace hr
