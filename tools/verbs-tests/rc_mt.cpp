// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// rc_mt: one RC QP shared by several threads. libibverbs requires a QP to
// take ibv_post_send/ibv_post_recv from any number of threads at once, the
// ibv_wr_* builder to lock the QP from ibv_wr_start to ibv_wr_complete /
// ibv_wr_abort (man ibv_wr_post, CONCURRENCY), and a CQ to be polled from
// several threads (ibv_poll_cq, and ibv_start_poll .. ibv_end_poll on a CQ
// created by ibv_create_cq_ex). This test does all of that at once.
//
// One process, two RC QPs connected to each other (two devices, or the same
// device twice). A is the requester, B the responder.
//
//  - `--threads` sender threads post to A's one QP, each from its own slots
//    (a local buffer on A and a remote region on B per slot) and its own
//    wr_id space (thread, slot, sequence number), with `--depth` WRs in
//    flight per thread: SEND and SEND_WITH_IMM (a header naming thread,
//    sequence number, length and pattern, then the pattern), RDMA WRITE and
//    RDMA READ, random sizes, SGE lists, inline data (the source is
//    overwritten right after the post), chains of WRs in one post.
//  - `--recv-threads` threads post receives to B's one RQ (chains too),
//    each from its own receive slots; together exactly as many as there
//    are SENDs.
//  - `--pollers` threads poll A's send CQ and as many poll B's receive CQ.
//    Whoever polls a completion checks it: status, opcode, qp_num,
//    byte_len, immediate data, exactly once per wr_id, the data (a WRITE
//    target on B, a READ sink on A, a received message against the header
//    and the sender's plan), and that the sequence numbers of each sender
//    thread rise in the order this poller saw them (RC completes a QP's
//    WRs in order, and a thread posts its WRs in order; posts of different
//    threads interleave). The slot then goes back to its owner.
//
// Phases (--phases, default all, on the same QPs in turn):
//   post   ibv_post_send / ibv_post_recv, pollers use ibv_poll_cq
//   wr     senders use ibv_wr_start .. ibv_wr_complete (and now and then a
//          WR built and dropped with ibv_wr_abort, which must never
//          complete); pollers use ibv_start_poll .. ibv_end_poll
//   mixed  even senders post_send, odd ones ibv_wr_*; half the pollers of
//          each CQ use ibv_poll_cq, the other half ibv_start_poll
// After each phase: every WR completed exactly once, every SEND received
// exactly once, nothing else completes, both QPs still in RTS.

#include "common.h"
#include "pattern.h"

#include <endian.h>
#include <getopt.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cinttypes>
#include <condition_variable>
#include <cstring>
#include <latch>
#include <mutex>
#include <thread>

using namespace vt;

namespace {

enum Kind : uint8_t { K_SEND, K_SEND_IMM, K_WRITE, K_READ, K_NKINDS };
const char *const kind_name[K_NKINDS] = {"SEND", "SEND_IMM", "WRITE", "READ"};

enum PhaseKind { PH_POST, PH_WR, PH_MIXED, PH_N };
const char *const phase_name[PH_N] = {"post", "wr", "mixed"};

struct Options : CommonOptions {
	unsigned threads = 4, recv_threads = 0, pollers = 3;
	uint64_t msgs = 2000; // per sender thread and phase
	size_t max_size = 8192;
	unsigned depth = 8, recv_depth = 16;
	unsigned kinds = (1u << K_NKINDS) - 1;
	unsigned phases = (1u << PH_N) - 1;
	uint64_t seed = 0;
	bool seed_given = false;
	unsigned timeout = 60; // seconds without progress
	int verbose = 0;
};

constexpr uint32_t kMagic = 0x4d54534e; // "NSTM"
constexpr size_t kHdr = 32;
constexpr uint64_t kAbortMark = 0xab;
constexpr uint64_t kRecvMark = 0x52;

struct Hdr {
	uint32_t magic;
	uint16_t thread;
	uint8_t phase;
	uint8_t kind;
	uint32_t seq;
	uint32_t len;
	uint64_t tag;
	uint64_t pad;
};
static_assert(sizeof(Hdr) == kHdr);

// wr_ids: kind/mark (8) | thread (8) | slot (16) | seq or generation (32)
uint64_t make_id(uint64_t mark, unsigned t, unsigned slot, uint32_t seq)
{
	return mark << 56 | uint64_t{t & 0xff} << 48 | uint64_t{slot & 0xffff} << 32 | seq;
}

struct Plan {
	Kind kind;
	uint32_t len;
	uint64_t tag;
};

enum SlotState : int { S_FREE, S_POSTED, S_DONE };

struct SendSlot {
	std::atomic<int> state{S_FREE};
	uint32_t seq = 0;
	Plan plan{};
	bool inlined = false;
};

// A sender thread or a receive poster: its slots and the list of the free
// ones (filled by the pollers).
struct Owner {
	unsigned id = 0;
	std::unique_ptr<SendSlot[]> sslots; // senders
	std::unique_ptr<std::atomic<int>[]> rstate; // receivers
	std::unique_ptr<uint32_t[]> rgen;
	std::mutex mu;
	std::condition_variable cv;
	std::vector<unsigned> free;
	std::atomic<uint64_t> posted{0};
	bool use_wr = false;
	uint64_t inlined = 0, chains = 0, aborted = 0, split = 0;

	void give_back(unsigned slot)
	{
		{
			std::lock_guard<std::mutex> g(mu);
			free.push_back(slot);
		}
		cv.notify_one();
	}
};

// One completion, whichever API polled it.
struct Wc {
	uint64_t wr_id;
	ibv_wc_status status;
	ibv_wc_opcode opcode;
	uint32_t vendor_err, byte_len, qp_num;
	unsigned wc_flags;
	uint32_t imm_be;
};

struct Poller {
	unsigned id = 0;
	bool recv = false; // B's receive CQ, else A's send CQ
	bool use_ex = false;
	std::vector<int64_t> last_seq; // per sender thread
	uint64_t cqes = 0, polls = 0, empty = 0, max_batch = 0;
};

class Test {
public:
	explicit Test(const Options &o) : opt_(o) {}
	int run();

private:
	Options opt_;
	std::unique_ptr<Endpoint> ep_[2];
	ibv_cq_ex *cqx_[2][2] = {}; // [side][0 send, 1 recv]
	ibv_qp_ex *qpx_ = nullptr;   // A's
	Buffer abuf_, bbuf_;
	MrPtr amr_, bmr_;
	size_t slot_size_ = 0;
	size_t recv_area_ = 0; // offset of the receive slots in bbuf_
	uint32_t max_inline_ = 0;
	ibv_mtu path_mtu_ = IBV_MTU_1024;

	// Per phase.
	unsigned phase_ = 0;
	std::vector<std::unique_ptr<Owner>> senders_, receivers_;
	std::unique_ptr<std::atomic<uint8_t>[]> sent_, seen_; // [thread * msgs + seq]
	uint64_t expect_send_ = 0, expect_recv_ = 0;
	std::atomic<uint64_t> send_cqes_{0}, recv_cqes_{0};
	std::atomic<int64_t> recv_to_post_{0};
	std::atomic<bool> stop_{false};
	std::unique_ptr<std::latch> start_; // senders and receive posters start together
	std::mutex fail_mu_;
	std::string fail_msg_;
	uint64_t count_[K_NKINDS] = {}, bytes_ = 0;

	void fail(const std::string &m);
	Plan plan(unsigned t, uint32_t seq) const;
	uint8_t *aslot(unsigned t, unsigned s) const { return abuf_.data() + (t * opt_.depth + s) * slot_size_; }
	uint8_t *bregion(unsigned t, unsigned s) const { return bbuf_.data() + (t * opt_.depth + s) * slot_size_; }
	uint8_t *rslot(unsigned r, unsigned s) const
	{
		return bbuf_.data() + recv_area_ + (r * opt_.recv_depth + s) * slot_size_;
	}
	void setup();
	ibv_cq_ex *make_cq(Endpoint &ep, int cqe);
	void make_qp(Endpoint &ep);
	bool run_phase(PhaseKind ph);
	void sender(Owner &o);
	void receiver(Owner &o);
	void poller(Poller &p);
	void handle_send(Poller &p, const Wc &wc);
	void handle_recv(Poller &p, const Wc &wc);
	bool take_free(Owner &o, unsigned want, std::vector<unsigned> &got);
	std::string state_dump();
};

void Test::fail(const std::string &m)
{
	{
		std::lock_guard<std::mutex> g(fail_mu_);
		if (fail_msg_.empty())
			fail_msg_ = m;
	}
	stop_ = true;
	for (auto *v : {&senders_, &receivers_})
		for (auto &o : *v)
			o->cv.notify_all();
}

Plan Test::plan(unsigned t, uint32_t seq) const
{
	Rng r(mix64(opt_.seed ^ (uint64_t{phase_ + 1} * 0x9e3779b97f4a7c15ULL) ^
		    (uint64_t{t + 1} * 0xbf58476d1ce4e5b9ULL) ^ (uint64_t{seq} * 0x94d049bb133111ebULL)));
	Plan p{};
	static const unsigned weight[K_NKINDS] = {40, 15, 30, 15};
	unsigned total = 0;
	for (int k = 0; k < K_NKINDS; k++)
		if (opt_.kinds & (1u << k))
			total += weight[k];
	unsigned x = static_cast<unsigned>(r.range(0, total - 1));
	for (int k = 0; k < K_NKINDS; k++) {
		if (!(opt_.kinds & (1u << k)))
			continue;
		if (x < weight[k]) {
			p.kind = static_cast<Kind>(k);
			break;
		}
		x -= weight[k];
	}
	size_t lo = p.kind == K_SEND || p.kind == K_SEND_IMM ? kHdr : 0;
	size_t hi = opt_.max_size;
	size_t mtu = size_t{128} << path_mtu_;
	unsigned c = static_cast<unsigned>(r.range(0, 99));
	size_t len;
	if (c < 3 && lo == 0) {
		len = 0;
	} else if (c < 15) {
		const size_t edges[] = {lo, lo + 1, mtu - 1, mtu, mtu + 1, 2 * mtu, max_inline_, max_inline_ + 1, hi};
		len = edges[r.range(0, std::size(edges) - 1)];
	} else {
		unsigned maxbit = 63 - __builtin_clzll(std::max<size_t>(hi, 1));
		unsigned b = static_cast<unsigned>(r.range(0, maxbit));
		len = r.range(size_t{1} << b, std::min(hi, (size_t{2} << b) - 1));
	}
	p.len = static_cast<uint32_t>(std::clamp(len, lo, hi));
	p.tag = r.next();
	return p;
}

// --- setup ---------------------------------------------------------------------------

ibv_cq_ex *Test::make_cq(Endpoint &ep, int cqe)
{
	ibv_cq_init_attr_ex ca{};
	ca.cqe = static_cast<uint32_t>(std::min(cqe, ep.dattr.max_cqe));
	ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM;
	ibv_cq_ex *cq = ibv_create_cq_ex(ep.ctx.get(), &ca);
	if (!cq)
		throw_errno(strf("%s: ibv_create_cq_ex(%u)", ep.label.c_str(), ca.cqe), errno);
	return cq;
}

void Test::make_qp(Endpoint &ep)
{
	ibv_qp_init_attr_ex ia{};
	ia.qp_type = IBV_QPT_RC;
	ia.send_cq = ep.scq.get();
	ia.recv_cq = ep.rcq.get();
	ia.pd = ep.pd.get();
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |
			    IBV_QP_EX_WITH_RDMA_READ;
	ia.cap.max_send_wr = std::min<uint32_t>(opt_.threads * opt_.depth + 4, ep.dattr.max_qp_wr);
	ia.cap.max_recv_wr = std::min<uint32_t>(opt_.recv_threads * opt_.recv_depth + 4, ep.dattr.max_qp_wr);
	ia.cap.max_send_sge = ia.cap.max_recv_sge = std::min(4, ep.dattr.max_sge);
	ibv_qp *qp = nullptr;
	for (uint32_t inl : {256u, 128u, 64u, 0u}) {
		ia.cap.max_inline_data = inl;
		qp = ibv_create_qp_ex(ep.ctx.get(), &ia);
		if (qp || errno != EINVAL)
			break;
	}
	if (!qp)
		throw_errno(strf("%s: ibv_create_qp_ex(RC, send_wr %u recv_wr %u, send_ops_flags)", ep.label.c_str(),
				 ia.cap.max_send_wr, ia.cap.max_recv_wr),
			    errno);
	ep.qp.reset(qp);
	ep.cap = ia.cap;
	if (ep.cap.max_send_sge < 3 || ep.cap.max_recv_sge < 2)
		throw Error("QP has too few SGEs");
}

void Test::setup()
{
	if (!opt_.recv_threads)
		opt_.recv_threads = opt_.threads;
	int scqe = static_cast<int>(opt_.threads * opt_.depth + 16);
	int rcqe = static_cast<int>(opt_.recv_threads * opt_.recv_depth + 16);
	for (int i = 0; i < 2; i++) {
		ep_[i] = open_endpoint(i ? "B" : "A", i ? opt_.b : opt_.a, opt_.ipv6, false, 16);
		Endpoint &e = *ep_[i];
		// Replace the plain CQs by extended ones (ibv_poll_cq works on both).
		e.scq.reset();
		e.rcq.reset();
		cqx_[i][0] = make_cq(e, 2 * scqe);
		e.scq.reset(ibv_cq_ex_to_cq(cqx_[i][0]));
		cqx_[i][1] = make_cq(e, 2 * rcqe);
		e.rcq.reset(ibv_cq_ex_to_cq(cqx_[i][1]));
	}
	for (auto &e : ep_)
		make_qp(*e);
	qpx_ = ibv_qp_to_qp_ex(ep_[0]->qp.get());
	if (!qpx_)
		throw Error("ibv_qp_to_qp_ex returned NULL for a QP created with send_ops_flags");
	max_inline_ = ep_[0]->cap.max_inline_data;

	ConnParams pa, pb;
	pa.mtu = pb.mtu = path_mtu_ = pick_mtu(*ep_[0], *ep_[1], opt_.mtu);
	pa.psn = static_cast<uint32_t>(mix64(opt_.seed ^ 1)) & 0xffffff;
	pb.psn = static_cast<uint32_t>(mix64(opt_.seed ^ 2)) & 0xffffff;
	connect_pair(*ep_[0], *ep_[1], pa, pb);

	slot_size_ = (opt_.max_size + 63) & ~size_t{63};
	size_t nsend = size_t{opt_.threads} * opt_.depth, nrecv = size_t{opt_.recv_threads} * opt_.recv_depth;
	abuf_ = Buffer(nsend * slot_size_);
	recv_area_ = nsend * slot_size_;
	bbuf_ = Buffer(recv_area_ + nrecv * slot_size_);
	const unsigned acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	amr_ = reg_mr(ep_[0]->pd.get(), abuf_.data(), abuf_.size(), acc);
	bmr_ = reg_mr(ep_[1]->pd.get(), bbuf_.data(), bbuf_.size(), acc);

	for (auto &e : ep_)
		std::printf("%s: %s gid[%d] %s qpn 0x%x send_wr %u recv_wr %u max_inline %u\n", e->label.c_str(),
			    e->devname.c_str(), e->gid_index, gid_str(e->gid).c_str(), e->qpn(), e->cap.max_send_wr,
			    e->cap.max_recv_wr, e->cap.max_inline_data);
	std::printf("path_mtu %s, %u senders x depth %u, %u receive posters x %u, %u pollers per CQ, %" PRIu64
		    " WRs per sender and phase, max size %zu\n",
		    mtu_str(path_mtu_), opt_.threads, opt_.depth, opt_.recv_threads, opt_.recv_depth, opt_.pollers,
		    opt_.msgs, opt_.max_size);
	std::fflush(stdout);
}

// --- senders ---------------------------------------------------------------------------

// Wait until o has a free slot (or the test stops); take up to want.
bool Test::take_free(Owner &o, unsigned want, std::vector<unsigned> &got)
{
	got.clear();
	std::unique_lock<std::mutex> g(o.mu);
	while (o.free.empty()) {
		if (stop_)
			return false;
		o.cv.wait_for(g, std::chrono::milliseconds(50));
	}
	while (!o.free.empty() && got.size() < want) {
		got.push_back(o.free.back());
		o.free.pop_back();
	}
	return true;
}

void Test::sender(Owner &o)
{
	const unsigned t = o.id;
	Rng r(mix64(opt_.seed ^ 0x73656e64ULL ^ (uint64_t{phase_} << 40) ^ t));
	Endpoint &a = *ep_[0];
	std::vector<unsigned> slots;
	uint32_t seq = 0;
	start_->arrive_and_wait();
	try {
		while (seq < opt_.msgs && !stop_) {
			unsigned want = r.chance(30) ? static_cast<unsigned>(r.range(2, 3)) : 1;
			want = static_cast<unsigned>(std::min<uint64_t>(want, opt_.msgs - seq));
			if (!take_free(o, want, slots))
				break;
			if (o.use_wr && r.chance(5)) {
				// A WR built and dropped: it must never complete.
				ibv_wr_start(qpx_);
				qpx_->wr_id = make_id(kAbortMark, t, 0, seq);
				qpx_->wr_flags = IBV_SEND_SIGNALED;
				ibv_wr_send(qpx_);
				ibv_wr_set_sge(qpx_, amr_->lkey, reinterpret_cast<uintptr_t>(aslot(t, slots[0])), kHdr);
				ibv_wr_abort(qpx_);
				o.aborted++;
			}
			struct Item {
				unsigned slot;
				SendSlot *s;
				ibv_sge sge[3];
				int nsge;
				ibv_send_wr wr;
			};
			std::vector<Item> items(slots.size());
			for (size_t i = 0; i < slots.size(); i++) {
				Item &it = items[i];
				it.slot = slots[i];
				it.s = &o.sslots[it.slot];
				SendSlot &s = *it.s;
				s.seq = seq++;
				s.plan = plan(t, s.seq);
				uint8_t *src = aslot(t, it.slot);
				uint32_t len = s.plan.len;
				switch (s.plan.kind) {
				case K_SEND:
				case K_SEND_IMM: {
					Hdr h{kMagic, static_cast<uint16_t>(t), static_cast<uint8_t>(phase_),
					      s.plan.kind, s.seq, len, s.plan.tag, 0};
					std::memcpy(src, &h, kHdr);
					fill_stream(src + kHdr, len - kHdr, s.plan.tag, kHdr);
					break;
				}
				case K_WRITE:
					fill_stream(src, len, s.plan.tag, 0);
					break;
				case K_READ:
					fill_stream(bregion(t, it.slot), len, s.plan.tag, 0);
					break;
				default:
					break;
				}
				s.inlined = s.plan.kind != K_READ && len <= max_inline_ && r.chance(25);
				// The SGE list: 1..3 pieces of the slot.
				it.nsge = 0;
				if (len) {
					unsigned n = len >= 3 && r.chance(30) ? static_cast<unsigned>(r.range(2, 3)) : 1;
					uint32_t c1 = n > 1 ? static_cast<uint32_t>(r.range(1, len - (n - 1))) : len;
					uint32_t c2 = n > 2 ? static_cast<uint32_t>(r.range(c1 + 1, len - 1)) : len;
					uint32_t cuts[4] = {0, c1, c2, len};
					for (unsigned k = 0; k < n; k++)
						it.sge[k] = {reinterpret_cast<uintptr_t>(src) + cuts[k], cuts[k + 1] - cuts[k],
							     amr_->lkey};
					it.nsge = static_cast<int>(n);
					if (n > 1)
						o.split++;
				}
				ibv_send_wr &wr = it.wr;
				wr = {};
				wr.wr_id = make_id(s.plan.kind, t, it.slot, s.seq);
				wr.sg_list = it.nsge ? it.sge : nullptr;
				wr.num_sge = it.nsge;
				wr.send_flags = IBV_SEND_SIGNALED | (s.inlined ? IBV_SEND_INLINE : 0);
				uint64_t raddr = reinterpret_cast<uintptr_t>(bregion(t, it.slot));
				switch (s.plan.kind) {
				case K_SEND: wr.opcode = IBV_WR_SEND; break;
				case K_SEND_IMM:
					wr.opcode = IBV_WR_SEND_WITH_IMM;
					wr.imm_data = htobe32(t << 24 | (s.seq & 0xffffff));
					break;
				case K_WRITE:
					wr.opcode = IBV_WR_RDMA_WRITE;
					wr.wr.rdma = {raddr, bmr_->rkey};
					break;
				default:
					wr.opcode = IBV_WR_RDMA_READ;
					wr.wr.rdma = {raddr, bmr_->rkey};
					break;
				}
				if (i)
					items[i - 1].wr.next = &wr;
				// Published before the post: a poller may see the completion at once.
				s.state.store(S_POSTED, std::memory_order_release);
			}
			if (items.size() > 1)
				o.chains++;
			int rc;
			if (!o.use_wr) {
				ibv_send_wr *bad = nullptr;
				rc = ibv_post_send(a.qp.get(), &items[0].wr, &bad);
				if (rc) {
					fail(strf("sender %u: ibv_post_send of %zu WR(s) from seq %u: %s (%d), bad_wr %s",
						  t, items.size(), items[0].s->seq, strerror(rc), rc,
						  bad ? strf("seq %u", static_cast<uint32_t>(bad->wr_id)).c_str() : "NULL"));
					break;
				}
			} else {
				ibv_wr_start(qpx_);
				for (auto &it : items) {
					const ibv_send_wr &wr = it.wr;
					qpx_->wr_id = wr.wr_id;
					qpx_->wr_flags = IBV_SEND_SIGNALED;
					switch (wr.opcode) {
					case IBV_WR_SEND: ibv_wr_send(qpx_); break;
					case IBV_WR_SEND_WITH_IMM: ibv_wr_send_imm(qpx_, wr.imm_data); break;
					case IBV_WR_RDMA_WRITE:
						ibv_wr_rdma_write(qpx_, wr.wr.rdma.rkey, wr.wr.rdma.remote_addr);
						break;
					default: ibv_wr_rdma_read(qpx_, wr.wr.rdma.rkey, wr.wr.rdma.remote_addr); break;
					}
					if (it.s->inlined) {
						ibv_data_buf db[3];
						for (int k = 0; k < it.nsge; k++)
							db[k] = {reinterpret_cast<void *>(it.sge[k].addr), it.sge[k].length};
						if (it.nsge == 1)
							ibv_wr_set_inline_data(qpx_, db[0].addr, db[0].length);
						else
							ibv_wr_set_inline_data_list(qpx_, it.nsge, db);
					} else if (it.nsge == 1) {
						ibv_wr_set_sge(qpx_, it.sge[0].lkey, it.sge[0].addr, it.sge[0].length);
					} else {
						ibv_wr_set_sge_list(qpx_, it.nsge, it.nsge ? it.sge : nullptr);
					}
				}
				rc = ibv_wr_complete(qpx_);
				if (rc) {
					fail(strf("sender %u: ibv_wr_complete of %zu WR(s) from seq %u: %s (%d)", t,
						  items.size(), items[0].s->seq, strerror(rc), rc));
					break;
				}
			}
			o.posted += items.size();
			// Inline data was copied at post time: spoil the source.
			for (auto &it : items)
				if (it.s->inlined) {
					std::memset(aslot(t, it.slot), 0xa5, it.s->plan.len);
					o.inlined++;
				}
		}
	} catch (const std::exception &e) {
		fail(strf("sender %u: %s", t, e.what()));
	}
}

// --- receive posters ----------------------------------------------------------------------

void Test::receiver(Owner &o)
{
	const unsigned rid = o.id;
	Rng r(mix64(opt_.seed ^ 0x72656376ULL ^ (uint64_t{phase_} << 40) ^ rid));
	Endpoint &b = *ep_[1];
	const size_t burst = std::min(4u, opt_.recv_depth);
	std::vector<unsigned> mine, slots;
	start_->arrive_and_wait();
	while (!stop_) {
		// Take free slots in bursts (a few, or what came within 2 ms) and
		// post them chain after chain: the posters then tend to be in
		// ibv_post_recv at the same time.
		{
			std::unique_lock<std::mutex> g(o.mu);
			auto deadline = Clock::now() + std::chrono::milliseconds(2);
			while (o.free.size() < burst) {
				if (stop_)
					return;
				if (!o.free.empty() && Clock::now() >= deadline)
					break;
				o.cv.wait_for(g, std::chrono::milliseconds(1));
			}
			mine.insert(mine.end(), o.free.begin(), o.free.end());
			o.free.clear();
		}
		while (!mine.empty() && !stop_) {
			unsigned want = r.chance(30) ? static_cast<unsigned>(r.range(2, 4)) : 1;
			// Claim up to want of the receives still to post.
			int64_t cur = recv_to_post_.load();
			int64_t n;
			do {
				n = std::min<int64_t>({cur, want, static_cast<int64_t>(mine.size())});
			} while (n > 0 && !recv_to_post_.compare_exchange_weak(cur, cur - n));
			if (n <= 0) {
				// All receives are posted: done.
				std::lock_guard<std::mutex> g(o.mu);
				o.free.insert(o.free.end(), mine.begin(), mine.end());
				return;
			}
			slots.assign(mine.end() - n, mine.end());
			mine.resize(mine.size() - n);
			std::vector<ibv_recv_wr> wrs(slots.size());
			std::vector<std::array<ibv_sge, 2>> sges(slots.size());
			for (size_t i = 0; i < slots.size(); i++) {
				unsigned sl = slots[i];
				uint8_t *buf = rslot(rid, sl);
				uint32_t cap = static_cast<uint32_t>(opt_.max_size);
				ibv_recv_wr &wr = wrs[i];
				wr = {};
				if (r.chance(30)) {
					uint32_t c = static_cast<uint32_t>(r.range(1, cap - 1));
					sges[i][0] = {reinterpret_cast<uintptr_t>(buf), c, bmr_->lkey};
					sges[i][1] = {reinterpret_cast<uintptr_t>(buf) + c, cap - c, bmr_->lkey};
					wr.num_sge = 2;
				} else {
					sges[i][0] = {reinterpret_cast<uintptr_t>(buf), cap, bmr_->lkey};
					wr.num_sge = 1;
				}
				wr.sg_list = sges[i].data();
				uint32_t gen = ++o.rgen[sl];
				wr.wr_id = make_id(kRecvMark, rid, sl, gen);
				if (i)
					wrs[i - 1].next = &wr;
				o.rstate[sl].store(S_POSTED, std::memory_order_release);
			}
			if (wrs.size() > 1)
				o.chains++;
			ibv_recv_wr *bad = nullptr;
			int rc = ibv_post_recv(b.qp.get(), wrs.data(), &bad);
			if (rc) {
				fail(strf("receive poster %u: ibv_post_recv of %zu WR(s): %s (%d)", rid, wrs.size(),
					  strerror(rc), rc));
				return;
			}
			o.posted += wrs.size();
		}
	}
}

// --- pollers -----------------------------------------------------------------------------

void Test::handle_send(Poller &p, const Wc &wc)
{
	const Endpoint &a = *ep_[0];
	uint64_t mark = wc.wr_id >> 56;
	unsigned t = (wc.wr_id >> 48) & 0xff, sl = (wc.wr_id >> 32) & 0xffff;
	uint32_t seq = static_cast<uint32_t>(wc.wr_id);
	auto who_s = [&] {
		return strf("send CQ poller %u: wr_id 0x%016" PRIx64 " (sender %u slot %u seq %u)", p.id, wc.wr_id, t, sl,
			    seq);
	};
	if (wc.status != IBV_WC_SUCCESS)
		return fail(strf("%s: status %s (%d), vendor_err 0x%x", who_s().c_str(), ibv_wc_status_str(wc.status),
				 wc.status, wc.vendor_err));
	if (mark == kAbortMark)
		return fail(who_s() + ": a WR dropped with ibv_wr_abort completed");
	if (mark >= K_NKINDS || t >= opt_.threads || sl >= opt_.depth || seq >= opt_.msgs)
		return fail(who_s() + ": not a wr_id of this test");
	SendSlot &s = senders_[t]->sslots[sl];
	int st = S_POSTED;
	if (!s.state.compare_exchange_strong(st, S_DONE, std::memory_order_acq_rel) || s.seq != seq)
		return fail(strf("%s: the slot is not outstanding with this seq (state %d, seq %u): a duplicate or "
				 "stale completion",
				 who_s().c_str(), st, s.seq));
	if (sent_[t * opt_.msgs + seq].exchange(1))
		return fail(who_s() + ": completed twice");
	const Plan &pl = s.plan;
	if (mark != pl.kind)
		return fail(strf("%s: kind %s in wr_id, %s planned", who_s().c_str(), kind_name[mark], kind_name[pl.kind]));
	ibv_wc_opcode want = pl.kind == K_WRITE ? IBV_WC_RDMA_WRITE : pl.kind == K_READ ? IBV_WC_RDMA_READ : IBV_WC_SEND;
	if (wc.opcode != want)
		return fail(strf("%s %s len %u: opcode %s, expected %s", who_s().c_str(), kind_name[pl.kind], pl.len,
				 wc_opcode_str(wc.opcode), wc_opcode_str(want)));
	if (wc.qp_num != a.qpn())
		return fail(strf("%s: qp_num 0x%x, expected 0x%x", who_s().c_str(), wc.qp_num, a.qpn()));
	if (pl.kind == K_READ && wc.byte_len != pl.len)
		return fail(strf("%s READ len %u: byte_len %u", who_s().c_str(), pl.len, wc.byte_len));
	if (p.last_seq[t] >= static_cast<int64_t>(seq))
		return fail(strf("%s: completion order: this poller saw seq %" PRId64 " of sender %u before seq %u",
				 who_s().c_str(), p.last_seq[t], t, seq));
	p.last_seq[t] = seq;
	const uint8_t *data = nullptr;
	const char *where = "";
	if (pl.kind == K_WRITE)
		data = bregion(t, sl), where = "WRITE target on B";
	else if (pl.kind == K_READ)
		data = aslot(t, sl), where = "READ sink on A";
	if (data) {
		size_t m = check_stream(data, pl.len, pl.tag, 0);
		if (m != pl.len)
			return fail(strf("%s %s len %u: %s byte %zu is 0x%02x, expected 0x%02x (%zu bad bytes)", who_s().c_str(),
					 kind_name[pl.kind], pl.len, where, m, data[m], stream_byte(pl.tag, m),
					 count_mismatch(data, pl.len, pl.tag, 0)));
	}
	p.cqes++;
	send_cqes_++;
	senders_[t]->give_back(sl);
}

void Test::handle_recv(Poller &p, const Wc &wc)
{
	const Endpoint &b = *ep_[1];
	uint64_t mark = wc.wr_id >> 56;
	unsigned rid = (wc.wr_id >> 48) & 0xff, sl = (wc.wr_id >> 32) & 0xffff;
	uint32_t gen = static_cast<uint32_t>(wc.wr_id);
	unsigned t = ~0u;
	uint32_t hseq = 0;
	auto who_s = [&] {
		std::string s = strf("receive CQ poller %u: wr_id 0x%016" PRIx64 " (poster %u slot %u)", p.id, wc.wr_id,
				     rid, sl);
		if (t != ~0u)
			s += strf(" message of sender %u seq %u", t, hseq);
		return s;
	};
	if (wc.status != IBV_WC_SUCCESS)
		return fail(strf("%s: status %s (%d), vendor_err 0x%x", who_s().c_str(), ibv_wc_status_str(wc.status),
				 wc.status, wc.vendor_err));
	if (mark != kRecvMark || rid >= opt_.recv_threads || sl >= opt_.recv_depth)
		return fail(who_s() + ": not a receive wr_id of this test");
	Owner &o = *receivers_[rid];
	int st = S_POSTED;
	if (!o.rstate[sl].compare_exchange_strong(st, S_DONE, std::memory_order_acq_rel) || o.rgen[sl] != gen)
		return fail(strf("%s: the receive is not outstanding (state %d, generation %u vs %u): a duplicate or "
				 "stale completion",
				 who_s().c_str(), st, o.rgen[sl], gen));
	if (wc.qp_num != b.qpn())
		return fail(strf("%s: qp_num 0x%x, expected 0x%x", who_s().c_str(), wc.qp_num, b.qpn()));
	if (wc.opcode != IBV_WC_RECV)
		return fail(strf("%s: opcode %s, expected RECV", who_s().c_str(), wc_opcode_str(wc.opcode)));
	uint8_t *buf = rslot(rid, sl);
	Hdr h;
	std::memcpy(&h, buf, kHdr);
	if (wc.byte_len < kHdr || h.magic != kMagic || h.phase != phase_ || h.thread >= opt_.threads ||
	    h.seq >= opt_.msgs)
		return fail(strf("%s: byte_len %u, bad header: magic 0x%08x phase %u thread %u seq %u len %u", who_s().c_str(),
				 wc.byte_len, h.magic, h.phase, h.thread, h.seq, h.len));
	t = h.thread;
	hseq = h.seq;
	Plan pl = plan(t, h.seq);
	if ((pl.kind != K_SEND && pl.kind != K_SEND_IMM) || h.kind != pl.kind || h.len != pl.len || h.tag != pl.tag)
		return fail(strf("%s: header kind %u len %u tag 0x%" PRIx64 ", the sender planned %s len %u tag 0x%" PRIx64,
				 who_s().c_str(), h.kind, h.len, h.tag, kind_name[pl.kind], pl.len, pl.tag));
	if (wc.byte_len != pl.len)
		return fail(strf("%s: byte_len %u, sent %u", who_s().c_str(), wc.byte_len, pl.len));
	bool imm = pl.kind == K_SEND_IMM;
	if (!!(wc.wc_flags & IBV_WC_WITH_IMM) != imm)
		return fail(strf("%s: wc_flags 0x%x, IBV_WC_WITH_IMM %s", who_s().c_str(), wc.wc_flags,
				 imm ? "missing" : "unexpected"));
	if (imm && be32toh(wc.imm_be) != (t << 24 | (h.seq & 0xffffff)))
		return fail(strf("%s: imm_data 0x%08x, expected 0x%08x", who_s().c_str(), be32toh(wc.imm_be),
				 t << 24 | (h.seq & 0xffffff)));
	if (seen_[t * opt_.msgs + h.seq].exchange(1))
		return fail(who_s() + ": received twice");
	if (p.last_seq[t] >= static_cast<int64_t>(h.seq))
		return fail(strf("%s: delivery order: this poller saw seq %" PRId64 " of sender %u before seq %u",
				 who_s().c_str(), p.last_seq[t], t, h.seq));
	p.last_seq[t] = h.seq;
	size_t m = check_stream(buf + kHdr, pl.len - kHdr, pl.tag, kHdr);
	if (m != pl.len - kHdr)
		return fail(strf("%s len %u: received byte %zu is 0x%02x, expected 0x%02x (%zu bad bytes)", who_s().c_str(),
				 pl.len, kHdr + m, buf[kHdr + m], stream_byte(pl.tag, kHdr + m),
				 count_mismatch(buf + kHdr, pl.len - kHdr, pl.tag, kHdr)));
	// Spoil the header: a receive completing without new data shows.
	std::memset(buf, 0xee, kHdr);
	p.cqes++;
	recv_cqes_++;
	o.give_back(sl);
}

void Test::poller(Poller &p)
{
	const Endpoint &e = *ep_[p.recv ? 1 : 0];
	ibv_cq *cq = p.recv ? e.rcq.get() : e.scq.get();
	ibv_cq_ex *cqx = cqx_[p.recv ? 1 : 0][p.recv ? 1 : 0];
	std::atomic<uint64_t> &done = p.recv ? recv_cqes_ : send_cqes_;
	const uint64_t expect = p.recv ? expect_recv_ : expect_send_;
	Rng r(mix64(opt_.seed ^ 0x706f6c6cULL ^ (uint64_t{phase_} << 40) ^ (p.id * 2 + p.recv)));
	unsigned idle = 0;
	try {
		while (!stop_ && done.load() < expect) {
			Wc w[8];
			int n = 0;
			int batch = static_cast<int>(r.range(1, 8));
			p.polls++;
			if (!p.use_ex) {
				ibv_wc wc[8];
				n = ibv_poll_cq(cq, batch, wc);
				if (n < 0)
					return fail(strf("poller %u: ibv_poll_cq: %d", p.id, n));
				for (int i = 0; i < n; i++)
					w[i] = {wc[i].wr_id, wc[i].status, wc[i].opcode, wc[i].vendor_err, wc[i].byte_len,
						wc[i].qp_num, wc[i].wc_flags, wc[i].imm_data};
			} else {
				ibv_poll_cq_attr attr{};
				int rc = ibv_start_poll(cqx, &attr);
				if (rc && rc != ENOENT)
					return fail(strf("poller %u: ibv_start_poll: %s (%d)", p.id, strerror(rc), rc));
				// Copy the entries out and end the poll; check them unlocked.
				while (rc == 0) {
					Wc &x = w[n++];
					x.wr_id = cqx->wr_id;
					x.status = cqx->status;
					x.opcode = ibv_wc_read_opcode(cqx);
					x.vendor_err = ibv_wc_read_vendor_err(cqx);
					x.byte_len = ibv_wc_read_byte_len(cqx);
					x.qp_num = ibv_wc_read_qp_num(cqx);
					x.wc_flags = ibv_wc_read_wc_flags(cqx);
					x.imm_be = x.wc_flags & IBV_WC_WITH_IMM ? ibv_wc_read_imm_data(cqx) : 0;
					if (n == batch)
						break;
					rc = ibv_next_poll(cqx);
					if (rc && rc != ENOENT) {
						ibv_end_poll(cqx);
						return fail(strf("poller %u: ibv_next_poll: %s (%d)", p.id, strerror(rc), rc));
					}
				}
				if (n)
					ibv_end_poll(cqx);
			}
			if (!n) {
				p.empty++;
				if (++idle > 16)
					usleep(200);
				else
					sched_yield();
				continue;
			}
			idle = 0;
			p.max_batch = std::max<uint64_t>(p.max_batch, n);
			for (int i = 0; i < n && !stop_; i++) {
				if (p.recv)
					handle_recv(p, w[i]);
				else
					handle_send(p, w[i]);
			}
		}
	} catch (const std::exception &ex) {
		fail(strf("poller %u: %s", p.id, ex.what()));
	}
}

// --- phases ------------------------------------------------------------------------------------

std::string Test::state_dump()
{
	std::string s = strf("send completions %" PRIu64 "/%" PRIu64 ", receive completions %" PRIu64 "/%" PRIu64
			     ", receives still to post %" PRId64 "\n",
			     send_cqes_.load(), expect_send_, recv_cqes_.load(), expect_recv_, recv_to_post_.load());
	for (auto &o : senders_) {
		unsigned posted = 0;
		std::string outs;
		for (unsigned k = 0; k < opt_.depth; k++)
			if (o->sslots[k].state.load() == S_POSTED) {
				posted++;
				outs += strf(" %u(%s,%u)", o->sslots[k].seq, kind_name[o->sslots[k].plan.kind],
					     o->sslots[k].plan.len);
			}
		s += strf("  sender %u (%s): posted %" PRIu64 ", outstanding %u:%s\n", o->id,
			  o->use_wr ? "ibv_wr_*" : "ibv_post_send", o->posted.load(), posted, outs.c_str());
	}
	for (auto &o : receivers_) {
		unsigned posted = 0;
		for (unsigned k = 0; k < opt_.recv_depth; k++)
			posted += o->rstate[k].load() == S_POSTED;
		s += strf("  receive poster %u: posted %" PRIu64 ", outstanding %u\n", o->id, o->posted.load(), posted);
	}
	return s;
}

bool Test::run_phase(PhaseKind ph)
{
	phase_ = ph;
	stop_ = false;
	fail_msg_.clear();
	send_cqes_ = 0;
	recv_cqes_ = 0;
	senders_.clear();
	receivers_.clear();
	size_t total = size_t{opt_.threads} * opt_.msgs;
	sent_ = std::make_unique<std::atomic<uint8_t>[]>(total);
	seen_ = std::make_unique<std::atomic<uint8_t>[]>(total);
	for (size_t i = 0; i < total; i++)
		sent_[i] = 0, seen_[i] = 0;
	uint64_t cnt[K_NKINDS] = {}, bytes = 0;
	for (unsigned t = 0; t < opt_.threads; t++)
		for (uint32_t s = 0; s < opt_.msgs; s++) {
			Plan p = plan(t, s);
			cnt[p.kind]++;
			bytes += p.len;
		}
	expect_send_ = total;
	expect_recv_ = cnt[K_SEND] + cnt[K_SEND_IMM];
	recv_to_post_ = static_cast<int64_t>(expect_recv_);

	for (unsigned t = 0; t < opt_.threads; t++) {
		auto o = std::make_unique<Owner>();
		o->id = t;
		o->sslots = std::make_unique<SendSlot[]>(opt_.depth);
		for (unsigned k = 0; k < opt_.depth; k++)
			o->free.push_back(opt_.depth - 1 - k);
		o->use_wr = ph == PH_WR || (ph == PH_MIXED && (t & 1));
		senders_.push_back(std::move(o));
	}
	for (unsigned r = 0; r < opt_.recv_threads; r++) {
		auto o = std::make_unique<Owner>();
		o->id = r;
		o->rstate = std::make_unique<std::atomic<int>[]>(opt_.recv_depth);
		o->rgen = std::make_unique<uint32_t[]>(opt_.recv_depth);
		for (unsigned k = 0; k < opt_.recv_depth; k++) {
			o->rstate[k] = S_FREE;
			o->rgen[k] = 0;
			o->free.push_back(opt_.recv_depth - 1 - k);
		}
		receivers_.push_back(std::move(o));
	}
	std::vector<Poller> pollers(2 * opt_.pollers);
	for (unsigned i = 0; i < pollers.size(); i++) {
		Poller &p = pollers[i];
		p.id = i;
		p.recv = i >= opt_.pollers;
		unsigned k = i % opt_.pollers;
		p.use_ex = ph == PH_WR || (ph == PH_MIXED && (k & 1));
		p.last_seq.assign(opt_.threads, -1);
	}

	std::printf("### phase %s: %u senders (%s), %u receive posters, %u+%u pollers (%s): %" PRIu64 " WRs "
		    "(SEND %" PRIu64 " SEND_IMM %" PRIu64 " WRITE %" PRIu64 " READ %" PRIu64 "), %" PRIu64 " bytes\n",
		    phase_name[ph], opt_.threads,
		    ph == PH_POST ? "ibv_post_send" : ph == PH_WR ? "ibv_wr_*" : "even ibv_post_send, odd ibv_wr_*",
		    opt_.recv_threads, opt_.pollers, opt_.pollers,
		    ph == PH_POST ? "ibv_poll_cq" : ph == PH_WR ? "ibv_start_poll" : "ibv_poll_cq and ibv_start_poll",
		    expect_send_, cnt[K_SEND], cnt[K_SEND_IMM], cnt[K_WRITE], cnt[K_READ], bytes);
	std::fflush(stdout);

	auto start = Clock::now();
	start_ = std::make_unique<std::latch>(opt_.threads + opt_.recv_threads);
	std::vector<std::thread> th;
	for (auto &p : pollers)
		th.emplace_back([this, &p] { poller(p); });
	for (auto &o : receivers_)
		th.emplace_back([this, &o] { receiver(*o); });
	for (auto &o : senders_)
		th.emplace_back([this, &o] { sender(*o); });

	// Watchdog: progress, or fail after opt_.timeout seconds without.
	uint64_t last = ~uint64_t{0};
	auto last_change = Clock::now(), last_note = Clock::now();
	while (!stop_) {
		uint64_t prog = send_cqes_ + recv_cqes_;
		for (auto &o : senders_)
			prog += o->posted;
		for (auto &o : receivers_)
			prog += o->posted;
		if (send_cqes_ >= expect_send_ && recv_cqes_ >= expect_recv_)
			break;
		auto now = Clock::now();
		if (prog != last) {
			last = prog;
			last_change = now;
		} else if (now - last_change > std::chrono::seconds(opt_.timeout)) {
			fail(strf("no progress for %u s (stuck):\n%s", opt_.timeout, state_dump().c_str()));
			break;
		}
		if (now - last_note > std::chrono::seconds(10)) {
			last_note = now;
			std::printf("... %" PRIu64 "/%" PRIu64 " send and %" PRIu64 "/%" PRIu64 " receive completions, %.0f s\n",
				    send_cqes_.load(), expect_send_, recv_cqes_.load(), expect_recv_, secs_since(start));
			std::fflush(stdout);
		}
		usleep(20000);
	}
	for (auto &t : th)
		t.join();
	double secs = secs_since(start);
	if (!fail_msg_.empty()) {
		std::fprintf(stderr, "FAIL (seed %" PRIu64 ", phase %s): %s\n", opt_.seed, phase_name[ph], fail_msg_.c_str());
		std::fprintf(stderr, "state: %s", state_dump().c_str());
		return false;
	}

	// Exactly once, everything; nothing more.
	for (unsigned t = 0; t < opt_.threads; t++)
		for (uint32_t s = 0; s < opt_.msgs; s++) {
			Plan p = plan(t, s);
			bool is_send = p.kind == K_SEND || p.kind == K_SEND_IMM;
			if (!sent_[t * opt_.msgs + s] || is_send != !!seen_[t * opt_.msgs + s]) {
				std::fprintf(stderr, "FAIL (seed %" PRIu64 ", phase %s): sender %u seq %u (%s len %u): "
					     "send completion %s, received %s\n",
					     opt_.seed, phase_name[ph], t, s, kind_name[p.kind], p.len,
					     sent_[t * opt_.msgs + s] ? "yes" : "no", seen_[t * opt_.msgs + s] ? "yes" : "no");
				return false;
			}
		}
	usleep(200000);
	for (int i = 0; i < 2; i++)
		for (ibv_cq *cq : {ep_[i]->scq.get(), ep_[i]->rcq.get()}) {
			ibv_wc wc;
			if (ibv_poll_cq(cq, 1, &wc) != 0) {
				std::fprintf(stderr, "FAIL (seed %" PRIu64 ", phase %s): a completion after all work was done, "
					     "on %s's %s CQ: wr_id 0x%016" PRIx64 " status %s opcode %s\n",
					     opt_.seed, phase_name[ph], ep_[i]->label.c_str(), cq == ep_[i]->scq.get() ? "send" : "receive",
					     wc.wr_id, ibv_wc_status_str(wc.status), wc_opcode_str(wc.opcode));
				return false;
			}
		}
	for (auto &e : ep_) {
		ibv_qp_state st = qp_state(e->qp.get());
		if (st != IBV_QPS_RTS) {
			std::fprintf(stderr, "FAIL (seed %" PRIu64 ", phase %s): %s's QP is in %s after the phase\n", opt_.seed,
				     phase_name[ph], e->label.c_str(), qp_state_str(st));
			return false;
		}
	}

	uint64_t inl = 0, chains = 0, aborted = 0, split = 0, rchains = 0;
	for (auto &o : senders_)
		inl += o->inlined, chains += o->chains, aborted += o->aborted, split += o->split;
	for (auto &o : receivers_)
		rchains += o->chains;
	std::string sp, rp;
	unsigned busy_s = 0, busy_r = 0;
	for (auto &p : pollers) {
		(p.recv ? rp : sp) += strf(" %" PRIu64, p.cqes);
		(p.recv ? busy_r : busy_s) += p.cqes > 0;
	}
	std::printf("phase %s: ok, %" PRIu64 " WRs and %" PRIu64 " receives in %.1f s (%.0f WR/s, %.1f MB/s); "
		    "inline %" PRIu64 " SGE lists %" PRIu64 " post chains %" PRIu64 " receive chains %" PRIu64
		    " aborted %" PRIu64 "; completions per poller: send [%s ] receive [%s ]\n",
		    phase_name[ph], expect_send_, expect_recv_, secs, expect_send_ / secs, bytes / secs / 1e6, inl, split,
		    chains, rchains, aborted, sp.c_str(), rp.c_str());
	if (busy_s < 2 && opt_.pollers > 1)
		std::printf("note: only %u send CQ poller(s) got completions\n", busy_s);
	if (busy_r < 2 && opt_.pollers > 1)
		std::printf("note: only %u receive CQ poller(s) got completions\n", busy_r);
	std::fflush(stdout);
	for (int k = 0; k < K_NKINDS; k++)
		count_[k] += cnt[k];
	bytes_ += bytes;
	return true;
}

int Test::run()
{
	setup();
	auto start = Clock::now();
	int n = 0;
	for (int ph = 0; ph < PH_N; ph++) {
		if (!(opt_.phases & (1u << ph)))
			continue;
		if (!run_phase(static_cast<PhaseKind>(ph)))
			return 1;
		n++;
	}
	std::printf("rc_mt: PASS seed=%" PRIu64 " phases=%d threads=%u recv_threads=%u pollers=%u WRs=%" PRIu64
		    " (SEND=%" PRIu64 " SEND_IMM=%" PRIu64 " WRITE=%" PRIu64 " READ=%" PRIu64 ") bytes=%" PRIu64
		    " time=%.1fs\n",
		    opt_.seed, n, opt_.threads, opt_.recv_threads, opt_.pollers,
		    count_[0] + count_[1] + count_[2] + count_[3], count_[0], count_[1], count_[2], count_[3], bytes_,
		    secs_since(start));
	return 0;
}

void usage(FILE *f)
{
	std::fprintf(f,
		     "usage: rc_mt [options]\n"
		     "%s"
		     "  (--use-event is refused: the pollers poll)\n"
		     "  --threads N                 sender threads on A's QP (default 4)\n"
		     "  --recv-threads N            receive posters on B's QP (default: --threads)\n"
		     "  --pollers N                 poller threads per CQ (default 3)\n"
		     "  --msgs N                    WRs per sender thread and phase (default 2000)\n"
		     "  --max-size BYTES            largest message, K/M suffixes (default 8K, at least 64)\n"
		     "  --depth N                   WRs in flight per sender thread (default 8)\n"
		     "  --recv-depth N              receives in flight per receive poster (default 16)\n"
		     "  --ops LIST                  SEND,SEND_IMM,WRITE,READ (default all)\n"
		     "  --phases LIST               post,wr,mixed (default all, in this order)\n"
		     "  --seed S                    random seed (default: from the clock; printed)\n"
		     "  --timeout SECS              fail after this long without progress (default 60)\n"
		     "Exit status: 0 all checks passed, 1 a check failed, 2 setup/usage error.\n",
		     kCommonUsage);
}

} // namespace

int main(int argc, char **argv)
{
	return guarded_main("rc_mt", [&] {
		Options o;
		enum { O_THREADS = 256, O_RTHREADS, O_POLLERS, O_MSGS, O_MAXSIZE, O_DEPTH, O_RDEPTH, O_OPS, O_PHASES, O_SEED, O_TIMEOUT };
		int rc = parse_args(argc, argv, o, "vh",
				    {{"threads", required_argument, nullptr, O_THREADS},
				     {"recv-threads", required_argument, nullptr, O_RTHREADS},
				     {"pollers", required_argument, nullptr, O_POLLERS},
				     {"msgs", required_argument, nullptr, O_MSGS},
				     {"max-size", required_argument, nullptr, O_MAXSIZE},
				     {"depth", required_argument, nullptr, O_DEPTH},
				     {"recv-depth", required_argument, nullptr, O_RDEPTH},
				     {"ops", required_argument, nullptr, O_OPS},
				     {"phases", required_argument, nullptr, O_PHASES},
				     {"seed", required_argument, nullptr, O_SEED},
				     {"timeout", required_argument, nullptr, O_TIMEOUT},
				     {"verbose", no_argument, nullptr, 'v'}},
				    usage, [&](int c, const char *arg) {
					    switch (c) {
					    case O_THREADS: o.threads = std::stoul(arg); break;
					    case O_RTHREADS: o.recv_threads = std::stoul(arg); break;
					    case O_POLLERS: o.pollers = std::stoul(arg); break;
					    case O_MSGS: o.msgs = std::stoull(arg); break;
					    case O_MAXSIZE: o.max_size = parse_size(arg); break;
					    case O_DEPTH: o.depth = std::stoul(arg); break;
					    case O_RDEPTH: o.recv_depth = std::stoul(arg); break;
					    case O_OPS: o.kinds = parse_name_list(arg, kind_name, "operation"); break;
					    case O_PHASES: o.phases = parse_name_list(arg, phase_name, "phase"); break;
					    case O_SEED: o.seed = std::stoull(arg, nullptr, 0); o.seed_given = true; break;
					    case O_TIMEOUT: o.timeout = std::stoul(arg); break;
					    case 'v': o.verbose++; break;
					    default: return false;
					    }
					    return true;
				    });
		if (rc >= 0)
			return rc;
		if (o.threads < 1 || o.threads > 255 || o.recv_threads > 255 || o.pollers < 1 || o.pollers > 64 ||
		    o.msgs < 1 || o.msgs > 0xffffffffULL || o.max_size < 64 || o.max_size > (64u << 20) || o.depth < 1 ||
		    o.depth > 4096 || o.recv_depth < 1 || o.recv_depth > 4096 || !o.kinds || !o.phases)
			throw Error("option out of range");
		if (!o.seed_given)
			o.seed = clock_seed();
		if (o.use_event)
			throw Error("--use-event: rc_mt's pollers poll (their races are what it tests)");
		std::printf("rc_mt: seed %" PRIu64 "\n", o.seed);
		std::fflush(stdout);
		Test t(o);
		return t.run();
	});
}
