/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Device limits and capabilities. One place, so what query_device reports
 * and what the verbs enforce cannot drift apart.
 */
#ifndef SROCE_PARAM_H
#define SROCE_PARAM_H

#include "proto/sroce_range.h"

#define SROCE_FW_VER_MAJOR		0
#define SROCE_FW_VER_MINOR		1
#define SROCE_FW_VER_SUB		0
#define SROCE_HW_VER			1

#define SROCE_MAX_MR_SIZE		0x10000000000ULL
#define SROCE_MAX_QP			65536
#define SROCE_MAX_QP_WR			16384
#define SROCE_MAX_SGE			32
#define SROCE_MAX_SGE_RD		32
#define SROCE_MAX_INLINE_DATA		512
#define SROCE_MAX_CQ			65536
#define SROCE_MAX_CQE			65535
#define SROCE_MAX_MR			262144
#define SROCE_MAX_PD			65536
#define SROCE_MAX_AH			65536
#define SROCE_MAX_SRQ			16384
#define SROCE_MAX_SRQ_WR		16384
#define SROCE_MAX_SRQ_SGE		32
#define SROCE_MAX_QP_RD_ATOM		128
#define SROCE_MAX_RES_RD_ATOM		(SROCE_MAX_QP_RD_ATOM * SROCE_MAX_QP)
#define SROCE_MAX_MCAST_GRP		8192
#define SROCE_MAX_MCAST_QP_ATTACH	56
#define SROCE_MAX_FAST_REG_PAGES	512
#define SROCE_LOCAL_CA_ACK_DELAY	15

#define SROCE_PORT_GID_TBL_LEN		256
#define SROCE_PORT_PKEY_TBL_LEN		1
#define SROCE_DEFAULT_PKEY		0xffff
/* SROCE_MAX_MSG_SIZE (2 GiB, the IBTA limit) comes from proto/sroce_range.h. */
#define SROCE_PORT_MAX_MSG_SZ		SROCE_MAX_MSG_SIZE

#endif /* SROCE_PARAM_H */
