// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Memory regions: the kernel pins and owns them; no driver data either way. */
#include "provider.h"
#include "util.h"

#include <cerrno>

namespace sroce
{

struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		      uint64_t hca_va, int access) noexcept
{
	auto vmr = c_zalloc<verbs_mr>();
	if (!vmr) {
		errno = ENOMEM;
		return nullptr;
	}

	struct ibv_reg_mr cmd = {};
	struct ib_uverbs_reg_mr_resp resp = {};
	const int ret =
		ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr.get(),
			       &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		vmr.reset();
		errno = ret;
		return nullptr;
	}
	return &vmr.release()->ibv_mr;
}

int dereg_mr(struct verbs_mr *vmr) noexcept
{
	const int ret = ibv_cmd_dereg_mr(vmr);

	/* On failure the MR still exists in the kernel: keep ours too. */
	if (ret)
		return ret;
	c_ptr<verbs_mr> p(vmr);
	return 0;
}

} // namespace sroce
