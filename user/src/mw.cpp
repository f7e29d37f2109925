// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory windows. The kernel allocates a window and its R_Key; binding is a
 * work request either way: ibv_bind_mw() (type 1) posts one on the caller's
 * behalf, IBV_WR_BIND_MW / ibv_wr_bind_mw() (type 2) are posted by the
 * caller. The new R_Key is chosen here (ibv_inc_rkey: same window index,
 * next key byte) and the kernel makes it valid when it executes the WQE.
 */
#include "provider.h"
#include "util.h"

#include <cerrno>

namespace sroce
{

struct ibv_mw *alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type) noexcept
{
	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return nullptr;
	}
	auto mw = c_zalloc<ibv_mw>();
	if (!mw) {
		errno = ENOMEM;
		return nullptr;
	}
	struct ibv_alloc_mw cmd = {};
	struct ib_uverbs_alloc_mw_resp resp = {};
	const int ret = ibv_cmd_alloc_mw(pd, type, mw.get(), &cmd, sizeof(cmd),
					 &resp, sizeof(resp));
	if (ret) {
		errno = ret;
		return nullptr;
	}
	return mw.release();
}

int dealloc_mw(struct ibv_mw *mw) noexcept
{
	const int ret = ibv_cmd_dealloc_mw(mw);

	if (ret)
		return ret;
	c_ptr<ibv_mw> p(mw);
	return 0;
}

int bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
	    struct ibv_mw_bind *mw_bind) noexcept
{
	/* libibverbs checked the type, the MR's PD and an MR-less range. */
	if (mw->type != IBV_MW_TYPE_1 ||
	    (mw_bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED))
		return EINVAL;

	struct ibv_send_wr wr = {};
	struct ibv_send_wr *bad = nullptr;

	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	const int ret = post_send(qp, &wr, &bad);
	if (ret)
		return ret;
	/* As on every provider: a failed bind's completion leaves it stale. */
	mw->rkey = wr.bind_mw.rkey;
	return 0;
}

} // namespace sroce
