// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared receive queues without a kernel:
 *  - ibv_post_srq_recv into a fake ring: the bytes of each WQE, the
 *    producer index, ENOMEM/EINVAL with the right *bad_wr, the wrap;
 *  - create/modify/destroy against a stand-in kernel whose rings live in a
 *    memfd, so the provider really mmap()s them from the "command fd": the
 *    ring is mapped at create, a resize moves the posted WQEs to a new ring
 *    that the provider swaps in (unmapping the old one), a failed remap
 *    leaves the SRQ unusable until the next resize;
 *  - a resize racing posters and a consuming "kernel": every WQE arrives
 *    exactly once, in each thread's order;
 *  - the modify command as the real libibverbs ibv_cmd_modify_srq writes
 *    it (into a pipe): struct ibv_modify_srq, then mi_addr.
 */
#include "fake_rings.h"
#include "provider.h"
#include "srq.h"
#include "test_util.h"
#include "uverbs_pipe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace
{

using namespace sroce;
using namespace sroce::test;

/* An SRQ object bound to a fake ring in plain memory. */
struct fake_srq {
	fake_queue ring;
	obj_ptr<srq> s;

	fake_srq(uint32_t max_wr, uint32_t max_sge, uint32_t start = 0) :
		ring(max_wr,
		     log2_ceil(sizeof(sroce_recv_wqe) + 16ULL * max_sge),
		     start),
		s(c_new<srq>())
	{
		EXPECT_TRUE(
			s->rq.attach(ring.base(), ring.len(), max_wr, max_sge));
	}
	ibv_srq *ibsrq()
	{
		return &s->vsrq.srq;
	}
	sroce_recv_wqe header(uint32_t idx)
	{
		sroce_recv_wqe h{};
		memcpy(&h, ring.slot(idx), sizeof(h));
		return h;
	}
	sroce_sge sge(uint32_t idx, uint32_t i)
	{
		sroce_sge g{};
		memcpy(&g,
		       ring.slot(idx) + sizeof(sroce_recv_wqe) + size_t{16} * i,
		       sizeof(g));
		return g;
	}
};

TEST(PostSrqRecv, EncodesLikeAnRq)
{
	fake_srq f(8, 3);
	ibv_sge sg[3] = {
		{0x1000, 10, 0x11}, {0x2000, 20, 0x22}, {0x3000, 30, 0x33}};
	ibv_recv_wr wr[2] = {make_recv_wr(0xabc, sg, 3),
			     make_recv_wr(0xdef, sg, 1)};
	chain(wr);
	ibv_recv_wr *bad = nullptr;

	ASSERT_EQ(post_srq_recv(f.ibsrq(), wr, &bad), 0);
	EXPECT_EQ(bad, nullptr);
	EXPECT_EQ(f.ring.producer(), 2U);

	const sroce_recv_wqe h0 = {0xabc, 3, 0};
	EXPECT_TRUE(same_bytes(f.ring.slot(0), &h0, sizeof(h0)));
	for (uint32_t i = 0; i < 3; i++) {
		const sroce_sge s = {sg[i].addr, sg[i].length, sg[i].lkey};
		const sroce_sge got = f.sge(0, i);
		EXPECT_TRUE(same_bytes(&got, &s, sizeof(s))) << i;
	}
	EXPECT_EQ(f.header(1).wr_id, 0xdefU);
	EXPECT_EQ(f.header(1).num_sge, 1U);
}

TEST(PostSrqRecv, TooManySgesIsEinvalAndStopsThere)
{
	fake_srq f(8, 2);
	ibv_sge sg[3] = {};
	ibv_recv_wr wr[3] = {};
	for (auto &w : wr)
		w = make_recv_wr(0, sg, 1);
	chain(wr);
	wr[1].num_sge = 3;
	ibv_recv_wr *bad = nullptr;

	EXPECT_EQ(post_srq_recv(f.ibsrq(), wr, &bad), EINVAL);
	EXPECT_EQ(bad, &wr[1]);
	/* What came before the bad one is posted; nothing after it. */
	EXPECT_EQ(f.ring.producer(), 1U);

	wr[2].num_sge = -1;
	EXPECT_EQ(post_srq_recv(f.ibsrq(), &wr[2], &bad), EINVAL);
	EXPECT_EQ(bad, &wr[2]);
	EXPECT_EQ(f.ring.producer(), 1U);
}

TEST(PostSrqRecv, FullIsEnomemUntilTheKernelConsumes)
{
	fake_srq f(4, 1);
	ibv_recv_wr wr[6] = {};
	for (size_t i = 0; i < 6; i++)
		wr[i] = make_recv_wr(i);
	chain(wr);
	ibv_recv_wr *bad = nullptr;

	EXPECT_EQ(post_srq_recv(f.ibsrq(), wr, &bad), ENOMEM);
	EXPECT_EQ(bad, &wr[4]);
	EXPECT_EQ(f.ring.producer(), 4U);

	/* Still full: nothing posted, bad_wr is the first one. */
	EXPECT_EQ(post_srq_recv(f.ibsrq(), &wr[4], &bad), ENOMEM);
	EXPECT_EQ(bad, &wr[4]);

	/* The kernel takes two: exactly two more fit. */
	f.ring.set_consumer(2);
	EXPECT_EQ(post_srq_recv(f.ibsrq(), &wr[4], &bad), 0);
	EXPECT_EQ(f.ring.producer(), 6U);
	EXPECT_EQ(f.header(4).wr_id, 4U);
	EXPECT_EQ(f.header(5).wr_id, 5U);
	EXPECT_EQ(f.ring.slot(4), f.ring.slot(0)) << "slot 4 is slot 0 again";
}

TEST(PostSrqRecv, IndicesWrapAt2To32)
{
	fake_srq f(4, 1, UINT32_MAX - 1);
	ibv_recv_wr wr[4] = {};
	for (size_t i = 0; i < 4; i++)
		wr[i] = make_recv_wr(100 + i);
	chain(wr);
	ibv_recv_wr *bad = nullptr;

	ASSERT_EQ(post_srq_recv(f.ibsrq(), wr, &bad), 0);
	EXPECT_EQ(f.ring.producer(), 2U);
	EXPECT_EQ(f.header(UINT32_MAX - 1).wr_id, 100U);
	EXPECT_EQ(f.header(UINT32_MAX).wr_id, 101U);
	EXPECT_EQ(f.header(0).wr_id, 102U);
	EXPECT_EQ(f.header(1).wr_id, 103U);
}

TEST(PostSrqRecv, CorruptConsumerCountsAsFull)
{
	fake_srq f(4, 1);
	ibv_recv_wr wr{};
	ibv_recv_wr *bad = nullptr;

	f.ring.set_consumer(100); /* "ahead" of the producer: nonsense */
	EXPECT_EQ(post_srq_recv(f.ibsrq(), &wr, &bad), ENOMEM);
	EXPECT_EQ(f.ring.producer(), 0U);
}

TEST(PostSrqRecv, NoRingIsEio)
{
	auto s = c_new<srq>();
	ibv_recv_wr wr{};
	ibv_recv_wr *bad = nullptr;

	EXPECT_EQ(post_srq_recv(&s->vsrq.srq, &wr, &bad), EIO);
	EXPECT_EQ(bad, &wr);
}

TEST(SrqAttach, ChecksTheRingAgainstTheAttrs)
{
	fake_queue small(8, 5); /* 32-byte slots: 16 + one SGE */
	fake_queue few(4, 6);
	recv_queue rq;

	EXPECT_FALSE(rq.attach(small.base(), small.len(), 8, 2));
	EXPECT_FALSE(rq.attach(few.base(), few.len(), 8, 1));
	EXPECT_FALSE(rq.ring.has_value());
	EXPECT_TRUE(rq.attach(small.base(), small.len(), 8, 1));
	EXPECT_EQ(rq.max_sge, 1U);
	/* Bigger slots than needed: max_sge stays what the kernel granted. */
	EXPECT_TRUE(rq.attach(few.base(), few.len(), 4, 1));
	EXPECT_EQ(rq.max_sge, 1U);
	EXPECT_EQ(rq.ring->queue().num_slots(), 4U);
}

/* ---- a stand-in kernel with its rings in a memfd ----------------------- */

constexpr size_t page = 4096;
constexpr size_t memfd_len = 8 << 20;

struct ring_at {
	size_t offset;
	size_t size;
};

class fake_kernel
{
public:
	fake_kernel()
	{
		fd_ = memfd_create("sroce-test-srq", MFD_CLOEXEC);
		EXPECT_GE(fd_, 0);
		EXPECT_EQ(ftruncate(fd_, memfd_len), 0);
		void *p = mmap(nullptr, memfd_len, PROT_READ | PROT_WRITE,
			       MAP_SHARED, fd_, 0);
		EXPECT_NE(p, MAP_FAILED);
		mem_ = static_cast<unsigned char *>(p);
	}
	~fake_kernel()
	{
		munmap(mem_, memfd_len);
		close(fd_);
	}
	fake_kernel(const fake_kernel &) = delete;
	fake_kernel &operator=(const fake_kernel &) = delete;
	fake_kernel(fake_kernel &&) = delete;
	fake_kernel &operator=(fake_kernel &&) = delete;

	int fd() const
	{
		return fd_;
	}

	/* What the commands saw. */
	int creates = 0;
	int modifies = 0;
	int destroys = 0;
	size_t create_resp_size = 0;
	size_t modify_cmd_size = 0;
	modify_srq_cmd last_modify{};
	/* What they answer. */
	int create_ret = 0;
	int modify_ret = 0;
	bool garbage_mi = false; /* reply with a ring of the wrong shape */

	/* CREATE_SRQ: a ring of at least max_wr slots, as sroce.ko sizes it. */
	int create(ibv_pd *pd, ibv_srq *srq, ibv_srq_init_attr *attr,
		   ib_uverbs_create_srq_resp *resp, size_t resp_size)
	{
		creates++;
		create_resp_size = resp_size;
		if (create_ret)
			return create_ret;
		srq->context = pd->context;
		srq->handle = 0x42;
		sge_ = std::max(attr->attr.max_sge, 1U);
		const ring_at r = new_ring(attr->attr.max_wr);
		cur_ = r.offset;
		kidx_ = 0;
		attr->attr.max_wr = hdr()->num_slots;
		attr->attr.max_sge = sge_;

		resp->srq_handle = srq->handle;
		sroce_create_srq_resp drv{};
		drv.mi.offset = r.offset;
		drv.mi.size = static_cast<__u32>(r.size);
		drv.srq_num = 0x77;
		memcpy(reinterpret_cast<unsigned char *>(resp) + sizeof(*resp),
		       &drv, sizeof(drv));
		return 0;
	}

	/* MODIFY_SRQ: like sroce_modify_srq() / sroce_srq_resize(). */
	int modify(ibv_srq * /*srq*/, ibv_srq_attr *attr, int mask,
		   struct ibv_modify_srq *cmd, size_t cmd_size)
	{
		modifies++;
		modify_cmd_size = cmd_size;
		memcpy(&last_modify, cmd,
		       std::min(cmd_size, sizeof(last_modify)));
		if (modify_ret)
			return modify_ret;
		if (!(mask & IBV_SRQ_MAX_WR))
			return 0;
		sroce_modify_srq_cmd drv{};
		memcpy(&drv,
		       reinterpret_cast<unsigned char *>(cmd) +
			       sizeof(struct ibv_modify_srq),
		       sizeof(drv));
		if (!drv.mi_addr)
			return EINVAL;

		sroce_mmap_info mi{};
		{
			const std::lock_guard<std::mutex> g(lock_);
			const uint32_t n =
				ring_index::used(load(hdr()->producer), kidx_);
			const uint32_t slots = pow2(attr->max_wr);
			if (n > slots)
				return EINVAL;
			const ring_at r = new_ring(attr->max_wr);
			auto *nh = reinterpret_cast<sroce_queue_hdr *>(
				mem_ + r.offset);
			for (uint32_t i = 0; i < n; i++)
				memcpy(slot(nh, i), slot(hdr(), kidx_ + i),
				       slot_size());
			nh->producer = n;
			nh->consumer = 0;
			cur_ = r.offset;
			kidx_ = 0;
			mi.offset = r.offset;
			mi.size = static_cast<__u32>(r.size);
		}
		if (garbage_mi) {
			mi.size = 100; /* shorter than the header */
		}
		// NOLINTNEXTLINE(performance-no-int-to-ptr)
		memcpy(reinterpret_cast<void *>(drv.mi_addr), &mi, sizeof(mi));
		return 0;
	}

	/* A responder taking the next WQE: false if the SRQ is empty. */
	bool take(sroce_recv_wqe &h, sroce_sge &first)
	{
		const std::lock_guard<std::mutex> g(lock_);
		const uint32_t prod = load(hdr()->producer);
		if (prod == kidx_ ||
		    !ring_index::consistent(prod, kidx_, hdr()->num_slots))
			return false;
		const unsigned char *s = slot(hdr(), kidx_);
		memcpy(&h, s, sizeof(h));
		memcpy(&first, s + sizeof(h), sizeof(first));
		kidx_++;
		std::atomic_ref<uint32_t>(hdr()->consumer)
			.store(kidx_, std::memory_order_release);
		return true;
	}

	uint32_t num_slots()
	{
		return hdr()->num_slots;
	}

	uint32_t producer()
	{
		return load(hdr()->producer);
	}

	size_t current_offset() const
	{
		return cur_;
	}

	size_t rings_made() const
	{
		return rings_;
	}

private:
	static uint32_t pow2(uint32_t n)
	{
		uint32_t p = 1;
		while (p < n)
			p <<= 1;
		return p;
	}
	static uint32_t load(uint32_t &w)
	{
		return std::atomic_ref<uint32_t>(w).load(
			std::memory_order_acquire);
	}
	uint32_t shift() const
	{
		return log2_ceil(sizeof(sroce_recv_wqe) + 16ULL * sge_);
	}
	size_t slot_size() const
	{
		return size_t{1} << shift();
	}
	unsigned char *slot(sroce_queue_hdr *h, uint32_t idx) const
	{
		return reinterpret_cast<unsigned char *>(h) +
		       SROCE_QUEUE_DATA_OFFSET +
		       (size_t{idx & (h->num_slots - 1)} << h->slot_shift);
	}
	sroce_queue_hdr *hdr()
	{
		return reinterpret_cast<sroce_queue_hdr *>(mem_ + cur_);
	}
	ring_at new_ring(uint32_t max_wr)
	{
		const uint32_t n = pow2(max_wr);
		const size_t bytes =
			SROCE_QUEUE_DATA_OFFSET + (size_t{n} << shift());
		const size_t size = (bytes + page - 1) / page * page;
		EXPECT_LE(next_ + size, memfd_len);
		const ring_at r{next_, size};
		next_ += size;
		rings_++;
		memset(mem_ + r.offset, 0, size);
		auto *h = reinterpret_cast<sroce_queue_hdr *>(mem_ + r.offset);
		h->num_slots = n;
		h->slot_shift = shift();
		return r;
	}

	int fd_ = -1;
	unsigned char *mem_ = nullptr;
	size_t next_ = 0;
	size_t cur_ = 0;
	size_t rings_ = 0;
	uint32_t kidx_ = 0;
	uint32_t sge_ = 1;
	std::mutex lock_;
};

fake_kernel *fk;

int fk_create(ibv_pd *pd, ibv_srq *srq, ibv_srq_init_attr *attr,
	      struct ibv_create_srq * /*cmd*/, size_t /*cmd_size*/,
	      ib_uverbs_create_srq_resp *resp, size_t resp_size)
{
	return fk->create(pd, srq, attr, resp, resp_size);
}

int fk_modify(ibv_srq *srq, ibv_srq_attr *attr, int mask,
	      struct ibv_modify_srq *cmd, size_t cmd_size)
{
	return fk->modify(srq, attr, mask, cmd, cmd_size);
}

int fk_destroy(ibv_srq * /*srq*/)
{
	fk->destroys++;
	return 0;
}

constexpr srq_cmds fake_cmds = {
	.create = fk_create,
	.modify = fk_modify,
	.destroy = fk_destroy,
};

bool is_mapped(void *addr)
{
	unsigned char v = 0;
	return mincore(addr, 1, &v) == 0;
}

struct SrqLifetime : ::testing::Test {
	fake_kernel k;
	ibv_context ctx{};
	ibv_pd pd{};

	void SetUp() override
	{
		fk = &k;
		ctx.cmd_fd = k.fd();
		pd.context = &ctx;
	}
	void TearDown() override
	{
		fk = nullptr;
	}

	ibv_srq *create(uint32_t max_wr, uint32_t max_sge)
	{
		ibv_srq_init_attr a{};
		a.attr.max_wr = max_wr;
		a.attr.max_sge = max_sge;
		return create_srq_using(fake_cmds, &pd, &a);
	}

	/* Post count receives with wr_id first, first + 1, ... */
	static int post(ibv_srq *s, uint64_t first, uint32_t count)
	{
		std::vector<ibv_recv_wr> wr(count);
		std::vector<ibv_sge> sg(count);
		for (uint32_t i = 0; i < count; i++) {
			sg[i] = {first + i, 64, 0x99};
			wr[i] = make_recv_wr(first + i, &sg[i], 1);
		}
		chain(wr);
		ibv_recv_wr *bad = nullptr;
		return post_srq_recv(s, wr.data(), &bad);
	}

	/* Take everything; the wr_ids in order. */
	std::vector<uint64_t> drain()
	{
		std::vector<uint64_t> ids;
		sroce_recv_wqe h{};
		sroce_sge g{};
		while (k.take(h, g)) {
			EXPECT_EQ(h.num_sge, 1U);
			EXPECT_EQ(g.addr, h.wr_id) << "SGE moved with its WQE";
			ids.push_back(h.wr_id);
		}
		return ids;
	}
};

TEST_F(SrqLifetime, CreateMapsTheRingTheKernelSized)
{
	ibv_srq_init_attr a{};
	a.attr.max_wr = 5;
	a.attr.max_sge = 2;
	ibv_srq *s = create_srq_using(fake_cmds, &pd, &a);
	ASSERT_NE(s, nullptr);
	EXPECT_EQ(k.creates, 1);
	/* 16 bytes of ib_uverbs_create_srq_resp + sroce_create_srq_resp. */
	EXPECT_EQ(k.create_resp_size, 40U);
	EXPECT_EQ(a.attr.max_wr, 8U) << "adjusted by the kernel";
	EXPECT_EQ(to_srq(s)->srq_num, 0x77U);
	EXPECT_EQ(to_srq(s)->rq.max_sge, 2U);
	EXPECT_EQ(static_cast<void *>(to_srq(s)), static_cast<void *>(s));

	/* Posts land in the kernel's memory. */
	ASSERT_EQ(post(s, 10, 8), 0);
	EXPECT_EQ(k.producer(), 8U);
	EXPECT_EQ(post(s, 18, 1), ENOMEM);
	const std::vector<uint64_t> want = {10, 11, 12, 13, 14, 15, 16, 17};
	EXPECT_EQ(drain(), want);

	EXPECT_EQ(destroy_srq_using(fake_cmds, s), 0);
	EXPECT_EQ(k.destroys, 1);
}

TEST_F(SrqLifetime, CreateFailures)
{
	k.create_ret = ENOMEM;
	errno = 0;
	EXPECT_EQ(create(4, 1), nullptr);
	EXPECT_EQ(errno, ENOMEM);
	EXPECT_EQ(k.destroys, 0) << "nothing was created";

	/* A ring that cannot be mapped: the kernel SRQ must not leak. */
	k.create_ret = 0;
	ctx.cmd_fd = -1;
	errno = 0;
	EXPECT_EQ(create(4, 1), nullptr);
	EXPECT_EQ(errno, EBADF);
	EXPECT_EQ(k.destroys, 1);
}

TEST_F(SrqLifetime, LimitOnlyLeavesTheRingAlone)
{
	ibv_srq *s = create(8, 1);
	ASSERT_NE(s, nullptr);
	const void *ring = to_srq(s)->rq.map.get();
	ASSERT_EQ(post(s, 1, 3), 0);

	ibv_srq_attr attr{};
	attr.srq_limit = 2;
	ASSERT_EQ(modify_srq_using(fake_cmds, s, &attr, IBV_SRQ_LIMIT), 0);
	EXPECT_EQ(k.modify_cmd_size, sizeof(modify_srq_cmd));
	EXPECT_EQ(k.last_modify.drv.mi_addr, 0U) << "no resize, no reply";
	EXPECT_EQ(k.rings_made(), 1U);
	EXPECT_EQ(to_srq(s)->rq.map.get(), ring);
	ASSERT_EQ(post(s, 4, 1), 0);
	EXPECT_EQ(k.producer(), 4U);
	EXPECT_EQ(destroy_srq_using(fake_cmds, s), 0);
}

TEST_F(SrqLifetime, ResizeMovesPostedWqesAndSwapsTheRing)
{
	ibv_srq *s = create(4, 1);
	ASSERT_NE(s, nullptr);
	/* Wrap the old ring once, and leave three WQEs posted in it. */
	ASSERT_EQ(post(s, 100, 4), 0);
	sroce_recv_wqe h{};
	sroce_sge g{};
	for (int i = 0; i < 3; i++)
		ASSERT_TRUE(k.take(h, g));
	ASSERT_EQ(post(s, 104, 2), 0);
	void *old_ring = to_srq(s)->rq.map.get();

	ibv_srq_attr attr{};
	attr.max_wr = 16;
	attr.srq_limit = 1;
	ASSERT_EQ(modify_srq_using(fake_cmds, s, &attr,
				   IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT),
		  0);
	EXPECT_EQ(k.modify_cmd_size, sizeof(modify_srq_cmd));
	EXPECT_NE(k.last_modify.drv.mi_addr, 0U);
	EXPECT_EQ(k.rings_made(), 2U);
	EXPECT_NE(to_srq(s)->rq.map.get(), old_ring);
	EXPECT_FALSE(is_mapped(old_ring)) << "the old ring is unmapped";
	EXPECT_EQ(to_srq(s)->rq.ring->queue().num_slots(), 16U);

	/* New posts follow the moved ones; 13 more fit, not 14. */
	EXPECT_EQ(k.producer(), 3U);
	ASSERT_EQ(post(s, 106, 13), 0);
	EXPECT_EQ(post(s, 119, 1), ENOMEM);
	std::vector<uint64_t> want;
	for (uint64_t id = 103; id < 119; id++)
		want.push_back(id);
	EXPECT_EQ(drain(), want);

	/* Shrink below what is posted: refused, the ring stays. */
	ASSERT_EQ(post(s, 200, 5), 0);
	attr.max_wr = 4;
	const void *ring = to_srq(s)->rq.map.get();
	EXPECT_EQ(modify_srq_using(fake_cmds, s, &attr, IBV_SRQ_MAX_WR),
		  EINVAL);
	EXPECT_EQ(to_srq(s)->rq.map.get(), ring);
	ASSERT_EQ(post(s, 205, 1), 0);
	EXPECT_EQ(drain(),
		  (std::vector<uint64_t>{200, 201, 202, 203, 204, 205}));

	EXPECT_EQ(destroy_srq_using(fake_cmds, s), 0);
}

TEST_F(SrqLifetime, FailedRemapLeavesItUnusableUntilTheNextResize)
{
	ibv_srq *s = create(4, 1);
	ASSERT_NE(s, nullptr);
	ASSERT_EQ(post(s, 1, 2), 0);

	k.garbage_mi = true;
	ibv_srq_attr attr{};
	attr.max_wr = 8;
	EXPECT_EQ(modify_srq_using(fake_cmds, s, &attr, IBV_SRQ_MAX_WR),
		  EPROTO);
	EXPECT_FALSE(to_srq(s)->rq.ring.has_value());
	EXPECT_FALSE(to_srq(s)->rq.map);
	EXPECT_EQ(post(s, 3, 1), EIO);

	k.garbage_mi = false;
	attr.max_wr = 8;
	ASSERT_EQ(modify_srq_using(fake_cmds, s, &attr, IBV_SRQ_MAX_WR), 0);
	ASSERT_EQ(post(s, 3, 1), 0);
	EXPECT_EQ(drain(), (std::vector<uint64_t>{1, 2, 3}));
	EXPECT_EQ(destroy_srq_using(fake_cmds, s), 0);
}

TEST_F(SrqLifetime, KernelErrorOnResizeKeepsTheRing)
{
	ibv_srq *s = create(4, 1);
	ASSERT_NE(s, nullptr);
	k.modify_ret = EINVAL;
	ibv_srq_attr attr{};
	attr.max_wr = 1U << 30;
	EXPECT_EQ(modify_srq_using(fake_cmds, s, &attr, IBV_SRQ_MAX_WR),
		  EINVAL);
	EXPECT_TRUE(to_srq(s)->rq.ring.has_value());
	EXPECT_EQ(post(s, 1, 1), 0);
	EXPECT_EQ(destroy_srq_using(fake_cmds, s), 0);
}

/*
 * Posters, a consumer and a resizer at once. The provider holds the SRQ
 * lock across the whole resize, so a WQE is either in the old ring before
 * the kernel copies it, or in the new one: never lost, never twice. Each
 * poster waits half way until a resize has succeeded, so that one does
 * while they post however the threads are scheduled (on a loaded machine
 * the posters could otherwise finish before the resizer first ran).
 */
TEST_F(SrqLifetime, ResizeRacingPostersLosesNothing)
{
	constexpr int posters = 2;
	constexpr uint32_t per_thread = 4000;
	ibv_srq *s = create(16, 1);
	ASSERT_NE(s, nullptr);
	std::atomic<int> done{0};
	std::atomic<int> resizes{0};
	std::atomic<int> errors{0};

	std::vector<std::thread> threads;
	threads.reserve(posters + 1);
	for (int t = 0; t < posters; t++) {
		threads.emplace_back([&, t] {
			for (uint32_t i = 0; i < per_thread;) {
				while (i == per_thread / 2 && !resizes.load() &&
				       !errors.load())
					std::this_thread::yield();
				const uint64_t id =
					(static_cast<uint64_t>(t) << 32) |
					(uint64_t{i} + 1);
				const int r = post(s, id, 1);
				if (r == 0)
					i++;
				else if (r == ENOMEM && !errors.load())
					std::this_thread::yield();
				else {
					errors++;
					break;
				}
			}
			done++;
		});
	}
	threads.emplace_back([&] {
		const uint32_t sizes[] = {8, 64, 32, 16, 128};
		/* Until the posters are done: they wait for a success. */
		for (int i = 0; done.load() < posters; i++) {
			ibv_srq_attr attr{};
			attr.max_wr = sizes[i % 5];
			const int r = modify_srq_using(fake_cmds, s, &attr,
						       IBV_SRQ_MAX_WR);
			/* EINVAL: more posted than the new size holds. */
			if (r == 0)
				resizes++;
			else if (r != EINVAL)
				errors++;
			std::this_thread::yield();
		}
	});

	std::vector<uint32_t> seen(posters, 0);
	uint64_t total = 0;
	int bad_order = 0;
	while (total < uint64_t{posters} * per_thread && errors.load() == 0) {
		sroce_recv_wqe h{};
		sroce_sge g{};
		if (!k.take(h, g)) {
			std::this_thread::yield();
			continue;
		}
		const auto t = static_cast<size_t>(h.wr_id >> 32);
		const auto seq = static_cast<uint32_t>(h.wr_id);
		if (t >= posters || seq != seen[t] + 1 || g.addr != h.wr_id)
			bad_order++;
		else
			seen[t] = seq;
		total++;
	}
	for (auto &th : threads)
		th.join();

	EXPECT_EQ(errors.load(), 0);
	EXPECT_EQ(bad_order, 0);
	for (int t = 0; t < posters; t++)
		EXPECT_EQ(seen[t], per_thread) << "thread " << t;
	sroce_recv_wqe h{};
	sroce_sge g{};
	EXPECT_FALSE(k.take(h, g)) << "nothing extra";
	EXPECT_GT(resizes.load(), 0);
	EXPECT_EQ(destroy_srq_using(fake_cmds, s), 0);
}

/* ---- the command libibverbs really writes ------------------------------ */

struct SrqCommand : ::testing::Test {
	uverbs_pipe p;
	fake_queue ring{8, 5};
	obj_ptr<srq> s = c_new<srq>();

	void SetUp() override
	{
		s->vsrq.srq.context = p.context();
		s->vsrq.srq.handle = 0x1234;
		ASSERT_TRUE(s->rq.attach(ring.base(), ring.len(), 8, 1));
	}
};

TEST_F(SrqCommand, ModifyLimit)
{
	static_assert(sizeof(ib_uverbs_modify_srq) == 16);

	ibv_srq_attr attr{};
	attr.max_wr = 0x55;
	attr.srq_limit = 3;
	ASSERT_EQ(modify_srq(&s->vsrq.srq, &attr, IBV_SRQ_LIMIT), 0);

	const std::vector<unsigned char> b = p.drain();
	ASSERT_EQ(b.size(), 32U) << "hdr + ib_uverbs_modify_srq + mi_addr";
	const auto cmd = expect_cmd<ib_uverbs_modify_srq>(
		b, IB_USER_VERBS_CMD_MODIFY_SRQ);
	EXPECT_EQ(cmd.hdr.in_words, 8U);
	EXPECT_EQ(cmd.hdr.out_words, 0U);
	const ib_uverbs_modify_srq &core = cmd.req;
	EXPECT_EQ(core.srq_handle, 0x1234U);
	EXPECT_EQ(core.attr_mask, unsigned{IBV_SRQ_LIMIT});
	EXPECT_EQ(core.srq_limit, 3U);
	sroce_modify_srq_cmd drv{};
	memcpy(&drv, b.data() + 24, sizeof(drv));
	EXPECT_EQ(drv.mi_addr, 0U);
	EXPECT_TRUE(s->rq.ring.has_value());
}

TEST_F(SrqCommand, ModifyMaxWrCarriesTheReplyAddress)
{
	ibv_srq_attr attr{};
	attr.max_wr = 64;
	/* Nobody answers: the reply stays zero, which is no ring at all. */
	EXPECT_EQ(modify_srq(&s->vsrq.srq, &attr, IBV_SRQ_MAX_WR), EPROTO);
	EXPECT_FALSE(s->rq.ring.has_value());

	const std::vector<unsigned char> b = p.drain();
	ASSERT_EQ(b.size(), 32U);
	const auto cmd = expect_cmd<ib_uverbs_modify_srq>(
		b, IB_USER_VERBS_CMD_MODIFY_SRQ);
	EXPECT_EQ(cmd.hdr.in_words, 8U);
	const ib_uverbs_modify_srq &core = cmd.req;
	EXPECT_EQ(core.attr_mask, unsigned{IBV_SRQ_MAX_WR});
	EXPECT_EQ(core.max_wr, 64U);
	sroce_modify_srq_cmd drv{};
	memcpy(&drv, b.data() + 24, sizeof(drv));
	EXPECT_NE(drv.mi_addr, 0U) << "where the kernel writes the new ring";
	EXPECT_EQ(drv.mi_addr % alignof(sroce_mmap_info), 0U);
}

} // namespace
