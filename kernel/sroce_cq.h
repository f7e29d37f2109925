/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Completion queues.
 *
 * The kernel is the only producer (under @lock, from softirq or process
 * context). A user CQ is consumed by the process through the mapped ring;
 * a kernel CQ is consumed by sroce_poll_cq(), which converts entries to
 * struct ib_wc.
 */
#ifndef SROCE_CQ_H
#define SROCE_CQ_H

#include <rdma/ib_verbs.h>

#include "sroce_compat.h"
#include "sroce_queue.h"

struct sroce_cq {
	struct ib_cq ibcq;
	spinlock_t lock;		/* producer side, notify state */
	struct sroce_queue q;
	u8 notify;			/* armed IB_CQ_SOLICITED / NEXT_COMP */
	bool is_user;
	bool overflowed;		/* the consumer fell behind: CQ error */
};

static inline struct sroce_cq *to_scq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct sroce_cq, ibcq);
}

int sroce_cq_post(struct sroce_cq *cq, const struct sroce_cqe *cqe,
		  struct ib_qp *qp, bool solicited);

int sroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct sroce_create_cq_arg *arg);
int sroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int sroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int sroce_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int sroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);

#endif /* SROCE_CQ_H */
