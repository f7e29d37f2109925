/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Address handles (UD destinations).
 *
 * Every AH, kernel or user, has a number in the device's ah_xa; a UD send
 * WQE names its AH by that number, so the kernel never follows a pointer
 * that a process wrote. The path an AH resolves to lives in a separately
 * allocated entry freed after an RCU grace period: the requester copies it
 * under RCU when it fetches the WQE, and destroy_ah (which may be called in
 * atomic context) never has to wait for it.
 */
#ifndef SROCE_AH_H
#define SROCE_AH_H

#include <rdma/ib_verbs.h>

#include "sroce_qp.h"

struct sroce_dev;

struct sroce_ah_entry {
	struct sroce_path path;
	struct ib_pd *pd;	/* compared, never dereferenced */
	struct rcu_head rcu;
};

struct sroce_ah {
	struct ib_ah ibah;
	u32 ah_num;
	struct sroce_ah_entry *e;
};

static inline struct sroce_ah *to_sah(struct ib_ah *ibah)
{
	return container_of(ibah, struct sroce_ah, ibah);
}

int sroce_path_from_ah_attr(struct ib_device *ibdev, struct sroce_path *path,
			    const struct rdma_ah_attr *ah);
bool sroce_ah_lookup(struct sroce_dev *sdev, u32 ah_num, struct ib_pd *pd,
		     struct sroce_path *path);
int sroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata);
int sroce_destroy_ah(struct ib_ah *ibah, u32 flags);

#endif /* SROCE_AH_H */
