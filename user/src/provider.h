/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The provider's objects and the entry points libibverbs calls.
 *
 * Each sroce object embeds the libibverbs object it extends as its first
 * member, so the pointers libibverbs hands back convert with to_*(). The
 * objects are calloc()ed, freed with free(), and must stay standard-layout.
 * Every entry point is noexcept: the provider is built without exceptions
 * and nothing may unwind into libibverbs' C frames.
 */
#ifndef SROCE_PROVIDER_H
#define SROCE_PROVIDER_H

#include "abi.h"
#include "verbs_private.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace sroce
{

struct device {
	struct verbs_device ibv_dev;
	uint32_t abi_version; /* the kernel's uverbs ABI, from sysfs */
};

struct context {
	struct verbs_context ibv_ctx;
	/* From sroce_alloc_ucontext_resp: limits the kernel enforces. */
	uint32_t uctx_flags;
	uint32_t max_inline_data;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
};

struct pd {
	struct ibv_pd ibv_pd;
};

static_assert(std::is_standard_layout_v<device> &&
	      offsetof(device, ibv_dev) == 0);
static_assert(std::is_standard_layout_v<context> &&
	      offsetof(context, ibv_ctx) == 0);
static_assert(std::is_standard_layout_v<pd> && offsetof(pd, ibv_pd) == 0);

inline device *to_dev(struct ibv_device *ibdev) noexcept
{
	/* ibv_device is first in verbs_device, which is first in device. */
	return reinterpret_cast<device *>(ibdev);
}

inline context *to_ctx(struct ibv_context *ibctx) noexcept
{
	return reinterpret_cast<context *>(verbs_get_ctx(ibctx));
}

inline pd *to_pd(struct ibv_pd *ibpd) noexcept
{
	return reinterpret_cast<pd *>(ibpd);
}

/* provider.cpp: discovery and registration */
extern const struct verbs_match_ent match_table[2];
extern const struct verbs_device_ops device_ops;
bool should_register() noexcept;

/* context.cpp */
extern const struct verbs_context_ops context_ops;
struct verbs_context *alloc_context(struct ibv_device *ibdev, int cmd_fd,
				    void *private_data) noexcept;
void free_context(struct ibv_context *ibctx) noexcept;

/* device.cpp */
int query_device_ex(struct ibv_context *ibctx,
		    const struct ibv_query_device_ex_input *input,
		    struct ibv_device_attr_ex *attr, size_t attr_size) noexcept;
int query_port(struct ibv_context *ibctx, uint8_t port,
	       struct ibv_port_attr *attr) noexcept;

/* pd.cpp */
struct ibv_pd *alloc_pd(struct ibv_context *ibctx) noexcept;
int dealloc_pd(struct ibv_pd *ibpd) noexcept;

} // namespace sroce

#endif /* SROCE_PROVIDER_H */
