/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Parent domains and thread domains (ibv_alloc_parent_domain(3),
 * ibv_alloc_td(3)). Neither has a kernel object: a parent domain is a
 * provider-side alias of a protection domain plus the application's
 * allocators and context, and a thread domain is only a promise from the
 * application about threading.
 */
#ifndef SROCE_PARENT_DOMAIN_H
#define SROCE_PARENT_DOMAIN_H

#include "provider.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace sroce
{

/*
 * A thread domain. Only counted: sroce's rings are shared with the kernel
 * and its locks are cheap, so a QP in a thread domain takes the same path.
 */
struct td {
	struct ibv_td ibv_td;
	uint32_t parent_domains; /* dealloc_td is EBUSY until 0 */
};

/*
 * A parent domain: a pd whose protection_domain is set, so dealloc_pd and
 * is_parent_domain() recognise it. It holds a reference on that PD and on
 * its thread domain, if any. Unlike mlx5 it does not count the objects
 * created on it: none of them reads its parent domain after creation, and
 * the kernel objects hold the real PD, which cannot go before it.
 *
 * The allocators (and pd_context, which only they would be passed) are
 * kept but never called: they are for
 * the buffers a device reads and writes (queues, doorbell records), and in
 * sroce every such ring (SQ, RQ, SRQ, CQ) is kernel memory that the
 * provider mmap()s from the uverbs fd. Its own calloc()s are bookkeeping
 * no device sees, so there is nothing to hand the allocators.
 */
struct parent_domain {
	pd base; /* base.protection_domain != nullptr */
	td *thread_domain;
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size,
		       size_t alignment, uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
		     uint64_t resource_type);
	void *pd_context;
};

static_assert(std::is_standard_layout_v<td> && offsetof(td, ibv_td) == 0);
static_assert(std::is_standard_layout_v<parent_domain> &&
	      offsetof(parent_domain, base) == 0);

inline td *to_td(struct ibv_td *ibtd) noexcept
{
	return reinterpret_cast<td *>(ibtd);
}

/* Null unless ibpd is a parent domain. */
inline parent_domain *to_parent_domain(struct ibv_pd *ibpd) noexcept
{
	return is_parent_domain(ibpd) ? reinterpret_cast<parent_domain *>(ibpd)
				      : nullptr;
}

} // namespace sroce

#endif /* SROCE_PARENT_DOMAIN_H */
