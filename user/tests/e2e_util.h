/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the end-to-end programs share (e2e_verbs.cpp, e2e_ud.cpp,
 * e2e_srq.cpp: run on a real sroce device in the QEMU guest by the
 * selftests, not by ctest). CHECK counts a condition that does not hold in
 * fails and goes on; REQUIRE ends the program with exit status 1. Both
 * print the file, line, condition and errno. A part of a program reports
 * "ok" when fails did not grow while it ran. Then the device opened by name
 * and an RC or UC QP connected on port 1.
 */
#ifndef SROCE_E2E_UTIL_H
#define SROCE_E2E_UTIL_H

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <infiniband/verbs.h>

inline int fails;

#define CHECK(c)                                                       \
	do {                                                           \
		if (!(c)) {                                            \
			fprintf(stderr, "FAIL %s:%d: %s (errno %d)\n", \
				__FILE__, __LINE__, #c, errno);        \
			fails++;                                       \
		}                                                      \
	} while (0)

#define REQUIRE(c)                                                      \
	do {                                                            \
		if (!(c)) {                                             \
			fprintf(stderr, "FATAL %s:%d: %s (errno %d)\n", \
				__FILE__, __LINE__, #c, errno);         \
			exit(1);                                        \
		}                                                       \
	} while (0)

/*
 * The device called name, opened (REQUIRE). *list is the device list, for
 * ibv_free_device_list once the program is done.
 */
inline ibv_context *e2e_open_device(const char *name, ibv_device ***list)
{
	int num = 0;
	ibv_context *ctx = nullptr;
	*list = ibv_get_device_list(&num);
	REQUIRE(*list);
	for (int i = 0; i < num; i++)
		if (!strcmp(ibv_get_device_name((*list)[i]), name))
			ctx = ibv_open_device((*list)[i]);
	REQUIRE(ctx);
	return ctx;
}

/*
 * For a program run as PROGRAM DEVICE GID_INDEX...: the device argv[1]
 * opened as e2e_open_device does, or with fewer arguments the usage printed
 * and exit status 2.
 */
inline ibv_context *e2e_open_device_of_args(int argc, char **argv,
					    ibv_device ***list)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX...\n", argv[0]);
		exit(2);
	}
	return e2e_open_device(argv[1], list);
}

/* How e2e_connect_qp connects a QP; both sides use the same. */
struct e2e_conn {
	unsigned access;   /* qp_access_flags */
	uint32_t psn;	   /* both directions' first PSN */
	uint8_t rd_atomic; /* max_rd_atomic and max_dest_rd_atomic */
	bool uc = false;   /* UC: none of the RC-only attributes */
};

/*
 * An RC or UC QP of port 1 from RESET to RTS, its peer QP number remote
 * reached through the GID (dgid, sgid_index) as the destination: path MTU
 * 1024, min_rnr_timer 1, hop limit 64, ACK timeout 14, retry_cnt and
 * rnr_retry 7 (REQUIRE for each transition).
 */
inline void e2e_connect_qp(ibv_qp *q, uint32_t remote, const ibv_gid &dgid,
			   int sgid_index, const e2e_conn &c)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = c.access;
	REQUIRE(ibv_modify_qp(q, &a,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS) == 0);
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = remote;
	a.rq_psn = c.psn;
	a.max_dest_rd_atomic = c.rd_atomic;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = dgid;
	a.ah_attr.grh.sgid_index = static_cast<uint8_t>(sgid_index);
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (!c.uc)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	REQUIRE(ibv_modify_qp(q, &a, mask) == 0);
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = c.psn;
	a.max_rd_atomic = c.rd_atomic;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (!c.uc)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	REQUIRE(ibv_modify_qp(q, &a, mask) == 0);
}

#endif /* SROCE_E2E_UTIL_H */
