// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Parent domains and thread domains: provider objects only, no uverbs
 * command. A parent domain copies its PD's context and uverbs handle into
 * its own ibv_pd, so QPs, SRQs, MRs, AHs and MWs created on it are created
 * on that PD in the kernel; the PD cannot go away underneath it because
 * dealloc_pd refuses a PD that parent domains still hold.
 */
#include "parent_domain.h"
#include "util.h"

#include <atomic>
#include <cerrno>

namespace sroce
{

namespace
{

void get(uint32_t &count) noexcept
{
	std::atomic_ref<uint32_t>(count).fetch_add(1,
						   std::memory_order_relaxed);
}

void put(uint32_t &count) noexcept
{
	std::atomic_ref<uint32_t>(count).fetch_sub(1,
						   std::memory_order_release);
}

bool held(uint32_t &count) noexcept
{
	return std::atomic_ref<uint32_t>(count).load(
		       std::memory_order_acquire) != 0;
}

} // namespace

struct ibv_pd *
alloc_parent_domain(struct ibv_context *ibctx,
		    struct ibv_parent_domain_init_attr *attr) noexcept
{
	constexpr uint32_t supported = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
				       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;

	/* As driver.h's ibv_check_alloc_parent_domain(): a PD is required. */
	if (!attr || !attr->pd || (attr->comp_mask & ~supported) ||
	    attr->pd->context != ibctx ||
	    (attr->td && attr->td->context != ibctx)) {
		errno = EINVAL;
		return nullptr;
	}

	auto p = c_zalloc<parent_domain>();
	if (!p) {
		errno = ENOMEM;
		return nullptr;
	}

	/* A parent domain of a parent domain stands for the same PD. */
	pd *real = to_protection_domain(attr->pd);
	p->base.protection_domain = real;
	get(real->parent_domains);
	if (attr->td) {
		p->thread_domain = to_td(attr->td);
		get(p->thread_domain->parent_domains);
	}
	ibv_initialize_parent_domain(&p->base.ibv_pd, &real->ibv_pd);

	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		p->alloc = attr->alloc;
		p->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		p->pd_context = attr->pd_context;
	return &p.release()->base.ibv_pd;
}

/* dealloc_pd (pd.cpp) comes here for a parent domain. */
int dealloc_parent_domain(struct ibv_pd *ibpd) noexcept
{
	c_ptr<parent_domain> p(to_parent_domain(ibpd));

	if (!p)
		return EINVAL;
	if (p->thread_domain)
		put(p->thread_domain->parent_domains);
	put(p->base.protection_domain->parent_domains);
	return 0;
}

/* Used by dealloc_pd: a PD that parent domains hold must stay. */
bool pd_has_parent_domains(pd &p) noexcept
{
	return held(p.parent_domains);
}

struct ibv_td *alloc_td(struct ibv_context *ibctx,
			struct ibv_td_init_attr *attr) noexcept
{
	if (!attr || attr->comp_mask) {
		errno = EINVAL;
		return nullptr;
	}

	auto t = c_zalloc<td>();
	if (!t) {
		errno = ENOMEM;
		return nullptr;
	}
	t->ibv_td.context = ibctx;
	return &t.release()->ibv_td;
}

int dealloc_td(struct ibv_td *ibtd) noexcept
{
	td *t = to_td(ibtd);

	if (held(t->parent_domains))
		return EBUSY;
	c_ptr<td> owned(t);
	return 0;
}

} // namespace sroce
