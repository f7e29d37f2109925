// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion queues: creation and resize (ring mapping) and the syscall-free
 * poll paths, both the classic ibv_poll_cq and the ibv_cq_ex iterator.
 */
#include "cq.h"
#include "log.h"
#include "provider.h"
#include "util.h"

#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>

namespace sroce
{

namespace
{

using create_cq_resp =
	uverbs_resp<ib_uverbs_create_cq_resp, sroce_create_cq_resp>;
using create_cq_ex_resp =
	uverbs_resp<ib_uverbs_ex_create_cq_resp, sroce_create_cq_resp>;
using resize_cq_resp =
	uverbs_resp<ib_uverbs_resize_cq_resp, sroce_resize_cq_resp>;
static_assert(offsetof(create_cq_resp, drv) ==
	      sizeof(ib_uverbs_create_cq_resp));
static_assert(offsetof(create_cq_ex_resp, drv) ==
	      sizeof(ib_uverbs_ex_create_cq_resp));
static_assert(offsetof(resize_cq_resp, drv) ==
	      sizeof(ib_uverbs_resize_cq_resp));

/* Map the ring the kernel described and bind c to it. Returns an errno. */
int map_ring(cq &c, int cmd_fd, const sroce_mmap_info &mi) noexcept
{
	mapping m = mapping::map(cmd_fd, mi.offset, mi.size);
	if (!m)
		return errno ? errno : ENOMEM;
	if (!c.attach(m.get(), m.size())) {
		log(log_level::err, "CQ ring header invalid (size %u)",
		    mi.size);
		return EPROTO;
	}
	c.map = std::move(m);
	return 0;
}

/* After ibv_cmd_create_cq*: map the ring or undo the kernel object. */
struct ibv_cq *finish_create(obj_ptr<cq> c, int cmd_fd,
			     const sroce_mmap_info &mi) noexcept
{
	const int ret = map_ring(*c, cmd_fd, mi);
	if (ret) {
		(void)ibv_cmd_destroy_cq(&c->vcq.cq);
		c.reset();
		errno = ret;
		return nullptr;
	}
	return &c.release()->vcq.cq;
}

/* ---- ibv_cq_ex iterator ------------------------------------------- */

/* Make entry c.batch current if there is one. Lock held. */
int load_current(cq &c) noexcept
{
	const ring_consumer &r = *c.ring;

	if (c.batch >= r.available()) {
		c.have_cur = false;
		return ENOENT;
	}
	memcpy(&c.cur, r.peek(c.batch), sizeof(c.cur));
	c.have_cur = true;
	c.vcq.cq_ex.wr_id = c.cur.wr_id;
	c.vcq.cq_ex.status = static_cast<enum ibv_wc_status>(c.cur.status);
	return 0;
}

int cq_start_poll(struct ibv_cq_ex *ibcq,
		  struct ibv_poll_cq_attr *attr) noexcept
{
	cq *c = to_cq(ibcq);

	if (attr && attr->comp_mask)
		return EINVAL;
	c->lock.lock();
	if (!c->ring) {
		c->lock.unlock();
		return EIO;
	}
	c->batch = 0;
	const int ret = load_current(*c);
	/* Nothing to poll: the caller will not call end_poll. */
	if (ret)
		c->lock.unlock();
	return ret;
}

int cq_next_poll(struct ibv_cq_ex *ibcq) noexcept
{
	cq *c = to_cq(ibcq);

	if (c->have_cur)
		c->batch++;
	return load_current(*c);
}

void cq_end_poll(struct ibv_cq_ex *ibcq) noexcept
{
	cq *c = to_cq(ibcq);
	const uint32_t done = c->batch + (c->have_cur ? 1 : 0);

	if (done)
		c->ring->release(done);
	c->batch = 0;
	c->have_cur = false;
	c->lock.unlock();
}

enum ibv_wc_opcode cq_read_opcode(struct ibv_cq_ex *ibcq) noexcept
{
	return static_cast<enum ibv_wc_opcode>(to_cq(ibcq)->cur.opcode);
}

uint32_t cq_read_vendor_err(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.vendor_err;
}

uint32_t cq_read_byte_len(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.byte_len;
}

/* The raw word: ibv_wc_read_invalidated_rkey() reads it through here too. */
__be32 cq_read_imm_data(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.imm_or_inv;
}

uint32_t cq_read_qp_num(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.qp_num;
}

uint32_t cq_read_src_qp(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.src_qp;
}

unsigned int cq_read_wc_flags(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.wc_flags & cqe_wc_flags_mask;
}

uint32_t cq_read_slid(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.slid;
}

uint8_t cq_read_sl(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.sl;
}

uint8_t cq_read_dlid_path_bits(struct ibv_cq_ex *ibcq) noexcept
{
	return to_cq(ibcq)->cur.dlid_path_bits;
}

} // namespace

bool cq::attach(void *base, size_t len) noexcept
{
	const auto r = sroce::ring::attach(base, len, sizeof(sroce_cqe));

	if (!r)
		return false;
	ring.emplace(*r);
	batch = 0;
	have_cur = false;
	return true;
}

void cqe_to_wc(const sroce_cqe &cqe, struct ibv_wc &wc) noexcept
{
	wc.wr_id = cqe.wr_id;
	wc.status = static_cast<enum ibv_wc_status>(cqe.status);
	wc.opcode = static_cast<enum ibv_wc_opcode>(cqe.opcode);
	wc.vendor_err = cqe.vendor_err;
	wc.byte_len = cqe.byte_len;
	/* Same word for both, as in ibv_wc's union; no byte swapping. */
	wc.imm_data = cqe.imm_or_inv;
	wc.qp_num = cqe.qp_num;
	wc.src_qp = cqe.src_qp;
	wc.wc_flags = cqe.wc_flags & cqe_wc_flags_mask;
	wc.pkey_index = cqe.pkey_index;
	wc.slid = cqe.slid;
	wc.sl = cqe.sl;
	wc.dlid_path_bits = cqe.dlid_path_bits;
}

int check_cq_ex_attr(const struct ibv_cq_init_attr_ex &attr) noexcept
{
	if (attr.wc_flags & ~cq_supported_wc_flags)
		return EOPNOTSUPP;
	if (attr.comp_mask &
	    ~uint32_t{IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD})
		return EOPNOTSUPP;
	/*
	 * Only a parent domain may be named here; a plain PD is EINVAL, as
	 * in mlx5. The CQ itself has no PD in the kernel, and the domain's
	 * allocators go unused (parent_domain.h).
	 */
	if ((attr.comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    !is_parent_domain(attr.parent_domain))
		return EINVAL;
	if ((attr.comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr.flags & ~uint32_t{IBV_CREATE_CQ_ATTR_SINGLE_THREADED}))
		return EOPNOTSUPP;
	return 0;
}

void set_cq_ex_ops(cq &c, uint64_t wc_flags) noexcept
{
	struct ibv_cq_ex &x = c.vcq.cq_ex;

	x.start_poll = cq_start_poll;
	x.next_poll = cq_next_poll;
	x.end_poll = cq_end_poll;
	/* Always available, whatever wc_flags asked for. */
	x.read_opcode = cq_read_opcode;
	x.read_vendor_err = cq_read_vendor_err;
	x.read_wc_flags = cq_read_wc_flags;

	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		x.read_byte_len = cq_read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		x.read_imm_data = cq_read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		x.read_qp_num = cq_read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		x.read_src_qp = cq_read_src_qp;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		x.read_slid = cq_read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		x.read_sl = cq_read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		x.read_dlid_path_bits = cq_read_dlid_path_bits;
}

struct ibv_cq *create_cq(struct ibv_context *ibctx, int cqe,
			 struct ibv_comp_channel *channel,
			 int comp_vector) noexcept
{
	auto c = c_new<cq>();
	if (!c) {
		errno = ENOMEM;
		return nullptr;
	}

	struct ibv_create_cq cmd = {};
	create_cq_resp resp = {};
	const int ret =
		ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector, &c->vcq.cq,
				  &cmd, sizeof(cmd), resp.ibv(), sizeof(resp));
	if (ret) {
		c.reset();
		errno = ret;
		return nullptr;
	}
	return finish_create(std::move(c), ibctx->cmd_fd, resp.drv.mi);
}

struct ibv_cq_ex *create_cq_ex(struct ibv_context *ibctx,
			       struct ibv_cq_init_attr_ex *attr) noexcept
{
	int ret = check_cq_ex_attr(*attr);
	if (!ret && (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    attr->parent_domain->context != ibctx)
		ret = EINVAL;
	if (ret) {
		errno = ret;
		return nullptr;
	}

	auto c = c_new<cq>();
	if (!c) {
		errno = ENOMEM;
		return nullptr;
	}

	struct ibv_create_cq_ex cmd = {};
	create_cq_ex_resp resp = {};
	ret = sroce_cmd_create_cq_ex(ibctx, attr, &c->vcq, &cmd, sizeof(cmd),
				     resp.ibv(), sizeof(resp), 0);
	if (ret) {
		c.reset();
		errno = ret;
		return nullptr;
	}
	set_cq_ex_ops(*c, attr->wc_flags);

	struct ibv_cq *ibcq =
		finish_create(std::move(c), ibctx->cmd_fd, resp.drv.mi);
	return ibcq ? &to_cq(ibcq)->vcq.cq_ex : nullptr;
}

void cq_clean(cq &c, uint32_t qpn) noexcept
{
	const std::lock_guard<spinlock> guard(c.lock);

	if (!c.ring)
		return;
	ring_consumer &r = *c.ring;
	const uint32_t n = r.available();
	uint32_t removed = 0;

	/*
	 * Newest to oldest, moving the entries that stay up over the ones
	 * that go; then hand the freed slots at the old end back. The kernel
	 * only writes past the producer index read here, so it never sees a
	 * slot being moved.
	 */
	for (uint32_t i = n; i-- > 0;) {
		sroce_cqe e;

		memcpy(&e, r.peek(i), sizeof(e));
		if (e.qp_num == qpn) {
			removed++;
			continue;
		}
		if (removed)
			memcpy(r.slot(i + removed), &e, sizeof(e));
	}
	if (removed)
		r.release(removed);
}

int poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc) noexcept
{
	cq *c = to_cq(ibcq);
	const std::lock_guard<spinlock> guard(c->lock);

	if (!c->ring)
		return -1;

	ring_consumer &r = *c->ring;
	const uint32_t avail = r.available();
	uint32_t n = 0;

	for (; n < avail && static_cast<int>(n) < ne; n++) {
		sroce_cqe cqe;
		memcpy(&cqe, r.peek(n), sizeof(cqe));
		cqe_to_wc(cqe, wc[n]);
	}
	if (n)
		r.release(n);
	return static_cast<int>(n);
}

int req_notify_cq(struct ibv_cq *ibcq, int solicited_only) noexcept
{
	return ibv_cmd_req_notify_cq(ibcq, solicited_only);
}

int resize_cq(struct ibv_cq *ibcq, int cqe) noexcept
{
	cq *c = to_cq(ibcq);
	const std::lock_guard<spinlock> guard(c->lock);

	/*
	 * The kernel moves the entries between our published consumer index
	 * and its producer into a new ring, so nothing may be consumed
	 * meanwhile: the lock keeps pollers out until we switched rings.
	 */
	struct ibv_resize_cq cmd = {};
	resize_cq_resp resp = {};
	int ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), resp.ibv(),
				    sizeof(resp));
	if (ret)
		return ret;

	/* The old ring is gone on the kernel side whatever happens next. */
	c->ring.reset();
	c->map.reset();
	ret = map_ring(*c, ibcq->context->cmd_fd, resp.drv.mi);
	if (ret)
		log(log_level::err,
		    "resize_cq: cannot map the new ring (%d); CQ unusable",
		    ret);
	return ret;
}

int destroy_cq(struct ibv_cq *ibcq) noexcept
{
	const int ret = ibv_cmd_destroy_cq(ibcq);

	/* On failure the CQ still exists in the kernel: keep ours too. */
	if (ret)
		return ret;
	obj_ptr<cq> c(to_cq(ibcq));
	return 0;
}

} // namespace sroce
