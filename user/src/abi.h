/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The kernel <-> provider ABI (include/sroce-abi.h), with the layout checks
 * the provider relies on. The kernel asserts the same sizes on its side.
 */
#ifndef SROCE_USER_ABI_H
#define SROCE_USER_ABI_H

#include "sroce-abi.h"

#include <cstddef>

static_assert(sizeof(sroce_alloc_ucontext_resp) == 24);
static_assert(sizeof(sroce_mmap_info) == 16);
static_assert(offsetof(sroce_mmap_info, offset) == 0);
static_assert(offsetof(sroce_mmap_info, size) == 8);
static_assert(sizeof(sroce_queue_hdr) == 256);
static_assert(offsetof(sroce_queue_hdr, slot_shift) == 0);
static_assert(offsetof(sroce_queue_hdr, num_slots) == 4);
static_assert(offsetof(sroce_queue_hdr, flags) == 8);
static_assert(offsetof(sroce_queue_hdr, polling) == 12);
static_assert(offsetof(sroce_queue_hdr, producer) == 64);
static_assert(offsetof(sroce_queue_hdr, consumer) == 128);
static_assert(offsetof(sroce_queue_hdr, notify) == 192);
static_assert(SROCE_QUEUE_DATA_OFFSET >= sizeof(sroce_queue_hdr));
static_assert(sizeof(sroce_create_cq_resp) == 16);
static_assert(sizeof(sroce_resize_cq_resp) == 16);
static_assert(sizeof(sroce_create_qp_resp) == 32);
static_assert(offsetof(sroce_create_qp_resp, sq_mi) == 0);
static_assert(offsetof(sroce_create_qp_resp, rq_mi) == 16);
static_assert(sizeof(sroce_create_srq_resp) == 24);
static_assert(offsetof(sroce_create_srq_resp, mi) == 0);
static_assert(offsetof(sroce_create_srq_resp, srq_num) == 16);
static_assert(sizeof(sroce_modify_srq_cmd) == 8);
static_assert(offsetof(sroce_modify_srq_cmd, mi_addr) == 0);
static_assert(alignof(sroce_modify_srq_cmd) == 8);
static_assert(sizeof(sroce_create_ah_resp) == 8);
static_assert(offsetof(sroce_create_ah_resp, ah_num) == 0);
static_assert(offsetof(sroce_create_ah_resp, reserved) == 4);

/* Data-path formats in the rings. */
static_assert(sizeof(sroce_sge) == 16);
static_assert(sizeof(sroce_send_wqe) == SROCE_SEND_WQE_HDR_SIZE);
static_assert(sizeof(sroce_send_wqe) == 64);
static_assert(offsetof(sroce_send_wqe, remote_addr) == 24);
static_assert(offsetof(sroce_send_wqe, ah) == 48);
static_assert(offsetof(sroce_send_wqe, remote_qpn) == 52);
static_assert(offsetof(sroce_send_wqe, remote_qkey) == 56);
static_assert(sizeof(sroce_recv_wqe) == 16);
static_assert(sizeof(sroce_cqe) == 64);
static_assert(offsetof(sroce_cqe, wc_flags) == 36);
static_assert(offsetof(sroce_cqe, smac) == 48);
static_assert(offsetof(sroce_cqe, vlan_id) == 54);

#endif /* SROCE_USER_ABI_H */
