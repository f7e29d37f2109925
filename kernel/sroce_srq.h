/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared receive queues.
 *
 * An SRQ is a receive ring like a QP's RQ (the same WQE format, mapped for
 * user SRQs, untrusted), consumed by the responders of every QP attached to
 * it. A responder takes a WQE out under @lock - copies it into the QP's own
 * rwqe buffer and advances the consumer index at once - so a WQE belongs to
 * exactly one QP from then on, and the limit event is checked right there.
 */
#ifndef SROCE_SRQ_H
#define SROCE_SRQ_H

#include <linux/completion.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>

#include "sroce_queue.h"

struct sroce_srq {
	struct ib_srq ibsrq;
	spinlock_t lock;		/* consumers; resize */
	spinlock_t post_lock;		/* kernel post_srq_recv producers */
	struct sroce_queue q;
	u32 max_sge;
	u32 limit;			/* srq_limit; armed while non-zero */
	bool is_user;
	/*
	 * XRC SRQs are found by number (XRCETH) by the responders of XRC
	 * target QPs, which hold @ref while they use one.
	 */
	u32 srqn;
	refcount_t ref;
	struct completion released;
};

static inline struct sroce_srq *to_ssrq(struct ib_srq *ibsrq)
{
	return ibsrq ? container_of(ibsrq, struct sroce_srq, ibsrq) : NULL;
}

int sroce_srq_take(struct sroce_srq *srq, void *rwqe);
struct sroce_dev;
struct sroce_srq *sroce_xsrq_get(struct sroce_dev *sdev, u32 srqn);
void sroce_srq_put(struct sroce_srq *srq);

int sroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata);
int sroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata);
int sroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int sroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int sroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);

#endif /* SROCE_SRQ_H */
