// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Protection domains: a kernel handle, and in user space only the count of
 * parent domains (parent_domain.cpp) that hold one.
 */
#include "provider.h"
#include "util.h"

#include <cerrno>

namespace sroce
{

struct ibv_pd *alloc_pd(struct ibv_context *ibctx) noexcept
{
	auto p = c_zalloc<pd>();
	if (!p) {
		errno = ENOMEM;
		return nullptr;
	}

	struct ibv_alloc_pd cmd = {};
	struct ib_uverbs_alloc_pd_resp resp = {};
	const int ret = ibv_cmd_alloc_pd(ibctx, &p->ibv_pd, &cmd, sizeof(cmd),
					 &resp, sizeof(resp));
	if (ret) {
		errno = ret;
		return nullptr;
	}
	return &p.release()->ibv_pd;
}

int dealloc_pd(struct ibv_pd *ibpd) noexcept
{
	/* A parent domain has no kernel object; the PD under one must stay. */
	if (is_parent_domain(ibpd))
		return dealloc_parent_domain(ibpd);
	if (pd_has_parent_domains(*to_pd(ibpd)))
		return EBUSY;

	const int ret = ibv_cmd_dealloc_pd(ibpd);

	/* On failure the PD still exists in the kernel: keep ours too. */
	if (ret)
		return ret;
	c_ptr<pd> p(to_pd(ibpd));
	return 0;
}

} // namespace sroce
