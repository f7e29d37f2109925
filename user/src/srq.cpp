// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared receive queues: create (map the ring the kernel sized), modify
 * (the limit, and a resize that moves us to the kernel's new ring), query,
 * destroy, and ibv_post_srq_recv, which never enters the kernel.
 */
#include "srq.h"
#include "log.h"
#include "provider.h"
#include "util.h"

#include <cerrno>
#include <mutex>
#include <utility>

namespace sroce
{

int map_ring(srq &s, int cmd_fd, const sroce_mmap_info &mi, uint32_t max_wr,
	     uint32_t max_sge) noexcept
{
	/* A kernel that did not fill the reply in leaves it zero. */
	if (mi.size == 0) {
		log(log_level::err, "SRQ: the kernel described no ring");
		return EPROTO;
	}
	errno = 0;
	mapping m = mapping::map(cmd_fd, mi.offset, mi.size);
	if (!m)
		return errno ? errno : ENOMEM;
	if (!s.rq.attach(m.get(), m.size(), max_wr, max_sge)) {
		log(log_level::err,
		    "SRQ ring does not fit (size %u, wr %u, sge %u)", mi.size,
		    max_wr, max_sge);
		return EPROTO;
	}
	/* The ring now points into m; this unmaps the old one. */
	s.rq.map = std::move(m);
	return 0;
}

namespace
{

/*
 * IBV_SRQ_MAX_WR (and whatever else attr_mask holds), with the SRQ's lock
 * held by the caller: the kernel copies the WQEs between its consumer index
 * and our producer index into the new ring, so nothing may be posted to the
 * old one from the moment it looks until we have switched.
 */
int resize_locked(const srq_cmds &cmds, srq &s, struct ibv_srq_attr *attr,
		  int attr_mask) noexcept
{
	sroce_mmap_info mi = {};
	modify_srq_cmd cmd = {};

	cmd.drv.mi_addr = reinterpret_cast<uintptr_t>(&mi);
	int ret = cmds.modify(&s.vsrq.srq, attr, attr_mask, &cmd.ibv,
			      sizeof(cmd));
	if (ret)
		return ret;

	/* The old ring is dead on the kernel side whatever happens next. */
	ret = map_ring(s, s.vsrq.srq.context->cmd_fd, mi, attr->max_wr,
		       s.rq.max_sge);
	if (ret) {
		s.rq.ring.reset();
		s.rq.map.reset();
		log(log_level::err,
		    "modify_srq: cannot map the resized ring (%d); SRQ "
		    "unusable",
		    ret);
	}
	return ret;
}

} // namespace

constinit const srq_cmds kernel_srq_cmds = {
	.create = ibv_cmd_create_srq,
	.modify = ibv_cmd_modify_srq,
	.destroy = ibv_cmd_destroy_srq,
};

struct ibv_srq *create_srq_using(const srq_cmds &cmds, struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr) noexcept
{
	auto s = c_new<srq>();
	if (!s) {
		errno = ENOMEM;
		return nullptr;
	}

	struct ibv_create_srq cmd = {};
	create_srq_resp resp = {};
	int ret = cmds.create(pd, &s->vsrq.srq, attr, &cmd, sizeof(cmd),
			      resp.ibv(), sizeof(resp));
	if (ret) {
		errno = ret;
		return nullptr;
	}
	/* attr->attr.max_wr and max_sge now hold what the kernel granted. */
	ret = map_ring(*s, pd->context->cmd_fd, resp.drv.mi, attr->attr.max_wr,
		       attr->attr.max_sge);
	if (ret) {
		(void)cmds.destroy(&s->vsrq.srq);
		errno = ret;
		return nullptr;
	}
	s->srq_num = resp.drv.srq_num;
	return &s.release()->vsrq.srq;
}

int modify_srq_using(const srq_cmds &cmds, struct ibv_srq *ibsrq,
		     struct ibv_srq_attr *attr, int attr_mask) noexcept
{
	srq *s = to_srq(ibsrq);

	if (attr_mask & IBV_SRQ_MAX_WR) {
		const std::lock_guard<spinlock> guard(s->rq.lock);
		return resize_locked(cmds, *s, attr, attr_mask);
	}
	/* IBV_SRQ_LIMIT arms the limit event in the kernel; no ring change. */
	modify_srq_cmd cmd = {};
	return cmds.modify(ibsrq, attr, attr_mask, &cmd.ibv, sizeof(cmd));
}

int destroy_srq_using(const srq_cmds &cmds, struct ibv_srq *ibsrq) noexcept
{
	const int ret = cmds.destroy(ibsrq);

	/* On failure the SRQ still exists in the kernel: keep ours too. */
	if (ret)
		return ret;
	obj_ptr<srq> s(to_srq(ibsrq));
	return 0;
}

struct ibv_srq *create_srq(struct ibv_pd *pd,
			   struct ibv_srq_init_attr *attr) noexcept
{
	return create_srq_using(kernel_srq_cmds, pd, attr);
}

int modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
	       int attr_mask) noexcept
{
	return modify_srq_using(kernel_srq_cmds, ibsrq, attr, attr_mask);
}

int query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr) noexcept
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

int destroy_srq(struct ibv_srq *ibsrq) noexcept
{
	return destroy_srq_using(kernel_srq_cmds, ibsrq);
}

int post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr) noexcept
{
	srq *s = to_srq(ibsrq);
	uint32_t n = 0;
	int ret = EIO; /* no ring: a failed resize left the SRQ unusable */

	{
		const std::lock_guard<spinlock> guard(s->rq.lock);

		if (s->rq.ring)
			ret = produce_recv(s->rq, wr, n);
	}
	if (ret)
		*bad_wr = wr;
	return ret;
}

} // namespace sroce
