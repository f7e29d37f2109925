// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Our private-ABI declarations against the real libibverbs.so.1: wrong slot
 * order or offsets in verbs_private.h make these fail, while the compiler
 * and linker would happily accept them.
 */
#include "test_util.h"
#include "util.h"
#include "verbs_private.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace
{

constexpr size_t num_slots = sizeof(verbs_context_ops) / sizeof(void *);
static_assert(num_slots == (SROCE_RDMA_CORE >= 65 ? 93 : 76));

/* A distinct, recognisable non-pointer per slot; never called. */
uintptr_t marker(size_t slot)
{
	return 0x5e0c0000000000ULL + (slot + 1) * 0x10;
}

struct probe {
	sroce::c_ptr<verbs_context> mem;
	verbs_context *vctx;
	std::vector<uint64_t> priv; /* stands in for verbs_ex_private */
	verbs_context_ops ops;

	probe() :
		mem(sroce::c_zalloc<verbs_context>()), vctx(mem.get()),
		priv(512, 0), ops{}
	{
		vctx->sz = sizeof(*vctx);
		vctx->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
		vctx->priv = reinterpret_cast<verbs_ex_private *>(priv.data());

		std::array<uintptr_t, num_slots> m{};
		for (size_t i = 0; i < num_slots; i++)
			m[i] = marker(i);
		static_assert(sizeof(m) == sizeof(ops));
		memcpy(&ops, m.data(), sizeof(ops));
	}
	~probe() = default;
	probe(const probe &) = delete;
	probe &operator=(const probe &) = delete;
	probe(probe &&) = delete;
	probe &operator=(probe &&) = delete;
};

template <typename F> uintptr_t bits(const F &field)
{
	static_assert(sizeof(F) == sizeof(uintptr_t));
	uintptr_t v = 0;
	memcpy(&v, &field, sizeof(v));
	return v;
}

#define SLOT(name) (offsetof(verbs_context_ops, name) / sizeof(void *))

struct public_slot {
	const char *name;
	size_t slot;
	size_t vctx_offset; /* where verbs.h says the op is visible */
};

constexpr size_t ctx_ops =
	offsetof(verbs_context, context) + offsetof(ibv_context, ops);

// clang-format off
#define CTX(name) \
	public_slot{#name, SLOT(name), ctx_ops + offsetof(ibv_context_ops, name)}
#define CTX_COMPAT(name) \
	public_slot{"_compat_" #name, SLOT(name), \
		    ctx_ops + offsetof(ibv_context_ops, _compat_##name)}
#define VCTX(field, name) \
	public_slot{#name, SLOT(name), offsetof(verbs_context, field)}
// clang-format on

/* Every op libibverbs mirrors into a public struct, and where. */
const public_slot public_slots[] = {
	CTX(alloc_mw),
	CTX(bind_mw),
	CTX(dealloc_mw),
	CTX(poll_cq),
	CTX(post_recv),
	CTX(post_send),
	CTX(post_srq_recv),
	CTX(req_notify_cq),

	CTX_COMPAT(alloc_pd),
	CTX_COMPAT(async_event),
	CTX_COMPAT(attach_mcast),
	CTX_COMPAT(cq_event),
	CTX_COMPAT(create_ah),
	CTX_COMPAT(create_cq),
	CTX_COMPAT(create_qp),
	CTX_COMPAT(create_srq),
	CTX_COMPAT(dealloc_pd),
	CTX_COMPAT(dereg_mr),
	CTX_COMPAT(destroy_ah),
	CTX_COMPAT(destroy_cq),
	CTX_COMPAT(destroy_qp),
	CTX_COMPAT(destroy_srq),
	CTX_COMPAT(detach_mcast),
	CTX_COMPAT(modify_qp),
	CTX_COMPAT(modify_srq),
	CTX_COMPAT(query_qp),
	CTX_COMPAT(query_srq),
	CTX_COMPAT(reg_mr),
	CTX_COMPAT(rereg_mr),
	CTX_COMPAT(resize_cq),

	VCTX(advise_mr, advise_mr),
	VCTX(alloc_dm, alloc_dm),
	VCTX(alloc_null_mr, alloc_null_mr),
	VCTX(alloc_parent_domain, alloc_parent_domain),
	VCTX(alloc_td, alloc_td),
	VCTX(attach_counters_point_flow, attach_counters_point_flow),
	VCTX(create_counters, create_counters),
	VCTX(close_xrcd, close_xrcd),
	VCTX(ibv_create_flow, create_flow),
	VCTX(create_flow_action_esp, create_flow_action_esp),
	VCTX(create_qp_ex, create_qp_ex),
	VCTX(create_rwq_ind_table, create_rwq_ind_table),
	VCTX(create_srq_ex, create_srq_ex),
	VCTX(create_wq, create_wq),
	VCTX(dealloc_td, dealloc_td),
	VCTX(destroy_counters, destroy_counters),
	VCTX(ibv_destroy_flow, destroy_flow),
	VCTX(destroy_flow_action, destroy_flow_action),
	VCTX(destroy_rwq_ind_table, destroy_rwq_ind_table),
	VCTX(destroy_wq, destroy_wq),
	VCTX(free_dm, free_dm),
	VCTX(get_srq_num, get_srq_num),
	VCTX(modify_cq, modify_cq),
	VCTX(modify_flow_action_esp, modify_flow_action_esp),
	VCTX(modify_qp_rate_limit, modify_qp_rate_limit),
	VCTX(modify_wq, modify_wq),
	VCTX(open_qp, open_qp),
	VCTX(open_xrcd, open_xrcd),
	VCTX(post_srq_ops, post_srq_ops),
	VCTX(query_device_ex, query_device_ex),
	VCTX(query_rt_values, query_rt_values),
	VCTX(read_counters, read_counters),
	VCTX(reg_dm_mr, reg_dm_mr),
#if SROCE_RDMA_CORE >= 65
	VCTX(alloc_buf, alloc_buf),
	VCTX(alloc_dmah, alloc_dmah),
	VCTX(dealloc_dmah, dealloc_dmah),
	VCTX(dm_export_dmabuf_fd, dm_export_dmabuf_fd),
	VCTX(free_buf, free_buf),
	VCTX(reg_mr_ex, reg_mr_ex),
#endif
};

/* Where libibverbs 44 keeps its full copy of the table inside priv. */
constexpr size_t priv_ops_offset = 24;

TEST(VerbsSetOps, EveryPublicSlotLandsWhereVerbsHSays)
{
	probe p;
	verbs_set_ops(p.vctx, &p.ops);

	const auto *base = reinterpret_cast<const unsigned char *>(p.vctx);
	for (const auto &s : public_slots) {
		uintptr_t got = 0;
		memcpy(&got, base + s.vctx_offset, sizeof(got));
		EXPECT_EQ(got, marker(s.slot)) << s.name;
	}
	/* The public context.ops members we will rely on, spelled out. */
	EXPECT_EQ(bits(p.vctx->context.ops.poll_cq), marker(SLOT(poll_cq)));
	EXPECT_EQ(bits(p.vctx->context.ops.post_send), marker(SLOT(post_send)));
	EXPECT_EQ(bits(p.vctx->context.ops.post_recv), marker(SLOT(post_recv)));
	EXPECT_EQ(bits(p.vctx->context.ops.req_notify_cq),
		  marker(SLOT(req_notify_cq)));
	EXPECT_EQ(bits(p.vctx->query_device_ex), marker(SLOT(query_device_ex)));
}

TEST(VerbsSetOps, TouchesNothingElseInTheContext)
{
	probe p;
	auto expect = sroce::c_zalloc<verbs_context>();
	memcpy(expect.get(), p.vctx, sizeof(*expect));

	auto *e = reinterpret_cast<unsigned char *>(expect.get());
	for (const auto &s : public_slots) {
		const uintptr_t m = marker(s.slot);
		memcpy(e + s.vctx_offset, &m, sizeof(m));
	}
	verbs_set_ops(p.vctx, &p.ops);
	EXPECT_TRUE(sroce::test::same_bytes(expect.get(), p.vctx,
					    sizeof(verbs_context)));
}

TEST(VerbsSetOps, WholeTableIsCopiedIntoPriv)
{
	probe p;
	verbs_set_ops(p.vctx, &p.ops);

	const auto *priv =
		reinterpret_cast<const unsigned char *>(p.priv.data());
	const size_t priv_len = p.priv.size() * sizeof(uint64_t);
	size_t found = SIZE_MAX;
	for (size_t off = 0; off + sizeof(p.ops) <= priv_len; off += 8) {
		if (memcmp(priv + off, &p.ops, sizeof(p.ops)) == 0) {
			found = off;
			break;
		}
	}
	ASSERT_NE(found, SIZE_MAX)
		<< sizeof(p.ops) << "-byte ops table not found in priv";
	EXPECT_EQ(found, priv_ops_offset);
	/* Nothing beyond the table: it is exactly as long as ours. */
	EXPECT_EQ(priv[found + sizeof(p.ops)], 0);
}

TEST(VerbsSetOps, NullSlotsDoNotOverwrite)
{
	probe p;
	verbs_set_ops(p.vctx, &p.ops);

	verbs_context_ops only_poll = {};
	only_poll.poll_cq =
		reinterpret_cast<decltype(only_poll.poll_cq)>(0x1230);
	verbs_set_ops(p.vctx, &only_poll);
	EXPECT_EQ(bits(p.vctx->context.ops.poll_cq), 0x1230U);
	EXPECT_EQ(bits(p.vctx->context.ops.post_send), marker(SLOT(post_send)));
}

TEST(VerbsQp, QpToQpExHonoursCompMask)
{
	auto mem = sroce::c_zalloc<verbs_qp>();
	verbs_qp *vqp = mem.get();

	EXPECT_EQ(ibv_qp_to_qp_ex(&vqp->qp), nullptr);
	vqp->comp_mask = VERBS_QP_XRCD;
	EXPECT_EQ(ibv_qp_to_qp_ex(&vqp->qp), nullptr);
	vqp->comp_mask = VERBS_QP_EX;
	EXPECT_EQ(ibv_qp_to_qp_ex(&vqp->qp), &vqp->qp_ex);
	/* The qp_ex view starts with the same ibv_qp. */
	EXPECT_EQ(static_cast<void *>(&vqp->qp_ex.qp_base),
		  static_cast<void *>(&vqp->qp));
}

} // namespace
