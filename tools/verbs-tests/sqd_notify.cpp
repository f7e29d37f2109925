// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sqd_notify: IBV_EVENT_SQ_DRAINED for RC, UC and UD QPs.
 *
 * A QP moved RTS -> SQD with en_sqd_async_notify set gets one
 * IBV_EVENT_SQ_DRAINED once every send WR posted before the move has
 * completed (ibv_modify_qp(3); IBTA vol. 1, 10.3.1 and 11.6.3). For each QP
 * type, each round: A posts --wrs signaled send WRs to B (RC, UC: RDMA
 * WRITEs of --size bytes, several packets each; UD: SENDs of one path-MTU
 * packet into receives B posted), moves its QP to SQD right away, and
 * waits for the event. SQD finishes what has started and starts nothing
 * new. Each round must see:
 *  - exactly one IBV_EVENT_SQ_DRAINED for A's QP within --timeout seconds,
 *    and no other event of A's context;
 *  - no completion after the event while the QP stays in SQD (0.5 s): what
 *    completes in SQD is done before the event, and nothing new starts;
 *  - the QP in SQD; back in RTS, the held WRs complete: all --wrs
 *    successful, in order; for UD, B received every datagram.
 * The move comes right after the posts; RC and UC fail unless a WR
 * completed between the move and the event in at least one round (SQD
 * drained a message in progress; each round says what it saw).
 *
 * Output: "PASS TYPE ..." or "FAIL TYPE ..." per QP type (rc_errors' form),
 * a failure's reason on an indented "FAIL: ..." line before it. Exit
 * status 0 all passed, 1 a check failed, 2 setup/usage error.
 */
#include "common.h"

#include <poll.h>

#include <cstring>
#include <string>
#include <vector>

using namespace vt;

namespace
{

constexpr uint32_t kQkey = 0x11110000;
constexpr size_t kGrh = 40;

struct Options : CommonOptions {
	unsigned types = 7; // bit 0 RC, 1 UC, 2 UD
	int rounds = 10;
	int wrs = 8;
	size_t size = 1 << 20;
	int timeout = 10;
};

const char *const kTypeNames[] = {"RC", "UC", "UD"};
const ibv_qp_type kTypes[] = {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD};

struct Failed : std::runtime_error {
	using std::runtime_error::runtime_error;
};

using AhPtr = std::unique_ptr<ibv_ah, IbvDeleter<ibv_ah, ibv_destroy_ah>>;

// One QP of type t (named name) on ep's PD and CQs.
QpPtr make_qp(const Endpoint &ep, ibv_qp_type t, const char *name, uint32_t depth)
{
	ibv_qp_init_attr ia{};
	ia.send_cq = ep.scq.get();
	ia.recv_cq = ep.rcq.get();
	ia.qp_type = t;
	ia.cap.max_send_wr = depth;
	ia.cap.max_recv_wr = depth;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	QpPtr q(ibv_create_qp(ep.pd.get(), &ia));
	if (!q)
		throw_errno(strf("%s: ibv_create_qp(%s)", ep.label.c_str(), name), errno);
	return q;
}

void modify(const Endpoint &ep, ibv_qp *qp, ibv_qp_attr &a, int mask, const char *what)
{
	int rc = ibv_modify_qp(qp, &a, mask);
	if (rc)
		throw_errno(strf("%s: ibv_modify_qp(%s)", ep.label.c_str(), what), rc);
}

// The next async event of ep's context within ms, or false. The caller
// acknowledges it.
bool next_event(const Endpoint &ep, ibv_async_event &ev, int ms)
{
	pollfd p{ep.ctx->async_fd, POLLIN, 0};
	int n = poll(&p, 1, ms);
	if (n < 0)
		throw_errno("poll(async_fd)", errno);
	if (n == 0)
		return false;
	if (ibv_get_async_event(ep.ctx.get(), &ev))
		throw_errno("ibv_get_async_event", errno);
	return true;
}

std::string event_str(const ibv_async_event &ev)
{
	return strf("%s (%d)", ibv_event_type_str(ev.event_type), ev.event_type);
}

class Run
{
public:
	Run(const Options &o, Endpoint &a, Endpoint &b, int ti)
		: o_(o), a_(a), b_(b), t_(kTypes[ti]), name_(kTypeNames[ti])
	{
	}
	void setup();
	void round(int r);
	// Rounds in which a WR completed between the move and the event:
	// SQD drained a message in progress.
	int drained_in_flight = 0;

private:
	void post_recvs();
	void post_sends();

	const Options &o_;
	Endpoint &a_, &b_;
	ibv_qp_type t_;
	const char *name_;
	QpPtr qa_, qb_;
	AhPtr ah_;
	std::vector<unsigned char> sbuf_, rbuf_;
	MrPtr smr_, rmr_;
	size_t len_ = 0;
};

void Run::setup()
{
	ibv_mtu mtu = pick_mtu(a_, b_, o_.mtu);
	uint32_t depth = static_cast<uint32_t>(o_.wrs) + 1;
	qa_ = make_qp(a_, t_, name_, depth);
	qb_ = make_qp(b_, t_, name_, depth);
	ConnParams p;
	p.mtu = mtu;
	p.qkey = kQkey;
	if (t_ == IBV_QPT_UC)
		p.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	connect_qp(a_, qa_.get(), b_, qb_->qp_num, p, 0);
	connect_qp(b_, qb_.get(), a_, qa_->qp_num, p, 0);
	// UD: one packet a message, the path MTU (the device's active MTU).
	len_ = t_ == IBV_QPT_UD ? static_cast<size_t>(128) << mtu : o_.size;
	sbuf_.assign(len_ * o_.wrs, 0x5a);
	rbuf_.assign((len_ + kGrh) * o_.wrs, 0);
	smr_ = reg_mr(a_.pd.get(), sbuf_.data(), sbuf_.size(), IBV_ACCESS_LOCAL_WRITE);
	rmr_ = reg_mr(b_.pd.get(), rbuf_.data(), rbuf_.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (t_ == IBV_QPT_UD) {
		ibv_ah_attr ah = ah_attr_to(a_, b_);
		ah_.reset(ibv_create_ah(a_.pd.get(), &ah));
		if (!ah_)
			throw_errno("A: ibv_create_ah", errno);
	}
}

void Run::post_recvs()
{
	for (int i = 0; i < o_.wrs; i++) {
		ibv_sge sge{reinterpret_cast<uintptr_t>(rbuf_.data()) + i * (len_ + kGrh),
			    static_cast<uint32_t>(len_ + kGrh), rmr_->lkey};
		ibv_recv_wr w{}, *bad = nullptr;
		w.wr_id = i;
		w.sg_list = &sge;
		w.num_sge = 1;
		int rc = ibv_post_recv(qb_.get(), &w, &bad);
		if (rc)
			throw_errno("B: ibv_post_recv", rc);
	}
}

void Run::post_sends()
{
	for (int i = 0; i < o_.wrs; i++) {
		ibv_sge sge{reinterpret_cast<uintptr_t>(sbuf_.data()) + i * len_, static_cast<uint32_t>(len_),
			    smr_->lkey};
		ibv_send_wr w = signaled_wr(i, sge, t_ == IBV_QPT_UD ? IBV_WR_SEND : IBV_WR_RDMA_WRITE);
		ibv_send_wr *bad = nullptr;
		if (t_ == IBV_QPT_UD) {
			w.wr.ud.ah = ah_.get();
			w.wr.ud.remote_qpn = qb_->qp_num;
			w.wr.ud.remote_qkey = kQkey;
		} else {
			w.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(rbuf_.data()) + i * len_;
			w.wr.rdma.rkey = rmr_->rkey;
		}
		int rc = ibv_post_send(qa_.get(), &w, &bad);
		if (rc)
			throw_errno("A: ibv_post_send", rc);
	}
}

void Run::round(int r)
{
	if (t_ == IBV_QPT_UD)
		post_recvs();
	post_sends();
	// What completed before the move (kept: it counts towards --wrs).
	std::vector<ibv_wc> wc(o_.wrs + 1);
	int n = 0, got;
	while ((got = ibv_poll_cq(a_.scq.get(), o_.wrs + 1 - n, wc.data() + n)) > 0)
		n += got;
	if (got < 0)
		throw Error("A: ibv_poll_cq failed");
	int before = n;
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_SQD;
	a.en_sqd_async_notify = 1;
	modify(a_, qa_.get(), a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY, "RTS -> SQD");

	int drained = 0;
	ibv_async_event ev;
	auto t0 = Clock::now();
	while (!drained && secs_since(t0) < o_.timeout) {
		if (!next_event(a_, ev, 100))
			continue;
		bool ours = ev.event_type == IBV_EVENT_SQ_DRAINED && ev.element.qp == qa_.get();
		std::string what = event_str(ev);
		ibv_ack_async_event(&ev);
		if (!ours)
			throw Failed(strf("round %d: A's context got %s, not SQ_DRAINED for its QP", r, what.c_str()));
		drained++;
	}
	if (!drained)
		throw Failed(strf("round %d: no IBV_EVENT_SQ_DRAINED %d s after RTS -> SQD with %d WRs posted", r,
				  o_.timeout, o_.wrs));
	double at = secs_since(t0);
	// Drained: what had started has completed (IBTA: SQD starts no new
	// WQE; what has not started waits for RTS).
	auto poll_more = [&] {
		while ((got = ibv_poll_cq(a_.scq.get(), o_.wrs + 1 - n, wc.data() + n)) > 0)
			n += got;
		if (got < 0)
			throw Error("A: ibv_poll_cq failed");
	};
	poll_more();
	int at_event = n;
	drained_in_flight += at_event > before;
	if (next_event(a_, ev, 500)) {
		std::string what = event_str(ev);
		ibv_ack_async_event(&ev);
		throw Failed(strf("round %d: another event after SQ_DRAINED: %s", r, what.c_str()));
	}
	poll_more();
	if (n != at_event)
		throw Failed(strf("round %d: %d WRs completed in SQD after SQ_DRAINED (%d at the event): SQD "
				  "started new WRs, or the event came before they were done",
				  r, n - at_event, at_event));
	if (qp_state(qa_.get()) != IBV_QPS_SQD)
		throw Failed(strf("round %d: A's QP in %s after SQ_DRAINED, want SQD", r,
				  qp_state_str(qp_state(qa_.get()))));
	a = {};
	a.qp_state = IBV_QPS_RTS;
	modify(a_, qa_.get(), a, IBV_QP_STATE, "SQD -> RTS");
	// Back in RTS: the held WRs go out and complete.
	auto t1 = Clock::now();
	while (n < o_.wrs && secs_since(t1) < o_.timeout)
		poll_more();
	if (n != o_.wrs)
		throw Failed(strf("round %d: %d of %d WRs completed %d s after SQD -> RTS", r, n, o_.wrs, o_.timeout));
	for (int i = 0; i < n; i++)
		if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != static_cast<uint64_t>(i))
			throw Failed(strf("round %d: completion %d: WR %llu, %s (want WR %d, success, in order)", r, i,
					  static_cast<unsigned long long>(wc[i].wr_id), ibv_wc_status_str(wc[i].status),
					  i));
	// B's side of UD: the receives completed (UC/RC WRITEs consume none).
	if (t_ == IBV_QPT_UD) {
		auto rw = collect(b_, b_.rcq.get(), o_.wrs, std::chrono::seconds(o_.timeout));
		if (static_cast<int>(rw.size()) != o_.wrs)
			throw Failed(strf("round %d: B received %zu of %d datagrams", r, rw.size(), o_.wrs));
	}
	std::printf("  %s round %d: %d of %d WRs done at RTS -> SQD, %d at SQ_DRAINED %.3f s later, "
		    "the other %d held until RTS\n",
		    name_, r, before, o_.wrs, at_event, at, o_.wrs - at_event);
}

void usage(FILE *f)
{
	std::fprintf(f,
		     "usage: sqd_notify [options]\n"
		     "%s"
		     "  --types LIST                RC,UC,UD (default all)\n"
		     "  --rounds N                  RTS -> SQD -> RTS cycles per type (default 10)\n"
		     "  --wrs N                     send WRs posted before each move (default 8)\n"
		     "  --size BYTES                RC/UC WRITE size, K/M suffixes (default 1M)\n"
		     "  --timeout SECS              wait for the event this long (default 10)\n"
		     "Exit status: 0 all checks passed, 1 a check failed, 2 setup/usage error.\n",
		     kCommonUsage);
}

} // namespace

int main(int argc, char **argv)
{
	return guarded_main("sqd_notify", [&] {
		Options o;
		enum { O_TYPES = 256, O_ROUNDS, O_WRS, O_SIZE, O_TIMEOUT };
		int rc = parse_args(argc, argv, o, "h",
				    {{"types", required_argument, nullptr, O_TYPES},
				     {"rounds", required_argument, nullptr, O_ROUNDS},
				     {"wrs", required_argument, nullptr, O_WRS},
				     {"size", required_argument, nullptr, O_SIZE},
				     {"timeout", required_argument, nullptr, O_TIMEOUT}},
				    usage, [&](int c, const char *arg) {
					    switch (c) {
					    case O_TYPES: o.types = parse_name_list(arg, kTypeNames, "QP type"); return true;
					    case O_ROUNDS: o.rounds = std::stoi(arg); return true;
					    case O_WRS: o.wrs = std::stoi(arg); return true;
					    case O_SIZE: o.size = parse_size(arg); return true;
					    case O_TIMEOUT: o.timeout = std::stoi(arg); return true;
					    default: return false;
					    }
				    });
		if (rc >= 0)
			return rc;
		if (o.rounds < 1 || o.wrs < 1 || o.wrs > 64 || o.size < 1 || o.size > (64u << 20) || o.timeout < 1)
			throw Error("--rounds, --timeout at least 1; --wrs 1-64; --size 1 B to 64 MiB");
		int failed = 0;
		for (int ti = 0; ti < 3; ti++) {
			if (!(o.types & (1u << ti)))
				continue;
			std::printf("--- %s: %d rounds of %d WRs, RTS -> SQD at once, one SQ_DRAINED each\n",
				    kTypeNames[ti], o.rounds, o.wrs);
			std::fflush(stdout);
			auto a = open_endpoint("A", o.a, o.ipv6, false, 4 * o.wrs + 8);
			auto b = open_endpoint("B", o.b, o.ipv6, false, 4 * o.wrs + 8);
			Run run(o, *a, *b, ti);
			run.setup();
			try {
				for (int r = 1; r <= o.rounds; r++)
					run.round(r);
				// RC and UC: a move with nothing in progress checks little.
				if (kTypes[ti] != IBV_QPT_UD && !run.drained_in_flight)
					throw Failed(strf("no round moved to SQD with a message in progress (%d WRs of "
							  "%zu bytes): draining one was never checked",
							  o.wrs, o.size));
				std::printf("PASS %s %d rounds, %d draining a message in progress\n", kTypeNames[ti],
					    o.rounds, run.drained_in_flight);
			} catch (const Failed &e) {
				std::printf("  FAIL: %s\n", e.what());
				std::printf("FAIL %s\n", kTypeNames[ti]);
				failed++;
			}
			std::fflush(stdout);
		}
		return failed ? 1 : 0;
	});
}
