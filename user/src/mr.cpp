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

int rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd, void *addr,
	     size_t length, int access) noexcept
{
	struct ibv_rereg_mr cmd = {};
	struct ib_uverbs_rereg_mr_resp resp = {};

	/*
	 * New keys come back in resp (a new translation is a new kernel MR);
	 * libibverbs stores them, and the PD, address and length, in vmr.
	 */
	return ibv_cmd_rereg_mr(vmr, static_cast<uint32_t>(flags), addr, length,
				reinterpret_cast<uintptr_t>(addr), access, pd,
				&cmd, sizeof(cmd), &resp, sizeof(resp));
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
