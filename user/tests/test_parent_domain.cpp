// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Parent and thread domains: argument checks, the references they hold,
 * dealloc_pd for both kinds of domain, and that verbs given a parent
 * domain ask the kernel for its protection domain (through the real
 * libibverbs command path into a pipe).
 */
#include "cq.h"
#include "parent_domain.h"
#include "provider.h"
#include "util.h"
#include "uverbs_pipe.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace
{

using namespace sroce;
using sroce::test::expect_cmd;
using sroce::test::uverbs_pipe;

void *test_alloc(struct ibv_pd * /*pd*/, void * /*pd_context*/, size_t /*size*/,
		 size_t /*alignment*/, uint64_t /*resource_type*/)
{
	return IBV_ALLOCATOR_USE_DEFAULT;
}

void test_free(struct ibv_pd * /*pd*/, void * /*pd_context*/, void * /*ptr*/,
	       uint64_t /*resource_type*/)
{
}

/* A PD as alloc_pd leaves it, on a context whose commands go to a pipe. */
struct ParentDomain : ::testing::Test {
	uverbs_pipe p;
	c_ptr<pd> real = c_zalloc<pd>();

	void SetUp() override
	{
		real->ibv_pd.context = p.context();
		real->ibv_pd.handle = 7;
	}

	void TearDown() override
	{
		/* Whatever a test left, the PD must be free-able now. */
		if (real) {
			EXPECT_FALSE(pd_has_parent_domains(*real));
		}
	}

	ibv_pd *alloc(ibv_pd *on, uint32_t comp_mask = 0, ibv_td *t = nullptr)
	{
		ibv_parent_domain_init_attr a{};
		a.pd = on;
		a.td = t;
		a.comp_mask = comp_mask;
		a.alloc = test_alloc;
		a.free = test_free;
		a.pd_context = this;
		return alloc_parent_domain(p.context(), &a);
	}

	/*
	 * The first command sent since the last drain is a Req of this
	 * command number naming the PD (handle 7); alone: nothing follows.
	 */
	template <typename Req>
	void expect_cmd_on_the_pd(uint32_t command, bool alone = false)
	{
		const std::vector<unsigned char> b = p.drain();
		const size_t len = sizeof(ib_uverbs_cmd_hdr) + sizeof(Req);

		ASSERT_GE(b.size(), len);
		if (alone) {
			EXPECT_EQ(b.size(), len) << "one command";
		}
		EXPECT_EQ(expect_cmd<Req>(b, command).req.pd_handle, 7U);
	}
};

TEST(ParentDomainOps, AreInTheContextTable)
{
	EXPECT_EQ(context_ops.alloc_parent_domain, alloc_parent_domain);
	EXPECT_EQ(context_ops.alloc_td, alloc_td);
	EXPECT_EQ(context_ops.dealloc_td, dealloc_td);
	EXPECT_EQ(context_ops.dealloc_pd, dealloc_pd);
}

TEST_F(ParentDomain, ArgumentChecksAreEinval)
{
	ibv_parent_domain_init_attr a{};

	errno = 0;
	EXPECT_EQ(alloc_parent_domain(p.context(), nullptr), nullptr);
	EXPECT_EQ(errno, EINVAL);
	errno = 0;
	EXPECT_EQ(alloc_parent_domain(p.context(), &a), nullptr) << "no PD";
	EXPECT_EQ(errno, EINVAL);

	errno = 0;
	EXPECT_EQ(alloc(&real->ibv_pd, 1U << 2), nullptr) << "unknown bit";
	EXPECT_EQ(errno, EINVAL);

	uverbs_pipe other;
	a.pd = &real->ibv_pd;
	errno = 0;
	EXPECT_EQ(alloc_parent_domain(other.context(), &a), nullptr)
		<< "PD of another context";
	EXPECT_EQ(errno, EINVAL);

	ibv_td foreign{};
	foreign.context = other.context();
	errno = 0;
	EXPECT_EQ(alloc(&real->ibv_pd, 0, &foreign), nullptr)
		<< "TD of another context";
	EXPECT_EQ(errno, EINVAL);

	EXPECT_FALSE(pd_has_parent_domains(*real)) << "no reference leaked";
	EXPECT_TRUE(p.drain().empty()) << "no command for any of that";
}

TEST_F(ParentDomain, StandsForItsPdAndKeepsTheAttrs)
{
	ibv_pd *ibpd = alloc(&real->ibv_pd,
			     IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
				     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT);
	ASSERT_NE(ibpd, nullptr);

	EXPECT_EQ(ibpd->context, p.context());
	EXPECT_EQ(ibpd->handle, 7U) << "the PD's uverbs handle";
	EXPECT_TRUE(is_parent_domain(ibpd));
	EXPECT_FALSE(is_parent_domain(&real->ibv_pd));
	EXPECT_FALSE(is_parent_domain(nullptr));
	EXPECT_EQ(to_protection_domain(ibpd), real.get());
	EXPECT_EQ(to_protection_domain(&real->ibv_pd), real.get());
	EXPECT_TRUE(pd_has_parent_domains(*real));

	const parent_domain *pdom = to_parent_domain(ibpd);
	ASSERT_NE(pdom, nullptr);
	EXPECT_EQ(pdom->alloc, test_alloc);
	EXPECT_EQ(pdom->free, test_free);
	EXPECT_EQ(pdom->pd_context, this);
	EXPECT_EQ(pdom->thread_domain, nullptr);
	EXPECT_EQ(to_parent_domain(&real->ibv_pd), nullptr);

	EXPECT_EQ(dealloc_pd(ibpd), 0);
	EXPECT_TRUE(p.drain().empty()) << "no kernel object either way";
}

TEST_F(ParentDomain, AttrsOnlyWithTheirCompMaskBits)
{
	ibv_pd *ibpd = alloc(&real->ibv_pd);
	ASSERT_NE(ibpd, nullptr);
	const parent_domain *pdom = to_parent_domain(ibpd);
	EXPECT_EQ(pdom->alloc, nullptr);
	EXPECT_EQ(pdom->free, nullptr);
	EXPECT_EQ(pdom->pd_context, nullptr);
	EXPECT_EQ(dealloc_pd(ibpd), 0);
}

TEST_F(ParentDomain, PdIsBusyUntilItsParentDomainsAreGone)
{
	ibv_pd *a = alloc(&real->ibv_pd);
	ibv_pd *b = alloc(&real->ibv_pd);
	ASSERT_NE(a, nullptr);
	ASSERT_NE(b, nullptr);

	EXPECT_EQ(dealloc_pd(&real->ibv_pd), EBUSY);
	EXPECT_EQ(dealloc_pd(a), 0);
	EXPECT_EQ(dealloc_pd(&real->ibv_pd), EBUSY);
	EXPECT_TRUE(p.drain().empty()) << "EBUSY without asking the kernel";
	EXPECT_EQ(dealloc_pd(b), 0);

	/* Now it goes to the kernel, and is freed. */
	EXPECT_EQ(dealloc_pd(&real.release()->ibv_pd), 0);
	expect_cmd_on_the_pd<ib_uverbs_dealloc_pd>(IB_USER_VERBS_CMD_DEALLOC_PD,
						   true);
}

TEST_F(ParentDomain, OfAParentDomainStandsForTheSamePd)
{
	ibv_pd *outer = alloc(&real->ibv_pd);
	ASSERT_NE(outer, nullptr);
	ibv_pd *inner = alloc(outer);
	ASSERT_NE(inner, nullptr);

	EXPECT_EQ(to_protection_domain(inner), real.get());
	EXPECT_EQ(inner->handle, 7U);
	/* Both hold the PD, neither holds the other. */
	EXPECT_EQ(dealloc_pd(outer), 0);
	EXPECT_EQ(dealloc_pd(&real->ibv_pd), EBUSY);
	EXPECT_EQ(dealloc_pd(inner), 0);
}

TEST_F(ParentDomain, ThreadDomainIsHeldToo)
{
	ibv_td_init_attr ta{};
	ta.comp_mask = 1;
	errno = 0;
	EXPECT_EQ(alloc_td(p.context(), &ta), nullptr);
	EXPECT_EQ(errno, EINVAL);
	errno = 0;
	EXPECT_EQ(alloc_td(p.context(), nullptr), nullptr);
	EXPECT_EQ(errno, EINVAL);

	ta.comp_mask = 0;
	ibv_td *t = alloc_td(p.context(), &ta);
	ASSERT_NE(t, nullptr);
	EXPECT_EQ(t->context, p.context());

	ibv_pd *ibpd = alloc(&real->ibv_pd, 0, t);
	ASSERT_NE(ibpd, nullptr);
	EXPECT_EQ(to_parent_domain(ibpd)->thread_domain, to_td(t));
	EXPECT_EQ(dealloc_td(t), EBUSY);
	EXPECT_EQ(dealloc_pd(ibpd), 0);
	EXPECT_EQ(dealloc_td(t), 0);
	EXPECT_TRUE(p.drain().empty());
}

/* reg_mr on a parent domain: REG_MR names the PD's handle. */
TEST_F(ParentDomain, RegMrAsksForThePd)
{
	ibv_pd *ibpd = alloc(&real->ibv_pd);
	ASSERT_NE(ibpd, nullptr);
	std::vector<unsigned char> buf(4096);

	/* Nobody answers: the MR comes back with handle and keys 0. */
	ibv_mr *mr = reg_mr(ibpd, buf.data(), buf.size(),
			    reinterpret_cast<uintptr_t>(buf.data()),
			    IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(mr, nullptr);
	EXPECT_EQ(mr->context, p.context());

	expect_cmd_on_the_pd<ib_uverbs_reg_mr>(IB_USER_VERBS_CMD_REG_MR);

	EXPECT_EQ(dereg_mr(reinterpret_cast<verbs_mr *>(mr)), 0);
	EXPECT_EQ(dealloc_pd(ibpd), 0);
}

/* create_ah on a parent domain: CREATE_AH names the PD's handle. */
TEST_F(ParentDomain, CreateAhAsksForThePd)
{
	ibv_pd *ibpd = alloc(&real->ibv_pd);
	ASSERT_NE(ibpd, nullptr);

	ibv_ah_attr attr{};
	attr.is_global = 1;
	attr.port_num = 1;
	attr.grh.hop_limit = 64;
	/* Nobody answers: no AH number, so EPROTO (and a DESTROY_AH). */
	errno = 0;
	EXPECT_EQ(create_ah(ibpd, &attr), nullptr);
	EXPECT_EQ(errno, EPROTO);

	expect_cmd_on_the_pd<ib_uverbs_create_ah>(IB_USER_VERBS_CMD_CREATE_AH);
	EXPECT_EQ(dealloc_pd(ibpd), 0);
}

TEST_F(ParentDomain, CqExTakesOnlyAParentDomain)
{
	ibv_cq_init_attr_ex a{};
	a.cqe = 4;
	a.wc_flags = IBV_WC_STANDARD_FLAGS;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;

	a.parent_domain = nullptr;
	EXPECT_EQ(check_cq_ex_attr(a), EINVAL);
	a.parent_domain = &real->ibv_pd;
	EXPECT_EQ(check_cq_ex_attr(a), EINVAL) << "a plain PD";
	errno = 0;
	EXPECT_EQ(create_cq_ex(p.context(), &a), nullptr);
	EXPECT_EQ(errno, EINVAL);

	ibv_pd *ibpd = alloc(&real->ibv_pd);
	ASSERT_NE(ibpd, nullptr);
	a.parent_domain = ibpd;
	EXPECT_EQ(check_cq_ex_attr(a), 0);
	a.comp_mask |= IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	EXPECT_EQ(check_cq_ex_attr(a), 0);

	/* A parent domain of another context is no better than a PD. */
	uverbs_pipe other;
	errno = 0;
	EXPECT_EQ(create_cq_ex(other.context(), &a), nullptr);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_TRUE(p.drain().empty());
	EXPECT_TRUE(other.drain().empty());
	EXPECT_EQ(dealloc_pd(ibpd), 0);
}

} // namespace
