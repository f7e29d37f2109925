// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Address handles, for UD. The kernel does all the work: uverbs resolves
 * the destination MAC of a RoCE AH (rdma_create_user_ah) before sroce.ko
 * turns the GRH into an IP path and numbers it. The provider keeps only
 * that number, which every UD send WQE carries.
 */
#include "log.h"
#include "provider.h"
#include "util.h"

#include <cerrno>

namespace sroce
{

namespace
{

using create_ah_resp =
	uverbs_resp<ib_uverbs_create_ah_resp, sroce_create_ah_resp>;
static_assert(offsetof(create_ah_resp, drv) == sizeof(ib_uverbs_create_ah_resp),
	      "driver udata must directly follow the core response");
/* rdma-core's rxe: { ib_uverbs_create_ah_resp; __u32 ah_num, reserved; } */
static_assert(sizeof(create_ah_resp) == 12);
static_assert(offsetof(create_ah_resp, drv.ah_num) == 4);

} // namespace

constinit const ah_cmds kernel_ah_cmds = {
	.create = ibv_cmd_create_ah,
	.destroy = ibv_cmd_destroy_ah,
};

struct ibv_ah *create_ah_using(const ah_cmds &cmds, struct ibv_pd *pd,
			       struct ibv_ah_attr *attr) noexcept
{
	/*
	 * RoCE addresses are IP addresses: an AH without a GRH has no
	 * destination at all (mlx5 and the kernel refuse it the same way).
	 */
	if (!attr || !attr->is_global) {
		errno = EINVAL;
		return nullptr;
	}

	auto a = c_zalloc<ah>();
	if (!a) {
		errno = ENOMEM;
		return nullptr;
	}

	create_ah_resp resp = {};
	const int ret =
		cmds.create(pd, &a->ibv_ah, attr, resp.ibv(), sizeof(resp));
	if (ret) {
		errno = ret;
		return nullptr;
	}
	/*
	 * sroce.ko numbers AHs from 1: a zero means it did not fill in the
	 * driver response, and every send through this AH would fail.
	 */
	if (resp.drv.ah_num == 0) {
		log(log_level::err, "create_ah: kernel returned no AH number");
		(void)cmds.destroy(&a->ibv_ah);
		errno = EPROTO;
		return nullptr;
	}
	a->ah_num = resp.drv.ah_num;
	return &a.release()->ibv_ah;
}

int destroy_ah_using(const ah_cmds &cmds, struct ibv_ah *ibah) noexcept
{
	const int ret = cmds.destroy(ibah);

	/* On failure the AH still exists in the kernel: keep ours too. */
	if (ret)
		return ret;
	c_ptr<ah> a(to_ah(ibah));
	return 0;
}

struct ibv_ah *create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr) noexcept
{
	return create_ah_using(kernel_ah_cmds, pd, attr);
}

int destroy_ah(struct ibv_ah *ibah) noexcept
{
	return destroy_ah_using(kernel_ah_cmds, ibah);
}

} // namespace sroce
