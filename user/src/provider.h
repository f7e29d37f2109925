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

/*
 * A protection domain, or a parent domain (parent_domain.cpp), which
 * extends this struct. Both are calloc()ed; the counters are only touched
 * through std::atomic_ref.
 */
struct pd {
	struct ibv_pd ibv_pd;
	/* Parent domain only: the real PD it stands for; null in a PD. */
	pd *protection_domain;
	/* PD only: parent domains holding it; dealloc_pd is EBUSY until 0. */
	uint32_t parent_domains;
};

/*
 * An address handle: the kernel resolved the path (and the destination
 * MAC) when it created it; a UD send WQE names it by ah_num, never by a
 * pointer or the uverbs handle.
 */
struct ah {
	struct ibv_ah ibv_ah;
	uint32_t ah_num; /* sroce_create_ah_resp.ah_num, never 0 */
};

static_assert(std::is_standard_layout_v<device> &&
	      offsetof(device, ibv_dev) == 0);
static_assert(std::is_standard_layout_v<context> &&
	      offsetof(context, ibv_ctx) == 0);
static_assert(std::is_standard_layout_v<pd> && offsetof(pd, ibv_pd) == 0);
static_assert(std::is_standard_layout_v<ah> && offsetof(ah, ibv_ah) == 0);

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

/*
 * Whether ibpd is a parent domain. Every verb that takes a PD also takes a
 * parent domain: its ibv_pd carries the real PD's context and uverbs
 * handle, which is all the ibv_cmd_* commands read. Provider code that
 * needs the sroce pd itself must go through to_protection_domain().
 */
inline bool is_parent_domain(struct ibv_pd *ibpd) noexcept
{
	return ibpd && to_pd(ibpd)->protection_domain;
}

inline pd *to_protection_domain(struct ibv_pd *ibpd) noexcept
{
	pd *p = to_pd(ibpd);
	return p->protection_domain ? p->protection_domain : p;
}

inline const ah *to_ah(const struct ibv_ah *ibah) noexcept
{
	return reinterpret_cast<const ah *>(ibah);
}

inline ah *to_ah(struct ibv_ah *ibah) noexcept
{
	return reinterpret_cast<ah *>(ibah);
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

/* parent_domain.cpp: parent and thread domains */
struct ibv_pd *
alloc_parent_domain(struct ibv_context *ibctx,
		    struct ibv_parent_domain_init_attr *attr) noexcept;
int dealloc_parent_domain(struct ibv_pd *ibpd) noexcept;
bool pd_has_parent_domains(pd &p) noexcept;
struct ibv_td *alloc_td(struct ibv_context *ibctx,
			struct ibv_td_init_attr *attr) noexcept;
int dealloc_td(struct ibv_td *ibtd) noexcept;

/* ah.cpp */
struct ibv_ah *create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr) noexcept;
int destroy_ah(struct ibv_ah *ibah) noexcept;

/*
 * The two commands create_ah and destroy_ah issue, so the tests can stand
 * in for the kernel: kernel_ah_cmds holds libibverbs' ibv_cmd_*_ah.
 */
struct ah_cmds {
	int (*create)(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size);
	int (*destroy)(struct ibv_ah *ah);
};
extern const ah_cmds kernel_ah_cmds;
struct ibv_ah *create_ah_using(const ah_cmds &cmds, struct ibv_pd *pd,
			       struct ibv_ah_attr *attr) noexcept;
int destroy_ah_using(const ah_cmds &cmds, struct ibv_ah *ibah) noexcept;

/* mr.cpp */
struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		      uint64_t hca_va, int access) noexcept;
int dereg_mr(struct verbs_mr *vmr) noexcept;
int rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd, void *addr,
	     size_t length, int access) noexcept;
struct ibv_mw *alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type) noexcept;
int dealloc_mw(struct ibv_mw *mw) noexcept;
int bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
	    struct ibv_mw_bind *mw_bind) noexcept;

/* cq.cpp */
struct ibv_cq *create_cq(struct ibv_context *ibctx, int cqe,
			 struct ibv_comp_channel *channel,
			 int comp_vector) noexcept;
struct ibv_cq_ex *create_cq_ex(struct ibv_context *ibctx,
			       struct ibv_cq_init_attr_ex *attr) noexcept;
int poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc) noexcept;
int req_notify_cq(struct ibv_cq *ibcq, int solicited_only) noexcept;
int resize_cq(struct ibv_cq *ibcq, int cqe) noexcept;
int destroy_cq(struct ibv_cq *ibcq) noexcept;

/* qp.cpp */
struct ibv_qp *create_qp(struct ibv_pd *pd,
			 struct ibv_qp_init_attr *attr) noexcept;
struct ibv_qp *create_qp_ex(struct ibv_context *ibctx,
			    struct ibv_qp_init_attr_ex *attr) noexcept;
int query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
	     struct ibv_qp_init_attr *init_attr) noexcept;
int modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
	      int attr_mask) noexcept;
int destroy_qp(struct ibv_qp *ibqp) noexcept;

/* srq.cpp */
struct ibv_srq *create_srq(struct ibv_pd *pd,
			   struct ibv_srq_init_attr *attr) noexcept;
int modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
	       int attr_mask) noexcept;
int query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr) noexcept;
int destroy_srq(struct ibv_srq *ibsrq) noexcept;
int post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr) noexcept;

/* post.cpp */
int post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
	      struct ibv_send_wr **bad_wr) noexcept;
int post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
	      struct ibv_recv_wr **bad_wr) noexcept;

} // namespace sroce

#endif /* SROCE_PROVIDER_H */
