// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Per-process device context: opening it (GET_CONTEXT, with sroce's ABI
 * handshake in the driver udata) and the table of verbs it serves.
 */
#include "log.h"
#include "provider.h"
#include "xrc.h"

#include <cerrno>
#include <memory>

namespace sroce
{

namespace
{

/* Undo _verbs_init_and_alloc_context() on every early return. */
struct context_deleter {
	void operator()(context *ctx) const noexcept
	{
		verbs_uninit_context(&ctx->ibv_ctx);
		free(ctx); // NOLINT(cppcoreguidelines-no-malloc)
	}
};
using context_ptr = std::unique_ptr<context, context_deleter>;

using get_context_resp =
	uverbs_resp<ib_uverbs_get_context_resp, sroce_alloc_ucontext_resp>;
static_assert(offsetof(get_context_resp, drv) ==
		      sizeof(ib_uverbs_get_context_resp),
	      "driver udata must directly follow the core response");

} // namespace

/*
 * Slots left null get libibverbs' defaults, which fail with EOPNOTSUPP.
 * Built by a constexpr function so the table is constant-initialized
 * without naming all 76 slots.
 */
static constexpr struct verbs_context_ops make_context_ops() noexcept
{
	struct verbs_context_ops o = {};

	o.alloc_mw = alloc_mw;
	o.alloc_parent_domain = alloc_parent_domain;
	o.alloc_pd = alloc_pd;
	o.alloc_td = alloc_td;
	o.attach_mcast = ibv_cmd_attach_mcast;
	o.bind_mw = bind_mw;
	o.create_ah = create_ah;
	o.create_cq = create_cq;
	o.create_cq_ex = create_cq_ex;
	o.create_qp = create_qp;
	o.create_qp_ex = create_qp_ex;
	o.create_srq = create_srq;
	o.dealloc_mw = dealloc_mw;
	o.dealloc_pd = dealloc_pd;
	o.dealloc_td = dealloc_td;
	o.dereg_mr = dereg_mr;
	o.destroy_ah = destroy_ah;
	o.destroy_cq = destroy_cq;
	o.destroy_qp = destroy_qp;
	o.destroy_srq = destroy_srq;
	o.detach_mcast = ibv_cmd_detach_mcast;
	o.free_context = free_context;
	o.modify_qp = modify_qp;
	o.modify_srq = modify_srq;
	o.poll_cq = poll_cq;
	o.post_recv = post_recv;
	o.post_send = post_send;
	o.post_srq_recv = post_srq_recv;
	o.query_device_ex = query_device_ex;
	o.query_port = query_port;
	o.query_qp = query_qp;
	o.query_srq = query_srq;
	o.reg_mr = reg_mr;
	o.req_notify_cq = req_notify_cq;
	o.rereg_mr = rereg_mr;
	o.resize_cq = resize_cq;
	/* XRC (xrc.cpp) */
	o.close_xrcd = close_xrcd;
	o.create_srq_ex = create_srq_ex;
	o.get_srq_num = get_srq_num;
	o.open_qp = open_qp;
	o.open_xrcd = open_xrcd;
	return o;
}

constinit const struct verbs_context_ops context_ops = make_context_ops();

struct verbs_context *alloc_context(struct ibv_device *ibdev, int cmd_fd,
				    void * /*private_data*/) noexcept
{
	/*
	 * libibverbs allocates the whole provider context and wants to know
	 * where the verbs_context sits in it: the offset, cast to a pointer.
	 */
	context_ptr ctx(static_cast<context *>(_verbs_init_and_alloc_context(
		ibdev, cmd_fd, sizeof(context),
		// NOLINTNEXTLINE(performance-no-int-to-ptr): the ABI wants this
		reinterpret_cast<verbs_context *>(offsetof(context, ibv_ctx)),
		SROCE_DRIVER_ID)));
	if (!ctx)
		return nullptr;

	struct ibv_get_context cmd = {};
	get_context_resp resp = {};
	const int ret = sroce_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd),
					      resp.ibv(), sizeof(resp));
	if (ret) {
		errno = ret;
		return nullptr;
	}

	/*
	 * The uverbs ABI version already matched in sysfs; this one proves
	 * the kernel actually filled in sroce's udata (an all-zero response
	 * means it did not) and speaks the same sroce-abi.h.
	 */
	if (resp.drv.abi_version != SROCE_UVERBS_ABI_VERSION) {
		log(log_level::err,
		    "%s: kernel sroce ABI %u, provider ABI %u; not opening",
		    ibv_get_device_name(ibdev), resp.drv.abi_version,
		    SROCE_UVERBS_ABI_VERSION);
		errno = EPROTO;
		return nullptr;
	}
	ctx->uctx_flags = resp.drv.flags;
	ctx->max_inline_data = resp.drv.max_inline_data;
	ctx->max_send_sge = resp.drv.max_send_sge;
	ctx->max_recv_sge = resp.drv.max_recv_sge;

	verbs_set_ops(&ctx->ibv_ctx, &context_ops);
	return &ctx.release()->ibv_ctx;
}

void free_context(struct ibv_context *ibctx) noexcept
{
	context_ptr ctx(to_ctx(ibctx));
}

} // namespace sroce
