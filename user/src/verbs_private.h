/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Our own declarations of libibverbs' private provider ABI ("IBVERBS_PRIVATE_34")
 * as shipped in rdma-core 44 (Debian 12) and 56 (Debian 13).
 *
 * rdma-core does not install its driver.h: the provider interface is private
 * on purpose and only providers built in the same tree are supported. The
 * private ABI number 34 spans rdma-core 34..56, but structs changed inside
 * that range (verbs_context_ops grew in v35/v36; verbs_qp embeds the public
 * ibv_qp_ex, which grew wr_flush in v45: 352 bytes in 44, 360 in 56), so
 * these declarations are correct for the releases below and nothing else.
 * SROCE_RDMA_CORE (config.h, from the libibverbs this is built against)
 * says which; CMake refuses any other. That is why every size and offset is
 * asserted below, per release, why the tests call the real libibverbs to
 * check the ops table, and why the provider refuses to register unless the
 * mapped libibverbs is the file it was built against (abi_guard.h).
 *
 * Written from the documented layout facts, not copied from rdma-core.
 */
#ifndef SROCE_VERBS_PRIVATE_H
#define SROCE_VERBS_PRIVATE_H

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "config.h"

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <sys/types.h>

/*
 * The uapi request and response structs end in a flexible array, which C++
 * rejects anywhere but at the very end of the outermost struct, so they
 * cannot be embedded in front of driver udata. libibverbs fills the core
 * payload itself; the provider only needs its size and alignment, and reads
 * a core field through core_of() in the rare case it needs one.
 */
template <typename Core> struct alignas(Core) uverbs_core {
	unsigned char bytes[sizeof(Core)];
};

/* A uverbs response followed by the driver's part, as the kernel writes it. */
template <typename Core, typename Drv> struct uverbs_resp {
	uverbs_core<Core> core;
	Drv drv;

	Core *ibv() noexcept
	{
		return reinterpret_cast<Core *>(core.bytes);
	}
};

extern "C" {

/* ---- public structs that live in driver.h, not verbs.h ---------------- */

enum verbs_qp_mask : uint32_t {
	VERBS_QP_XRCD = 1U << 0,
	VERBS_QP_EX = 1U << 1,
};

enum ibv_mr_type : int {
	IBV_MR_TYPE_MR,
	IBV_MR_TYPE_NULL_MR,
	IBV_MR_TYPE_IMPORTED_MR,
	IBV_MR_TYPE_DMABUF_MR,
};

struct verbs_xrcd {
	struct ibv_xrcd xrcd;
	uint32_t comp_mask;
	uint32_t handle;
};

struct verbs_srq {
	struct ibv_srq srq;
	uint32_t comp_mask;
	enum ibv_srq_type srq_type;
	struct verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};

struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask; /* VERBS_QP_* */
	struct verbs_xrcd *xrcd;
};

struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum ibv_mr_type mr_type;
	int access;
};

/* ---- device discovery and matching ----------------------------------- */

struct verbs_list_node {
	struct verbs_list_node *next;
	struct verbs_list_node *prev;
};

enum verbs_match_kind : uint8_t {
	VERBS_MATCH_SENTINEL = 0,
	VERBS_MATCH_PCI = 1,
	VERBS_MATCH_MODALIAS = 2,
	VERBS_MATCH_DRIVER_ID = 3,
};

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind; /* enum verbs_match_kind */
};

enum {
	VERBS_SYSFS_NAME_MAX = 64,
	VERBS_SYSFS_PATH_MAX = 256,
	VERBS_MODALIAS_MAX = 512,
};

struct verbs_sysfs_dev {
	struct verbs_list_node entry;
	void *provider_data;
	const struct verbs_match_ent *match;
	unsigned int flags;
	char sysfs_name[VERBS_SYSFS_NAME_MAX];
	dev_t sysfs_cdev;
	char ibdev_name[VERBS_SYSFS_NAME_MAX];
	char ibdev_path[VERBS_SYSFS_PATH_MAX];
	char modalias[VERBS_MODALIAS_MAX];
	uint64_t node_guid;
	uint32_t driver_id;
	enum ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver;
	struct timespec time_created;
};

struct verbs_context_ops;
struct verbs_device;

struct verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

/* Owned by libibverbs after alloc_device; the provider only embeds it. */
struct verbs_device {
	struct ibv_device device;
	const struct verbs_device_ops *ops;
	int refcount; /* C11 atomic_int in libibverbs; never touched here */
	struct verbs_list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

/*
 * ---- the per-context operations table (sorted by name): 76 slots in
 * rdma-core 44 and 56; 65 adds 17 (buffers, DMA handles, completion
 * counters, port speed, reg_mr_ex), 93 in all.
 */

struct ibv_ops_wr;
struct ibv_ece;
struct ibv_buf;
struct ibv_dmah;
struct ibv_dmah_init_attr;
struct ibv_comp_cntr;
struct ibv_comp_cntr_init_attr;
struct ibv_comp_cntr_caps;
struct ibv_qp_attach_comp_cntr_attr;
struct ibv_mr_init_attr;

struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
#if SROCE_RDMA_CORE >= 65
	void *(*alloc_buf)(struct ibv_pd *pd, size_t size,
			   struct ibv_buf **buf);
#endif
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
#if SROCE_RDMA_CORE >= 65
	struct ibv_dmah *(*alloc_dmah)(struct ibv_context *context,
				       struct ibv_dmah_init_attr *attr);
#endif
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	struct ibv_pd *(*alloc_parent_domain)(
		struct ibv_context *context,
		struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	struct ibv_td *(*alloc_td)(struct ibv_context *context,
				   struct ibv_td_init_attr *init_attr);
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	int (*attach_counters_point_flow)(struct ibv_counters *counters,
					  struct ibv_counter_attach_attr *attr,
					  struct ibv_flow *flow);
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd,
				    struct ibv_ah_attr *attr);
#if SROCE_RDMA_CORE >= 65
	struct ibv_comp_cntr *(*create_comp_cntr)(
		struct ibv_context *context,
		struct ibv_comp_cntr_init_attr *attr);
#endif
	struct ibv_counters *(*create_counters)(
		struct ibv_context *context,
		struct ibv_counters_init_attr *init_attr);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(
		struct ibv_context *context,
		struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp,
					struct ibv_flow_attr *flow_attr);
	struct ibv_flow_action *(*create_flow_action_esp)(
		struct ibv_context *context,
		struct ibv_flow_action_esp_attr *attr);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(
		struct ibv_context *context,
		struct ibv_qp_init_attr_ex *qp_init_attr_ex);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(
		struct ibv_context *context,
		struct ibv_rwq_ind_table_init_attr *init_attr);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *srq_init_attr);
	struct ibv_srq *(*create_srq_ex)(
		struct ibv_context *context,
		struct ibv_srq_init_attr_ex *srq_init_attr_ex);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *wq_init_attr);
#if SROCE_RDMA_CORE >= 65
	int (*dealloc_dmah)(struct ibv_dmah *dmah);
#endif
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*dealloc_td)(struct ibv_td *td);
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
#if SROCE_RDMA_CORE >= 65
	int (*destroy_comp_cntr)(struct ibv_comp_cntr *comp_cntr);
#endif
	int (*destroy_counters)(struct ibv_counters *counters);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_flow)(struct ibv_flow *flow);
	int (*destroy_flow_action)(struct ibv_flow_action *action);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *rwq_ind_table);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
#if SROCE_RDMA_CORE >= 65
	int (*dm_export_dmabuf_fd)(struct ibv_dm *dm);
	void (*free_buf)(struct ibv_buf *buf);
#endif
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_dm *(*import_dm)(struct ibv_context *context,
				    uint32_t dm_handle);
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
#if SROCE_RDMA_CORE >= 65
	int (*inc_comp_cntr)(struct ibv_comp_cntr *comp_cntr, uint64_t amount);
	int (*inc_err_comp_cntr)(struct ibv_comp_cntr *comp_cntr,
				 uint64_t amount);
#endif
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	int (*modify_flow_action_esp)(struct ibv_flow_action *action,
				      struct ibv_flow_action_esp_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	int (*modify_qp_rate_limit)(struct ibv_qp *qp,
				    struct ibv_qp_rate_limit_attr *attr);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			  int srq_attr_mask);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *wq_attr);
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(
		struct ibv_context *context,
		struct ibv_xrcd_init_attr *xrcd_init_attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
			     struct ibv_recv_wr **bad_recv_wr);
#if SROCE_RDMA_CORE >= 65
	int (*qp_attach_comp_cntr)(struct ibv_qp *qp,
				   struct ibv_comp_cntr *comp_cntr,
				   struct ibv_qp_attach_comp_cntr_attr *attr);
	int (*query_comp_cntr_caps)(struct ibv_context *context,
				    struct ibv_comp_cntr_caps *caps,
				    size_t caps_size);
#endif
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
#if SROCE_RDMA_CORE >= 65
	int (*query_port_speed)(struct ibv_context *context, uint32_t port_num,
				uint64_t *speed);
#endif
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(struct ibv_qp *qp, enum ibv_wr_opcode op,
				      uint32_t flags);
	int (*query_rt_values)(struct ibv_context *context,
			       struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
#if SROCE_RDMA_CORE >= 65
	int (*read_comp_cntr)(struct ibv_comp_cntr *comp_cntr, uint64_t *value);
#endif
	int (*read_counters)(struct ibv_counters *counters,
			     uint64_t *counters_value, uint32_t ncounters,
			     uint32_t flags);
#if SROCE_RDMA_CORE >= 65
	int (*read_err_comp_cntr)(struct ibv_comp_cntr *comp_cntr,
				  uint64_t *value);
#endif
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
#if SROCE_RDMA_CORE >= 65
	struct ibv_mr *(*reg_mr_ex)(struct ibv_pd *pd,
				    struct ibv_mr_init_attr *mr_init_attr);
#endif
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
#if SROCE_RDMA_CORE >= 65
	int (*set_comp_cntr)(struct ibv_comp_cntr *comp_cntr, uint64_t value);
#endif
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
#if SROCE_RDMA_CORE >= 65
	int (*set_err_comp_cntr)(struct ibv_comp_cntr *comp_cntr,
				 uint64_t value);
#endif
	void (*unimport_dm)(struct ibv_dm *dm);
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};

/* ---- command buffers -------------------------------------------------- */

/*
 * libibverbs' command wrappers are "ib_uverbs_cmd_hdr + uapi request", and a
 * provider appends its own udata right after. uverbs_core<> is defined above
 * the extern "C" block; see there.
 */
struct ibv_get_context {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_get_context> core;
};
struct ibv_query_port {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_query_port> core;
};
struct ibv_alloc_pd {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_alloc_pd> core;
};
struct ibv_reg_mr {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_reg_mr> core;
};
struct ibv_rereg_mr {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_rereg_mr> core;
};
struct ibv_alloc_mw {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_alloc_mw> core;
};
struct ibv_create_cq {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_create_cq> core;
};
struct ibv_resize_cq {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_resize_cq> core;
};
struct ibv_create_srq {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_create_srq> core;
};
struct ibv_create_xsrq {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_create_xsrq> core;
};
struct ibv_modify_srq {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_modify_srq> core;
};
struct ibv_query_srq {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_query_srq> core;
};
struct ibv_create_qp {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_create_qp> core;
};
struct ibv_query_qp {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_query_qp> core;
};
struct ibv_modify_qp {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_modify_qp> core;
};
struct ibv_post_send {
	struct ib_uverbs_cmd_hdr hdr;
	uverbs_core<struct ib_uverbs_post_send> core;
};
struct ibv_create_cq_ex {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex_hdr;
	uverbs_core<struct ib_uverbs_ex_create_cq> core;
};
struct ibv_create_qp_ex {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex_hdr;
	uverbs_core<struct ib_uverbs_ex_create_qp> core;
};

/* Opaque: only the ioctl-based commands use it; an rxe-like provider not. */
struct ibv_command_buffer;

/* ---- IBVERBS_PRIVATE_34 functions ------------------------------------- */

/* The C name with the ABI number: a PABI change fails the dlopen, loudly. */
#if SROCE_PABI == 34
void verbs_register_driver_34(const struct verbs_device_ops *ops);
#define sroce_verbs_register_driver verbs_register_driver_34
#elif SROCE_PABI == 65
void verbs_register_driver_65(const struct verbs_device_ops *ops);
#define sroce_verbs_register_driver verbs_register_driver_65
#else
#error "no registration function declared for this private ABI"
#endif

/*
 * context_offset is offsetof(provider_ctx, verbs_context member) cast to a
 * pointer; libibverbs allocates alloc_size zeroed bytes and returns the base.
 */
void *_verbs_init_and_alloc_context( // NOLINT(bugprone-reserved-identifier)
	struct ibv_device *device, int cmd_fd, size_t alloc_size,
	struct verbs_context *context_offset, uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);
void __verbs_log( // NOLINT(bugprone-reserved-identifier)
	struct verbs_context *ctx, uint32_t level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#if SROCE_RDMA_CORE >= 65
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ibv_fd_arr *fd_arr,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
#else
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
#endif
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);

int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct ibv_rereg_mr *cmd, size_t cmd_sz,
		     struct ib_uverbs_rereg_mr_resp *resp, size_t resp_sz);
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct ibv_alloc_mw *cmd,
		     size_t cmd_size, struct ib_uverbs_alloc_mw_resp *resp,
		     size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);

int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
#if SROCE_RDMA_CORE >= 65
struct verbs_create_cq_prov_attr; /* provider-allocated CQ buffers */
int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 struct verbs_create_cq_prov_attr *prov_attr,
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags);
#else
int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags);
#endif
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only);

int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr_ex,
			  struct ibv_create_xsrq *cmd, size_t cmd_size,
			  struct ib_uverbs_create_srq_resp *resp,
			  size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);

int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
		      struct ibv_qp_init_attr *attr, struct ibv_create_qp *cmd,
		      size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,
		      size_t resp_size);
int ibv_cmd_create_qp_ex2(struct ibv_context *context, struct verbs_qp *qp,
			  struct ibv_qp_init_attr_ex *qp_attr,
			  struct ibv_create_qp_ex *cmd, size_t cmd_size,
			  struct ib_uverbs_ex_create_qp_resp *resp,
#if SROCE_RDMA_CORE >= 65
			  size_t resp_size, struct ibv_command_buffer *driver);
#else
			  size_t resp_size);
#endif
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);

int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);
int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);

} /* extern "C" */

/*
 * The commands whose arguments differ between releases, with one signature
 * for the rest of the provider: rdma-core 65 added a file descriptor array
 * (get_context), a provider buffer description (create_cq_ex) and ioctl
 * driver attributes (create_qp_ex2); sroce passes none of them.
 */
inline int sroce_cmd_get_context(struct verbs_context *context,
				 struct ibv_get_context *cmd, size_t cmd_size,
				 struct ib_uverbs_get_context_resp *resp,
				 size_t resp_size) noexcept
{
#if SROCE_RDMA_CORE >= 65
	return ibv_cmd_get_context(context, cmd, cmd_size, nullptr, resp,
				   resp_size);
#else
	return ibv_cmd_get_context(context, cmd, cmd_size, resp, resp_size);
#endif
}

inline int sroce_cmd_create_cq_ex(struct ibv_context *context,
				  const struct ibv_cq_init_attr_ex *cq_attr,
				  struct verbs_cq *cq,
				  struct ibv_create_cq_ex *cmd, size_t cmd_size,
				  struct ib_uverbs_ex_create_cq_resp *resp,
				  size_t resp_size, uint32_t cmd_flags) noexcept
{
#if SROCE_RDMA_CORE >= 65
	return ibv_cmd_create_cq_ex(context, cq_attr, nullptr, cq, cmd,
				    cmd_size, resp, resp_size, cmd_flags);
#else
	return ibv_cmd_create_cq_ex(context, cq_attr, cq, cmd, cmd_size, resp,
				    resp_size, cmd_flags);
#endif
}

inline int sroce_cmd_create_qp_ex2(struct ibv_context *context,
				   struct verbs_qp *qp,
				   struct ibv_qp_init_attr_ex *qp_attr,
				   struct ibv_create_qp_ex *cmd,
				   size_t cmd_size,
				   struct ib_uverbs_ex_create_qp_resp *resp,
				   size_t resp_size) noexcept
{
#if SROCE_RDMA_CORE >= 65
	return ibv_cmd_create_qp_ex2(context, qp, qp_attr, cmd, cmd_size, resp,
				     resp_size, nullptr);
#else
	return ibv_cmd_create_qp_ex2(context, qp, qp_attr, cmd, cmd_size, resp,
				     resp_size);
#endif
}

/*
 * driver.h's ibv_initialize_parent_domain() is a static inline, so it is
 * not in libibverbs' symbol table: this is the same two assignments. To
 * libibverbs' core code, and to every ibv_cmd_* command, the parent domain
 * is then interchangeable with the protection domain it contains.
 */
inline void ibv_initialize_parent_domain(struct ibv_pd *parent_domain,
					 struct ibv_pd *contained_pd) noexcept
{
	parent_domain->context = contained_pd->context;
	parent_domain->handle = contained_pd->handle;
}

/* Levels for __verbs_log (VERBS_LOG_LEVEL in the environment). */
enum : uint32_t {
	SROCE_VERBS_LOG_ERR = 1,
	SROCE_VERBS_LOG_WARN = 2,
	SROCE_VERBS_LOG_INFO = 3,
	SROCE_VERBS_LOG_DEBUG = 4,
};

/*
 * ---- layout checks: every value below was measured on the release's own
 * libibverbs (44.0: Debian 12; 56.1: Debian 13). What depends on verbs.h
 * (ibv_qp_ex, and verbs_qp around it) differs between them.
 */
#if SROCE_RDMA_CORE == 44
#define SROCE_IBV_QP_EX_SIZE 352
#elif SROCE_RDMA_CORE == 56 || SROCE_RDMA_CORE == 65
#define SROCE_IBV_QP_EX_SIZE 360
#else
#error "verbs_private.h declares rdma-core 44, 56 and 65 only (user/cmake/rdma_core.cmake)"
#endif
/* 65's verbs_context has six more entry points (48 bytes) before sz. */
#if SROCE_RDMA_CORE >= 65
#define SROCE_VERBS_CONTEXT_GROWTH 48
#define SROCE_OPS_65(n)		   (n)
#else
#define SROCE_VERBS_CONTEXT_GROWTH 0
#define SROCE_OPS_65(n)		   0
#endif

#define SROCE_ASSERT_SIZE(type, size) \
	static_assert(sizeof(struct type) == (size), "ABI size of " #type)
#define SROCE_ASSERT_OFF(type, member, off)                   \
	static_assert(offsetof(struct type, member) == (off), \
		      "ABI offset of " #type "::" #member)

SROCE_ASSERT_SIZE(verbs_device_ops, 72);
SROCE_ASSERT_OFF(verbs_device_ops, name, 0);
SROCE_ASSERT_OFF(verbs_device_ops, match_min_abi_version, 8);
SROCE_ASSERT_OFF(verbs_device_ops, match_max_abi_version, 12);
SROCE_ASSERT_OFF(verbs_device_ops, match_table, 16);
SROCE_ASSERT_OFF(verbs_device_ops, static_providers, 24);
SROCE_ASSERT_OFF(verbs_device_ops, match_device, 32);
SROCE_ASSERT_OFF(verbs_device_ops, alloc_context, 40);
SROCE_ASSERT_OFF(verbs_device_ops, import_context, 48);
SROCE_ASSERT_OFF(verbs_device_ops, alloc_device, 56);
SROCE_ASSERT_OFF(verbs_device_ops, uninit_device, 64);

SROCE_ASSERT_SIZE(verbs_match_ent, 24);
SROCE_ASSERT_OFF(verbs_match_ent, driver_data, 0);
SROCE_ASSERT_OFF(verbs_match_ent, u, 8);
SROCE_ASSERT_OFF(verbs_match_ent, vendor, 16);
SROCE_ASSERT_OFF(verbs_match_ent, device, 18);
SROCE_ASSERT_OFF(verbs_match_ent, kind, 20);

SROCE_ASSERT_SIZE(verbs_sysfs_dev, 992);
SROCE_ASSERT_OFF(verbs_sysfs_dev, provider_data, 16);
SROCE_ASSERT_OFF(verbs_sysfs_dev, match, 24);
SROCE_ASSERT_OFF(verbs_sysfs_dev, flags, 32);
SROCE_ASSERT_OFF(verbs_sysfs_dev, sysfs_name, 36);
SROCE_ASSERT_OFF(verbs_sysfs_dev, sysfs_cdev, 104);
SROCE_ASSERT_OFF(verbs_sysfs_dev, ibdev_name, 112);
SROCE_ASSERT_OFF(verbs_sysfs_dev, ibdev_path, 176);
SROCE_ASSERT_OFF(verbs_sysfs_dev, modalias, 432);
SROCE_ASSERT_OFF(verbs_sysfs_dev, node_guid, 944);
SROCE_ASSERT_OFF(verbs_sysfs_dev, driver_id, 952);
SROCE_ASSERT_OFF(verbs_sysfs_dev, node_type, 956);
SROCE_ASSERT_OFF(verbs_sysfs_dev, ibdev_idx, 960);
SROCE_ASSERT_OFF(verbs_sysfs_dev, num_ports, 964);
SROCE_ASSERT_OFF(verbs_sysfs_dev, abi_ver, 968);
SROCE_ASSERT_OFF(verbs_sysfs_dev, time_created, 976);

SROCE_ASSERT_SIZE(verbs_device, 712);
SROCE_ASSERT_OFF(verbs_device, device, 0);
SROCE_ASSERT_OFF(verbs_device, ops, 664);
SROCE_ASSERT_OFF(verbs_device, refcount, 672);
SROCE_ASSERT_OFF(verbs_device, entry, 680);
SROCE_ASSERT_OFF(verbs_device, sysfs, 696);
SROCE_ASSERT_OFF(verbs_device, core_support, 704);

/* Offsets: 44's, plus 8 for each slot 65 added before the member. */
SROCE_ASSERT_SIZE(verbs_context_ops, 608 + SROCE_OPS_65(136));
SROCE_ASSERT_OFF(verbs_context_ops, advise_mr, 0);
SROCE_ASSERT_OFF(verbs_context_ops, import_dm, 336 + SROCE_OPS_65(56));
SROCE_ASSERT_OFF(verbs_context_ops, poll_cq, 424 + SROCE_OPS_65(72));
SROCE_ASSERT_OFF(verbs_context_ops, query_qp_data_in_order,
		 496 + SROCE_OPS_65(96));
SROCE_ASSERT_OFF(verbs_context_ops, unimport_dm, 584 + SROCE_OPS_65(136));
SROCE_ASSERT_OFF(verbs_context_ops, unimport_pd, 600 + SROCE_OPS_65(136));

SROCE_ASSERT_SIZE(ibv_device, 664);
SROCE_ASSERT_SIZE(ibv_context, 328);
SROCE_ASSERT_SIZE(verbs_context, 648 + SROCE_VERBS_CONTEXT_GROWTH);
SROCE_ASSERT_OFF(verbs_context, sz, 312 + SROCE_VERBS_CONTEXT_GROWTH);
SROCE_ASSERT_OFF(verbs_context, context, 320 + SROCE_VERBS_CONTEXT_GROWTH);
SROCE_ASSERT_SIZE(verbs_cq, 288);
SROCE_ASSERT_SIZE(verbs_qp, SROCE_IBV_QP_EX_SIZE + 16);
SROCE_ASSERT_OFF(verbs_qp, comp_mask, SROCE_IBV_QP_EX_SIZE);
SROCE_ASSERT_OFF(verbs_qp, xrcd, SROCE_IBV_QP_EX_SIZE + 8);
SROCE_ASSERT_SIZE(verbs_srq, 160);
SROCE_ASSERT_SIZE(verbs_mr, 56);
SROCE_ASSERT_OFF(verbs_mr, mr_type, 48);
SROCE_ASSERT_OFF(verbs_mr, access, 52);
SROCE_ASSERT_SIZE(verbs_xrcd, 16);
SROCE_ASSERT_SIZE(ibv_qp, 160);
SROCE_ASSERT_SIZE(ibv_qp_ex, SROCE_IBV_QP_EX_SIZE);
SROCE_ASSERT_SIZE(ibv_cq, 128);
SROCE_ASSERT_SIZE(ibv_cq_ex, 288);
SROCE_ASSERT_SIZE(ibv_srq, 128);
SROCE_ASSERT_SIZE(ibv_mr, 48);
SROCE_ASSERT_SIZE(ibv_pd, 16);
SROCE_ASSERT_SIZE(ibv_ah, 24);

SROCE_ASSERT_SIZE(ibv_get_context, 16);
SROCE_ASSERT_SIZE(ibv_query_port, 24);
SROCE_ASSERT_SIZE(ibv_alloc_pd, 16);
SROCE_ASSERT_SIZE(ibv_reg_mr, 48);
SROCE_ASSERT_SIZE(ibv_rereg_mr, 56);
SROCE_ASSERT_SIZE(ibv_alloc_mw, 24);
SROCE_ASSERT_SIZE(ibv_create_cq, 40);
SROCE_ASSERT_SIZE(ibv_resize_cq, 24);
SROCE_ASSERT_SIZE(ibv_create_srq, 40);
SROCE_ASSERT_SIZE(ibv_create_xsrq, 56);
SROCE_ASSERT_SIZE(ibv_modify_srq, 24);
SROCE_ASSERT_SIZE(ibv_query_srq, 24);
SROCE_ASSERT_SIZE(ibv_create_qp, 64);
SROCE_ASSERT_SIZE(ibv_modify_qp, 120);
SROCE_ASSERT_SIZE(ibv_post_send, 32);
SROCE_ASSERT_SIZE(ibv_create_cq_ex, 56);
SROCE_ASSERT_SIZE(ibv_create_qp_ex, 88);
SROCE_ASSERT_SIZE(ib_uverbs_create_cq_resp, 8);
SROCE_ASSERT_SIZE(ib_uverbs_create_qp_resp, 32);
SROCE_ASSERT_SIZE(ib_uverbs_ex_create_cq_resp, 16);
SROCE_ASSERT_SIZE(ib_uverbs_ex_create_qp_resp, 40);
SROCE_ASSERT_SIZE(ib_uverbs_create_srq_resp, 16);
SROCE_ASSERT_SIZE(ib_uverbs_get_context_resp, 8);
SROCE_ASSERT_SIZE(ib_uverbs_create_ah_resp, 4);

#endif /* SROCE_VERBS_PRIVATE_H */
