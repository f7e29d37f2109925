// SPDX-License-Identifier: GPL-2.0
/*
 * sroce_kverbs_test - an RC test through the kernel verbs API, run at load.
 *
 * It proves that an in-kernel consumer (a kernel ULP) can use an RDMA device:
 * it opens the device(s) named by dev_a and dev_b (dev_b defaults to dev_a:
 * loopback on one device), connects RC QPs over the RoCE v2 GIDs gid_a and
 * gid_b and drives SEND, SEND_WITH_IMM, RDMA WRITE, WRITE_WITH_IMM, RDMA READ,
 * compare-and-swap and fetch-and-add between them, 0 bytes to 1 MiB, with SGE
 * lists and chains of work requests, checking every byte (and guard bytes
 * around every buffer), every atomic result and every completion. Each round
 * reaps completions another way (cq_modes) and ends with an ib_drain_qp()
 * style flush and a bad-rkey error path on a fresh QP pair.
 *
 * The verdict is the result of insmod: 0 when every check passed (the module
 * then stays loaded, idle, until rmmod), -EIO when a check failed,
 * -EOPNOTSUPP when a device is not a kernel-verbs provider, -ENODEV or
 * -EINVAL for bad parameters. The kernel log names the failed check in a line
 * "sroce_kverbs_test: FAIL: ...".
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/wait.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

static char *dev_a;
module_param(dev_a, charp, 0444);
MODULE_PARM_DESC(dev_a, "RDMA device of side A (required)");

static char *dev_b;
module_param(dev_b, charp, 0444);
MODULE_PARM_DESC(dev_b, "RDMA device of side B (default: dev_a, loopback)");

static int gid_a = -1;
module_param(gid_a, int, 0444);
MODULE_PARM_DESC(gid_a, "sgid index of a RoCE v2 GID of dev_a port 1 (default: the first one, IPv4 first)");

static int gid_b = -1;
module_param(gid_b, int, 0444);
MODULE_PARM_DESC(gid_b, "sgid index of a RoCE v2 GID of dev_b port 1 (default: the first one, IPv4 first)");

static unsigned int iters = 6;
module_param(iters, uint, 0444);
MODULE_PARM_DESC(iters, "random batches of chained work requests per round");

static unsigned int max_size = SZ_1M;
module_param(max_size, uint, 0444);
MODULE_PARM_DESC(max_size, "largest message in bytes (1..1048576)");

static char *cq_modes = "direct,softirq,workqueue,poll,event";
module_param(cq_modes, charp, 0444);
MODULE_PARM_DESC(cq_modes, "one round per entry: direct, softirq, workqueue (ib_alloc_cq), poll, event (ib_create_cq)");

static char *atomic_mr = "auto";
module_param(atomic_mr, charp, 0444);
MODULE_PARM_DESC(atomic_mr, "MR for atomic targets: frmr (IB_WR_REG_MR), dma (the driver's DMA MR), auto (frmr if supported)");

static bool sqd = true;
module_param(sqd, bool, 0444);
MODULE_PARM_DESC(sqd, "the SQD step: side A's QP to SQD and back, IB_EVENT_SQ_DRAINED (0 for a device that cannot)");

static unsigned int seed;
module_param(seed, uint, 0444);
MODULE_PARM_DESC(seed, "random seed (0: pick one; the log shows it)");

static unsigned int timeout_ms = 60000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "longest wait for expected completions");

#define KVT_MAX_SGE		4
#define KVT_MAX_OPS		32
/* Completion ids: op i's send is i, its receive KVT_ID_RECV + i. */
#define KVT_ID_RECV		KVT_MAX_OPS
#define KVT_ID_INV		(2 * KVT_MAX_OPS)
#define KVT_ID_REG		(KVT_ID_INV + 1)
#define KVT_ID_DRAIN_RECV	(KVT_ID_INV + 2)	/* three of them */
#define KVT_ID_DRAIN_SEND	(KVT_ID_INV + 5)
#define KVT_ID_ERR_WRITE	(KVT_ID_INV + 6)
#define KVT_ID_ERR_SEND		(KVT_ID_INV + 7)
#define KVT_ID_LATE_SEND	(KVT_ID_INV + 8)
#define KVT_ID_LATE_RECV	(KVT_ID_INV + 9)
#define KVT_ID_SQD_WRITE	(KVT_ID_INV + 10)	/* KVT_SQD_WRS of them */
#define KVT_SQD_WRS		4
#define KVT_NIDS		(KVT_ID_SQD_WRITE + KVT_SQD_WRS)
#define KVT_WRID_MAGIC		0x6b76ULL

#define KVT_QP_DEPTH		64
#define KVT_CQ_DEPTH		256
#define KVT_CQ_REC		(KVT_MAX_OPS + 16)
#define KVT_POLL_BATCH		16

/* Buffers: chunk 0 is kmalloc'ed, the others are 2 MiB page blocks. */
#define KVT_NCHUNK		9
#define KVT_KCHUNK_SIZE		SZ_64K
#define KVT_CHUNK_ORDER		9
#define KVT_CHUNK_SIZE		(PAGE_SIZE << KVT_CHUNK_ORDER)
#define KVT_GUARD		32
#define KVT_GUARD_BYTE		0xa5
#define KVT_POISON		0x5a
#define KVT_ATOM_SLOTS		64
#define KVT_MAX_MSG		SZ_1M
#define KVT_RESOLVE_MS		3000
#define KVT_BAD_RKEY_XOR	0x80808000

#define KVT_MODES		8

enum kvt_cq_mode {
	KVT_CQ_DIRECT,		/* ib_alloc_cq(IB_POLL_DIRECT), ib_process_cq_direct() */
	KVT_CQ_SOFTIRQ,		/* ib_alloc_cq(IB_POLL_SOFTIRQ): ->done() in softirq */
	KVT_CQ_WORKQUEUE,	/* ib_alloc_cq(IB_POLL_WORKQUEUE): ->done() in a work */
	KVT_CQ_POLL,		/* ib_create_cq(), ib_poll_cq(), never armed */
	KVT_CQ_EVENT,		/* ib_create_cq(), ib_req_notify_cq(), comp_handler */
	KVT_CQ_NMODES,
};

static const char * const kvt_mode_name[KVT_CQ_NMODES] = {
	[KVT_CQ_DIRECT] = "direct",
	[KVT_CQ_SOFTIRQ] = "softirq",
	[KVT_CQ_WORKQUEUE] = "workqueue",
	[KVT_CQ_POLL] = "poll",
	[KVT_CQ_EVENT] = "event",
};

enum kvt_type {
	KVT_SEND,
	KVT_SEND_IMM,
	KVT_WRITE,
	KVT_WRITE_IMM,
	KVT_READ,
	KVT_CSWAP,
	KVT_CSWAP_FAIL,		/* compare-and-swap whose compare does not match */
	KVT_FADD,
	KVT_NTYPES,
};

static const char * const kvt_type_name[KVT_NTYPES] = {
	[KVT_SEND] = "SEND",
	[KVT_SEND_IMM] = "SEND_WITH_IMM",
	[KVT_WRITE] = "RDMA_WRITE",
	[KVT_WRITE_IMM] = "RDMA_WRITE_WITH_IMM",
	[KVT_READ] = "RDMA_READ",
	[KVT_CSWAP] = "CMP_AND_SWP",
	[KVT_CSWAP_FAIL] = "CMP_AND_SWP(mismatch)",
	[KVT_FADD] = "FETCH_AND_ADD",
};

struct kvt_seg {
	u8 *va;
	u64 dma;
	u32 len;
};

struct kvt_chunk {
	void *va;
	struct page *page;	/* NULL: kmalloc'ed */
	u64 dma;
	u32 size;
	u32 pos;		/* bump allocator, reset for every step */
	bool mapped;
};

/* A completion as reaped. */
struct kvt_rec {
	u64 raw;		/* wr_id, or the index of the ib_cqe */
	u32 id;
	u32 tag;
	bool foreign;		/* a wr_id this test never posted */
	enum ib_wc_status status;
	enum ib_wc_opcode opcode;
	u32 byte_len;
	int wc_flags;
	__be32 imm;
	u32 vendor_err;
	struct ib_qp *qp;
};

/* A completion as it must be. */
struct kvt_exp {
	u32 id;
	enum ib_wc_status status;
	enum ib_wc_opcode opcode;
	bool recv;
	bool imm;
	u32 byte_len;
	__be32 imm_data;
	struct ib_qp *qp;
};

struct kvt_test;

struct kvt_cq {
	struct kvt_test *t;
	struct ib_cq *cq;
	enum kvt_cq_mode mode;
	char name[16];
	spinlock_t lock;	/* n and rec[] */
	wait_queue_head_t wq;
	atomic_t events;
	atomic_t errors;
	unsigned int n;
	unsigned int nexp;
	struct kvt_rec rec[KVT_CQ_REC];
	struct kvt_exp exp[KVT_CQ_REC];
	struct ib_wc wcs[KVT_POLL_BATCH];
};

struct kvt_cqe {
	struct ib_cqe cqe;
	u32 id;
	u32 tag;
};

struct kvt_side {
	const char *name;
	const char *devname;
	struct ib_device *dev;
	u32 port;
	const struct ib_gid_attr *gattr;
	u8 dmac[ETH_ALEN];	/* of the peer's GID, as the core resolves it */
	u8 hop_limit;
	struct ib_pd *pd;
	struct kvt_chunk ch[KVT_NCHUNK];

	/* Atomic targets, in an MR with remote atomic access. */
	u64 *atom;
	u64 atom_dma;
	bool atom_mapped;
	bool atom_frmr;
	bool atom_reg;
	struct scatterlist atom_sg;
	struct ib_mr *atom_mr;
	u32 atom_rkey;
	u64 atom_addr;
	u64 atom_sim[KVT_ATOM_SLOTS];
	unsigned int atom_used;

	/* Per round. */
	struct kvt_cq *scq;
	struct kvt_cq *rcq;
	struct ib_qp *qp;
	struct ib_qp *eqp;	/* the error-path QP */
	struct ib_send_wr *shead, **stail;
	struct ib_recv_wr *rhead, **rtail;
};

struct kvt_op {
	enum kvt_type type;
	u8 from;		/* initiator: 0 = A, 1 = B */
	u8 nsge;		/* initiator SGEs */
	u8 rsge;		/* responder receive SGEs */
	bool unsig;
	s8 slot;		/* atomics: -1 new target, else op[slot]'s target */
	u32 len;
	u32 rextra;		/* receive capacity beyond len */

	u32 seed;
	u32 imm;
	unsigned int nl;
	unsigned int nr;
	unsigned int tslot;
	u64 cmp;
	u64 swap;
	u64 orig;
	struct kvt_seg l[KVT_MAX_SGE];
	struct kvt_seg r[KVT_MAX_SGE];
	struct kvt_seg rem;
	struct ib_sge sge[KVT_MAX_SGE];
	struct ib_sge rsg[KVT_MAX_SGE];
	union {
		struct ib_send_wr wr;
		struct ib_rdma_wr rdma;
		struct ib_atomic_wr atomic;
	} s;
	struct ib_recv_wr rwr;
};

struct kvt_test {
	struct kvt_side side[2];
	enum kvt_cq_mode mode;
	bool legacy;		/* ib_create_cq(): wr_id, not wr_cqe */
	unsigned int round;
	unsigned int nrounds;
	u32 gen;		/* step number, in every wr_id */
	u64 rng;
	u32 max_sge;
	u32 max_sge_rd;
	u8 rd_atom;
	char where[128];
	char what[96];

	unsigned int nops;
	struct kvt_op op[KVT_MAX_OPS];
	struct kvt_cqe cqe[2 * KVT_NIDS];

	struct ib_reg_wr reg;
	struct ib_send_wr inv;
	struct ib_rdma_wr xwr[2];
	struct ib_send_wr xsend;
	struct ib_recv_wr xrecv[3];
	struct ib_sge xsge[4];

	unsigned int steps;
	unsigned int wrs;
	u64 bytes;

	/* IB_EVENT_SQ_DRAINED on side A's QP (kvt_qp_event). */
	atomic_t sqd_events;	/* all of them */
	atomic_t sqd_late;	/* delivered after modify_qp(SQD -> RTS) returned */
	bool sqd_open;		/* set before SQD, cleared after that return */
	wait_queue_head_t sqd_wq;
};

static __printf(2, 3) int kvt_fail(struct kvt_test *t, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	pr_err("FAIL: %s: %pV\n", t->where, &vaf);
	va_end(args);
	return -EIO;
}

static __printf(2, 3) void kvt_begin(struct kvt_test *t, const char *fmt, ...)
{
	char step[80];
	va_list args;

	va_start(args, fmt);
	vsnprintf(step, sizeof(step), fmt, args);
	va_end(args);
	if (t->round)
		snprintf(t->where, sizeof(t->where), "round %u/%u (%s CQs), %s",
			 t->round, t->nrounds, kvt_mode_name[t->mode], step);
	else
		snprintf(t->where, sizeof(t->where), "%s", step);
	t->gen++;
	t->steps++;
}

static u64 kvt_rand64(struct kvt_test *t)
{
	u64 x = t->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static u32 kvt_rand(struct kvt_test *t)
{
	return kvt_rand64(t) >> 32;
}

static inline u8 kvt_pat(u32 seed, u32 i)
{
	return ((i + seed) * 0x9e3779b1u) >> 24;
}

static const char *kvt_wc_opcode_str(enum ib_wc_opcode op)
{
	switch (op) {
	case IB_WC_SEND:
		return "SEND";
	case IB_WC_RDMA_WRITE:
		return "RDMA_WRITE";
	case IB_WC_RDMA_READ:
		return "RDMA_READ";
	case IB_WC_COMP_SWAP:
		return "COMP_SWAP";
	case IB_WC_FETCH_ADD:
		return "FETCH_ADD";
	case IB_WC_LOCAL_INV:
		return "LOCAL_INV";
	case IB_WC_REG_MR:
		return "REG_MR";
	case IB_WC_RECV:
		return "RECV";
	case IB_WC_RECV_RDMA_WITH_IMM:
		return "RECV_RDMA_WITH_IMM";
	default:
		return "unexpected";
	}
}

static const char *kvt_qp_state_str(enum ib_qp_state st)
{
	static const char * const names[] = {
		[IB_QPS_RESET] = "RESET", [IB_QPS_INIT] = "INIT",
		[IB_QPS_RTR] = "RTR", [IB_QPS_RTS] = "RTS", [IB_QPS_SQD] = "SQD",
		[IB_QPS_SQE] = "SQE", [IB_QPS_ERR] = "ERR",
	};

	return (unsigned int)st < ARRAY_SIZE(names) && names[st] ? names[st] : "?";
}

static void kvt_op_str(struct kvt_test *t, unsigned int i, char *buf, size_t len)
{
	const struct kvt_op *op = &t->op[i];

	snprintf(buf, len, "op %u (%s %s->%s, %u bytes)", i, kvt_type_name[op->type],
		 t->side[op->from].name, t->side[!op->from].name,
		 op->type >= KVT_CSWAP ? 8 : op->len);
}

static void kvt_id_str(struct kvt_test *t, u32 id, char *buf, size_t len)
{
	static const char * const misc[] = {
		"LOCAL_INV", "REG_MR", "drain receive 1", "drain receive 2",
		"drain receive 3 (posted in the error state)",
		"drain RDMA_WRITE (posted in the error state)",
		"bad-rkey RDMA_WRITE", "SEND after the bad-rkey RDMA_WRITE",
		"SEND posted in the error state",
		"receive posted in the error state",
	};
	char tmp[64];

	if (id < KVT_MAX_OPS && id < t->nops) {
		kvt_op_str(t, id, buf, len);
	} else if (id >= KVT_ID_RECV && id < KVT_ID_RECV + t->nops) {
		kvt_op_str(t, id - KVT_ID_RECV, tmp, sizeof(tmp));
		snprintf(buf, len, "the receive of %s", tmp);
	} else if (id >= KVT_ID_INV && id < KVT_ID_SQD_WRITE) {
		BUILD_BUG_ON(ARRAY_SIZE(misc) != KVT_ID_SQD_WRITE - KVT_ID_INV);
		snprintf(buf, len, "%s", misc[id - KVT_ID_INV]);
	} else if (id >= KVT_ID_SQD_WRITE && id < KVT_NIDS) {
		snprintf(buf, len, "RDMA_WRITE %u across SQD", id - KVT_ID_SQD_WRITE + 1);
	} else {
		snprintf(buf, len, "id %u", id);
	}
}

/* --- completions ------------------------------------------------------------ */

static void kvt_record(struct kvt_cq *c, const struct ib_wc *wc, u64 raw, u32 id,
		       u32 tag, bool foreign)
{
	unsigned long flags;
	struct kvt_rec *r;

	spin_lock_irqsave(&c->lock, flags);
	if (c->n < KVT_CQ_REC) {
		r = &c->rec[c->n];
		r->raw = raw;
		r->id = id;
		r->tag = tag;
		r->foreign = foreign;
		r->status = wc->status;
		r->opcode = wc->opcode;
		r->byte_len = wc->byte_len;
		r->wc_flags = wc->wc_flags;
		r->imm = wc->ex.imm_data;
		r->vendor_err = wc->vendor_err;
		r->qp = wc->qp;
	}
	c->n++;
	spin_unlock_irqrestore(&c->lock, flags);
	wake_up(&c->wq);
}

/* ->done() of every work request on ib_alloc_cq() CQs. */
static void kvt_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kvt_cq *c = cq->cq_context;
	struct kvt_cqe *e = container_of(wc->wr_cqe, struct kvt_cqe, cqe);

	kvt_record(c, wc, e - c->t->cqe, e->id, e->tag, false);
}

static void kvt_record_legacy(struct kvt_cq *c, const struct ib_wc *wc)
{
	u64 raw = wc->wr_id;

	kvt_record(c, wc, raw, raw & 0xffff, (u32)(raw >> 16),
		   (raw >> 48) != KVT_WRID_MAGIC);
}

/* comp_handler of ib_create_cq() CQs. */
static void kvt_comp_handler(struct ib_cq *cq, void *ctx)
{
	struct kvt_cq *c = ctx;

	atomic_inc(&c->events);
	wake_up(&c->wq);
}

static void kvt_cq_event(struct ib_event *ev, void *ctx)
{
	struct kvt_cq *c = ctx;

	pr_err("asynchronous event on CQ %s: %s\n", c->name, ib_event_msg(ev->event));
	atomic_inc(&c->errors);
	wake_up(&c->wq);
}

static void kvt_qp_event(struct ib_event *ev, void *ctx)
{
	struct kvt_test *t = ctx;

	if (ev->event == IB_EVENT_SQ_DRAINED) {
		/*
		 * The driver delivers it while the QP is in SQD: never once
		 * modify_qp has moved the QP on and returned.
		 */
		if (!READ_ONCE(t->sqd_open))
			atomic_inc(&t->sqd_late);
		atomic_inc(&t->sqd_events);
		wake_up(&t->sqd_wq);
		return;
	}
	pr_info("asynchronous event on QP %u: %s\n", ev->element.qp->qp_num,
		ib_event_msg(ev->event));
}

static u32 kvt_tag(struct kvt_test *t)
{
	return t->legacy ? t->gen : t->gen & 1;
}

static void kvt_set_send_id(struct kvt_test *t, struct ib_send_wr *wr, u32 id)
{
	if (t->legacy)
		wr->wr_id = (KVT_WRID_MAGIC << 48) | ((u64)t->gen << 16) | id;
	else
		wr->wr_cqe = &t->cqe[(t->gen & 1) * KVT_NIDS + id].cqe;
}

static void kvt_set_recv_id(struct kvt_test *t, struct ib_recv_wr *wr, u32 id)
{
	if (t->legacy)
		wr->wr_id = (KVT_WRID_MAGIC << 48) | ((u64)t->gen << 16) | id;
	else
		wr->wr_cqe = &t->cqe[(t->gen & 1) * KVT_NIDS + id].cqe;
}

static struct kvt_exp *kvt_expect(struct kvt_cq *c, u32 id, struct ib_qp *qp,
				  enum ib_wc_status status, enum ib_wc_opcode opcode)
{
	struct kvt_exp *e = &c->exp[min_t(unsigned int, c->nexp, KVT_CQ_REC - 1)];

	c->nexp++;
	memset(e, 0, sizeof(*e));
	e->id = id;
	e->qp = qp;
	e->status = status;
	e->opcode = opcode;
	return e;
}

static int kvt_cq_poll(struct kvt_cq *c)
{
	int n, i;

	switch (c->mode) {
	case KVT_CQ_DIRECT:
		do {
			n = ib_process_cq_direct(c->cq, KVT_POLL_BATCH);
		} while (n == KVT_POLL_BATCH);
		break;
	case KVT_CQ_POLL:
	case KVT_CQ_EVENT:
		do {
			n = ib_poll_cq(c->cq, KVT_POLL_BATCH, c->wcs);
			if (n < 0)
				return kvt_fail(c->t, "ib_poll_cq(%s) returned %d", c->name, n);
			for (i = 0; i < n; i++)
				kvt_record_legacy(c, &c->wcs[i]);
		} while (n == KVT_POLL_BATCH);
		break;
	default:
		break;
	}
	return 0;
}

static unsigned int kvt_cq_count(struct kvt_cq *c)
{
	return READ_ONCE(c->n);
}

/* Wait until c has as many completions as expected. */
static int kvt_cq_wait(struct kvt_cq *c)
{
	struct kvt_test *t = c->t;
	unsigned long deadline = jiffies + msecs_to_jiffies(timeout_ms);
	unsigned int before;
	long left;
	int ret, seen;

	for (;;) {
		ret = kvt_cq_poll(c);
		if (ret)
			return ret;
		if (atomic_read(&c->errors))
			return kvt_fail(t, "CQ %s reported an asynchronous error", c->name);
		if (kvt_cq_count(c) >= c->nexp)
			return 0;
		left = (long)deadline - (long)jiffies;
		if (left <= 0)
			return kvt_fail(t, "timeout (%u ms): %u of %u completions on CQ %s",
					timeout_ms, kvt_cq_count(c), c->nexp, c->name);
		switch (c->mode) {
		case KVT_CQ_DIRECT:
		case KVT_CQ_POLL:
			usleep_range(20, 200);
			break;
		case KVT_CQ_EVENT:
			seen = atomic_read(&c->events);
			ret = ib_req_notify_cq(c->cq,
					       IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS);
			if (ret < 0)
				return kvt_fail(t, "ib_req_notify_cq(%s): %d", c->name, ret);
			if (ret > 0)
				break;	/* completions may have been missed: poll */
			if (wait_event_timeout(c->wq, atomic_read(&c->events) != seen ||
					       atomic_read(&c->errors), left))
				break;
			/* No event for the armed CQ: were completions added anyway? */
			before = kvt_cq_count(c);
			ret = kvt_cq_poll(c);
			if (ret)
				return ret;
			if (kvt_cq_count(c) != before)
				return kvt_fail(t, "armed CQ %s got %u completions, no event",
						c->name, kvt_cq_count(c) - before);
			break;
		default:
			wait_event_timeout(c->wq, kvt_cq_count(c) >= c->nexp ||
					   atomic_read(&c->errors), left);
			break;
		}
	}
}

/* Compare what c reaped with what was expected, then forget both. */
static int kvt_cq_verify(struct kvt_cq *c)
{
	struct kvt_test *t = c->t;
	char got[80], want[80];
	unsigned long flags;
	unsigned int k, n, nexp = c->nexp;
	struct kvt_rec *r;
	struct kvt_exp *e;
	int ret = 0;

	spin_lock_irqsave(&c->lock, flags);
	n = c->n;
	spin_unlock_irqrestore(&c->lock, flags);

	if (nexp > KVT_CQ_REC)
		return kvt_fail(t, "test bug: %u completions expected on %s", nexp, c->name);
	for (k = 0; k < min(n, nexp); k++) {
		r = &c->rec[k];
		e = &c->exp[k];
		kvt_id_str(t, e->id, want, sizeof(want));
		if (r->foreign)
			return kvt_fail(t, "completion %u on %s: wr_id %#llx is not ours (want %s)",
					k, c->name, r->raw, want);
		if (r->tag != kvt_tag(t))
			return kvt_fail(t, "completion %u on %s (id %u) is from step %u, not %u",
					k, c->name, r->id, r->tag, kvt_tag(t));
		if (r->id != e->id) {
			kvt_id_str(t, r->id, got, sizeof(got));
			return kvt_fail(t, "completion %u on %s is for %s, want %s (status %s)",
					k, c->name, got, want, ib_wc_status_msg(r->status));
		}
		if (r->qp != e->qp)
			return kvt_fail(t, "completion of %s on %s reports QP %u, want QP %u",
					want, c->name, r->qp ? r->qp->qp_num : 0, e->qp->qp_num);
		if (r->status != e->status)
			return kvt_fail(t, "%s on %s: status '%s' (%d, vendor_err %#x), want '%s'",
					want, c->name, ib_wc_status_msg(r->status), r->status,
					r->vendor_err, ib_wc_status_msg(e->status));
		if (e->status != IB_WC_SUCCESS)
			continue;
		if (r->opcode != e->opcode)
			return kvt_fail(t, "completion of %s on %s: opcode %s (%d), want %s",
					want, c->name, kvt_wc_opcode_str(r->opcode), r->opcode,
					kvt_wc_opcode_str(e->opcode));
		if (!e->recv)
			continue;
		if (r->byte_len != e->byte_len)
			return kvt_fail(t, "completion of %s on %s: byte_len %u, want %u",
					want, c->name, r->byte_len, e->byte_len);
		if (!!(r->wc_flags & IB_WC_WITH_IMM) != e->imm)
			return kvt_fail(t, "completion of %s on %s: IB_WC_WITH_IMM is %s, want %s",
					want, c->name, e->imm ? "clear" : "set",
					e->imm ? "set" : "clear");
		if (e->imm && r->imm != e->imm_data)
			return kvt_fail(t, "completion of %s on %s: imm_data %#x, want %#x",
					want, c->name, be32_to_cpu(r->imm),
					be32_to_cpu(e->imm_data));
	}
	if (n < nexp)
		return kvt_fail(t, "only %u of %u completions on %s", n, nexp, c->name);

	spin_lock_irqsave(&c->lock, flags);
	n = c->n;
	c->n = 0;
	c->nexp = 0;
	spin_unlock_irqrestore(&c->lock, flags);
	if (n > nexp) {
		r = &c->rec[nexp];
		kvt_id_str(t, r->id, got, sizeof(got));
		ret = kvt_fail(t, "%u extra completion(s) on %s, first: %s (wr_id %#llx, '%s')",
			       n - nexp, c->name, r->foreign ? "not ours" : got,
			       r->raw, ib_wc_status_msg(r->status));
	}
	return ret;
}

static void kvt_cq_destroy(struct kvt_cq *c)
{
	if (!c)
		return;
	if (c->cq && c->mode <= KVT_CQ_WORKQUEUE)
		ib_free_cq(c->cq);
	else if (c->cq)
		ib_destroy_cq(c->cq);
	kfree(c);
}

static struct kvt_cq *kvt_cq_create(struct kvt_test *t, struct kvt_side *s,
				    const char *what)
{
	static const enum ib_poll_context ctx[] = {
		[KVT_CQ_DIRECT] = IB_POLL_DIRECT,
		[KVT_CQ_SOFTIRQ] = IB_POLL_SOFTIRQ,
		[KVT_CQ_WORKQUEUE] = IB_POLL_WORKQUEUE,
	};
	struct ib_cq_init_attr attr = { .cqe = KVT_CQ_DEPTH, .comp_vector = 0 };
	struct kvt_cq *c;
	int ret;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c) {
		kvt_fail(t, "out of memory");
		return ERR_PTR(-ENOMEM);
	}
	c->t = t;
	c->mode = t->mode;
	snprintf(c->name, sizeof(c->name), "%s.%s", s->name, what);
	spin_lock_init(&c->lock);
	init_waitqueue_head(&c->wq);
	if (t->mode <= KVT_CQ_WORKQUEUE)
		c->cq = ib_alloc_cq(s->dev, c, KVT_CQ_DEPTH, 0, ctx[t->mode]);
	else
		c->cq = ib_create_cq(s->dev, kvt_comp_handler, kvt_cq_event, c, &attr);
	if (IS_ERR(c->cq)) {
		ret = PTR_ERR(c->cq);
		c->cq = NULL;
		kvt_cq_destroy(c);
		kvt_fail(t, "%s(%s, %u entries) failed: %d",
			 t->mode <= KVT_CQ_WORKQUEUE ? "ib_alloc_cq" : "ib_create_cq",
			 s->devname, KVT_CQ_DEPTH, ret);
		return ERR_PTR(ret);
	}
	return c;
}

/* --- buffers ---------------------------------------------------------------- */

static void kvt_arena_reset(struct kvt_test *t)
{
	unsigned int i, k;

	for (i = 0; i < 2; i++) {
		for (k = 0; k < KVT_NCHUNK; k++)
			t->side[i].ch[k].pos = 0;
		t->side[i].atom_used = 0;
	}
}

/* A buffer of len bytes at align + skew, with guard bytes either side. */
static int kvt_alloc_seg(struct kvt_side *s, u32 len, u32 align, u32 skew,
			 struct kvt_seg *seg)
{
	struct kvt_chunk *ch;
	unsigned int k;
	u32 start;

	for (k = 0; k < KVT_NCHUNK; k++) {
		ch = &s->ch[k];
		start = ALIGN(ch->pos + KVT_GUARD, align) + skew;
		if ((u64)start + len + KVT_GUARD > ch->size)
			continue;
		seg->va = (u8 *)ch->va + start;
		seg->dma = ch->dma + start;
		seg->len = len;
		memset(seg->va - KVT_GUARD, KVT_GUARD_BYTE, KVT_GUARD);
		memset(seg->va + len, KVT_GUARD_BYTE, KVT_GUARD);
		ch->pos = start + len + KVT_GUARD;
		return 0;
	}
	return -ENOSPC;
}

/* total bytes as up to nseg buffers of random lengths (none empty). */
static int kvt_alloc_split(struct kvt_test *t, struct kvt_side *s, u32 total,
			   unsigned int nseg, struct kvt_seg *seg, unsigned int *nout)
{
	unsigned int k, n = min_t(u32, nseg, total);
	u32 left = total, piece, avg;
	int ret;

	for (k = 0; k < n; k++) {
		if (k == n - 1) {
			piece = left;
		} else {
			avg = left / (n - k);
			piece = 1 + kvt_rand(t) % (2 * avg);
			piece = min(piece, left - (n - 1 - k));
		}
		ret = kvt_alloc_seg(s, piece, 64, kvt_rand(t) % 8, &seg[k]);
		if (ret)
			return ret;
		left -= piece;
	}
	*nout = n;
	return 0;
}

static void kvt_fill(struct kvt_seg *seg, unsigned int n, u32 seed)
{
	unsigned int k;
	u32 i = 0, j;

	for (k = 0; k < n; k++) {
		for (j = 0; j < seg[k].len; j++)
			seg[k].va[j] = kvt_pat(seed, i++);
		cond_resched();
	}
}

static void kvt_poison(struct kvt_seg *seg, unsigned int n)
{
	unsigned int k;

	for (k = 0; k < n; k++)
		memset(seg[k].va, KVT_POISON, seg[k].len);
}

static int kvt_check_guards(struct kvt_test *t, const char *what,
			    const struct kvt_seg *seg, unsigned int k)
{
	const u8 *pre = seg->va - KVT_GUARD, *post = seg->va + seg->len;
	unsigned int j;

	for (j = 0; j < KVT_GUARD; j++) {
		if (pre[j] != KVT_GUARD_BYTE)
			return kvt_fail(t, "%s: guard byte -%u of buffer %u overwritten (0x%02x)",
					what, KVT_GUARD - j, k, pre[j]);
		if (post[j] != KVT_GUARD_BYTE)
			return kvt_fail(t, "%s: guard byte +%u of buffer %u overwritten (0x%02x)",
					what, j, k, post[j]);
	}
	return 0;
}

/*
 * The first len bytes of the message in seg[] must be the pattern of seed,
 * the rest untouched, and the guard bytes around every buffer intact.
 */
static int kvt_check(struct kvt_test *t, const char *what, const struct kvt_seg *seg,
		     unsigned int n, u32 seed, u32 len)
{
	unsigned int k;
	u32 i = 0, j;
	u8 want;

	for (k = 0; k < n; k++) {
		const u8 *va = seg[k].va;

		if (kvt_check_guards(t, what, &seg[k], k))
			return -EIO;
		for (j = 0; j < seg[k].len; j++, i++) {
			want = i < len ? kvt_pat(seed, i) : KVT_POISON;
			if (va[j] != want)
				return kvt_fail(t, "%s: byte %u/%u (buf %u+%u) is %#x, want %#x%s",
						what, i, len, k, j, va[j], want,
						i < len ? "" : " (untouched)");
		}
		cond_resched();
	}
	return 0;
}

static void kvt_sync(struct kvt_test *t, bool for_device)
{
	struct kvt_chunk *ch;
	struct kvt_side *s;
	unsigned int i, k;

	for (i = 0; i < 2; i++) {
		s = &t->side[i];
		for (k = 0; k < KVT_NCHUNK; k++) {
			ch = &s->ch[k];
			if (!ch->pos)
				continue;
			if (for_device)
				ib_dma_sync_single_for_device(s->dev, ch->dma, ch->pos,
							      DMA_BIDIRECTIONAL);
			else
				ib_dma_sync_single_for_cpu(s->dev, ch->dma, ch->pos,
							   DMA_BIDIRECTIONAL);
		}
		if (for_device)
			ib_dma_sync_single_for_device(s->dev, s->atom_dma, PAGE_SIZE,
						      DMA_BIDIRECTIONAL);
		else
			ib_dma_sync_single_for_cpu(s->dev, s->atom_dma, PAGE_SIZE,
						   DMA_BIDIRECTIONAL);
	}
}

/* --- work requests ---------------------------------------------------------- */

static void kvt_chains_reset(struct kvt_test *t)
{
	unsigned int i;

	for (i = 0; i < 2; i++) {
		t->side[i].shead = NULL;
		t->side[i].stail = &t->side[i].shead;
		t->side[i].rhead = NULL;
		t->side[i].rtail = &t->side[i].rhead;
	}
}

static void kvt_chain_send(struct kvt_side *s, struct ib_send_wr *wr)
{
	wr->next = NULL;
	*s->stail = wr;
	s->stail = &wr->next;
}

static void kvt_chain_recv(struct kvt_side *s, struct ib_recv_wr *wr)
{
	wr->next = NULL;
	*s->rtail = wr;
	s->rtail = &wr->next;
}

static int kvt_post_recvs(struct kvt_test *t, struct kvt_side *s, struct ib_qp *qp)
{
	const struct ib_recv_wr *bad = NULL;
	unsigned int n = 0;
	int ret;

	if (!s->rhead)
		return 0;
	ret = ib_post_recv(qp, s->rhead, &bad);
	if (ret) {
		for (; bad && s->rhead && s->rhead != bad; s->rhead = s->rhead->next)
			n++;
		return kvt_fail(t, "ib_post_recv(%s QP %u) failed: %d (at WR %u of the chain)",
				s->name, qp->qp_num, ret, n);
	}
	return 0;
}

static int kvt_post_sends(struct kvt_test *t, struct kvt_side *s, struct ib_qp *qp)
{
	const struct ib_send_wr *bad = NULL;
	unsigned int n = 0;
	int ret;

	if (!s->shead)
		return 0;
	ret = ib_post_send(qp, s->shead, &bad);
	if (ret) {
		for (; bad && s->shead && s->shead != bad; s->shead = s->shead->next)
			n++;
		return kvt_fail(t, "ib_post_send(%s QP %u) failed: %d (at WR %u of the chain)",
				s->name, qp->qp_num, ret, n);
	}
	return 0;
}

static int kvt_wait_all(struct kvt_test *t)
{
	struct kvt_cq *cqs[4] = {
		t->side[0].scq, t->side[1].scq, t->side[0].rcq, t->side[1].rcq,
	};
	unsigned int i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(cqs); i++) {
		ret = kvt_cq_wait(cqs[i]);
		if (ret)
			return ret;
	}
	for (i = 0; i < ARRAY_SIZE(cqs); i++) {
		ret = kvt_cq_verify(cqs[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static int kvt_query_state(struct kvt_test *t, struct ib_qp *qp, enum ib_qp_state want,
			   const char *what)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;
	int ret;

	memset(&attr, 0, sizeof(attr));
	ret = ib_query_qp(qp, &attr, IB_QP_STATE, &init);
	if (ret)
		return kvt_fail(t, "ib_query_qp(QP %u) failed: %d", qp->qp_num, ret);
	if (attr.qp_state != want)
		return kvt_fail(t, "%s: QP %u is in state %s, want %s", what, qp->qp_num,
				kvt_qp_state_str(attr.qp_state), kvt_qp_state_str(want));
	return 0;
}

/* --- batches of operations -------------------------------------------------- */

static void kvt_add(struct kvt_test *t, enum kvt_type type, u8 from, u32 len, u8 nsge,
		    u8 rsge, u32 rextra, bool unsig, s8 slot)
{
	struct kvt_op *op;

	if (t->nops >= KVT_MAX_OPS)
		return;
	op = &t->op[t->nops++];
	memset(op, 0, sizeof(*op));
	op->type = type;
	op->from = from;
	op->len = len;
	op->nsge = max_t(u32, 1, min_t(u32, nsge, type == KVT_READ ? t->max_sge_rd : t->max_sge));
	op->rsge = min_t(u32, rsge, t->max_sge);
	op->rextra = rextra;
	op->unsig = unsig;
	op->slot = slot;
}

static bool kvt_has_recv(enum kvt_type type)
{
	return type == KVT_SEND || type == KVT_SEND_IMM || type == KVT_WRITE_IMM;
}

/* Buffers and expected values of op i. */
static int kvt_prep_op(struct kvt_test *t, unsigned int i)
{
	struct kvt_op *op = &t->op[i];
	struct kvt_side *ini = &t->side[op->from];
	struct kvt_side *res = &t->side[!op->from];
	u64 cur;
	int ret;

	op->seed = kvt_rand(t);
	op->imm = kvt_rand(t);
	op->nl = 0;
	op->nr = 0;
	switch (op->type) {
	case KVT_SEND:
	case KVT_SEND_IMM:
		ret = kvt_alloc_split(t, ini, op->len, op->nsge, op->l, &op->nl);
		if (!ret)
			ret = kvt_alloc_split(t, res, op->len + op->rextra, op->rsge,
					      op->r, &op->nr);
		if (ret)
			return ret;
		kvt_fill(op->l, op->nl, op->seed);
		kvt_poison(op->r, op->nr);
		break;
	case KVT_WRITE:
	case KVT_WRITE_IMM:
		ret = kvt_alloc_split(t, ini, op->len, op->nsge, op->l, &op->nl);
		if (!ret)
			ret = kvt_alloc_seg(res, op->len, 64, kvt_rand(t) % 8, &op->rem);
		if (!ret && op->type == KVT_WRITE_IMM)
			ret = kvt_alloc_split(t, res, op->rextra, op->rsge, op->r, &op->nr);
		if (ret)
			return ret;
		kvt_fill(op->l, op->nl, op->seed);
		kvt_poison(&op->rem, 1);
		kvt_poison(op->r, op->nr);
		break;
	case KVT_READ:
		ret = kvt_alloc_seg(res, op->len, 64, kvt_rand(t) % 8, &op->rem);
		if (!ret)
			ret = kvt_alloc_split(t, ini, op->len, op->nsge, op->l, &op->nl);
		if (ret)
			return ret;
		kvt_fill(&op->rem, 1, op->seed);
		kvt_poison(op->l, op->nl);
		break;
	default:
		ret = kvt_alloc_seg(ini, 8, 8, 0, &op->l[0]);
		if (ret)
			return ret;
		op->nl = 1;
		kvt_poison(op->l, 1);
		if (op->slot >= 0 && op->slot < i && t->op[op->slot].type >= KVT_CSWAP &&
		    t->op[op->slot].from == op->from) {
			op->tslot = t->op[op->slot].tslot;
		} else {
			if (res->atom_used >= KVT_ATOM_SLOTS)
				return -ENOSPC;
			op->tslot = res->atom_used++;
			res->atom_sim[op->tslot] = kvt_rand64(t);
			res->atom[op->tslot] = res->atom_sim[op->tslot];
		}
		cur = res->atom_sim[op->tslot];
		op->orig = cur;
		op->swap = kvt_rand64(t);
		if (op->type == KVT_CSWAP) {
			op->cmp = cur;
			res->atom_sim[op->tslot] = op->swap;
		} else if (op->type == KVT_CSWAP_FAIL) {
			op->cmp = cur ^ (kvt_rand64(t) | 1);
		} else {
			op->cmp = kvt_rand64(t);
			res->atom_sim[op->tslot] = cur + op->cmp;
		}
		break;
	}
	return 0;
}

static enum ib_wc_opcode kvt_send_wc_opcode(enum kvt_type type)
{
	switch (type) {
	case KVT_SEND:
	case KVT_SEND_IMM:
		return IB_WC_SEND;
	case KVT_WRITE:
	case KVT_WRITE_IMM:
		return IB_WC_RDMA_WRITE;
	case KVT_READ:
		return IB_WC_RDMA_READ;
	case KVT_FADD:
		return IB_WC_FETCH_ADD;
	default:
		return IB_WC_COMP_SWAP;
	}
}

/* The work requests of op i, chained, and the completions they must give. */
static void kvt_build_op(struct kvt_test *t, unsigned int i)
{
	struct kvt_op *op = &t->op[i];
	struct kvt_side *ini = &t->side[op->from];
	struct kvt_side *res = &t->side[!op->from];
	struct ib_send_wr *wr = &op->s.wr;
	struct kvt_exp *e;
	unsigned int k;

	memset(&op->s, 0, sizeof(op->s));
	for (k = 0; k < op->nl; k++) {
		op->sge[k].addr = op->l[k].dma;
		op->sge[k].length = op->l[k].len;
		op->sge[k].lkey = ini->pd->local_dma_lkey;
	}
	wr->sg_list = op->nl ? op->sge : NULL;
	wr->num_sge = op->nl;
	wr->send_flags = op->unsig ? 0 : IB_SEND_SIGNALED;
	kvt_set_send_id(t, wr, i);
	switch (op->type) {
	case KVT_SEND:
		wr->opcode = IB_WR_SEND;
		break;
	case KVT_SEND_IMM:
		wr->opcode = IB_WR_SEND_WITH_IMM;
		wr->ex.imm_data = cpu_to_be32(op->imm);
		break;
	case KVT_WRITE:
	case KVT_WRITE_IMM:
	case KVT_READ:
		if (op->type == KVT_READ) {
			wr->opcode = IB_WR_RDMA_READ;
		} else if (op->type == KVT_WRITE) {
			wr->opcode = IB_WR_RDMA_WRITE;
		} else {
			wr->opcode = IB_WR_RDMA_WRITE_WITH_IMM;
			wr->ex.imm_data = cpu_to_be32(op->imm);
		}
		op->s.rdma.remote_addr = op->rem.dma;
		op->s.rdma.rkey = res->pd->unsafe_global_rkey;
		break;
	default:
		wr->opcode = op->type == KVT_FADD ? IB_WR_ATOMIC_FETCH_AND_ADD :
						    IB_WR_ATOMIC_CMP_AND_SWP;
		op->s.atomic.remote_addr = res->atom_addr + 8 * op->tslot;
		op->s.atomic.compare_add = op->cmp;
		op->s.atomic.swap = op->swap;
		op->s.atomic.rkey = res->atom_rkey;
		break;
	}
	kvt_chain_send(ini, wr);
	if (!op->unsig)
		kvt_expect(ini->scq, i, ini->qp, IB_WC_SUCCESS, kvt_send_wc_opcode(op->type));

	if (!kvt_has_recv(op->type))
		return;
	for (k = 0; k < op->nr; k++) {
		op->rsg[k].addr = op->r[k].dma;
		op->rsg[k].length = op->r[k].len;
		op->rsg[k].lkey = res->pd->local_dma_lkey;
	}
	memset(&op->rwr, 0, sizeof(op->rwr));
	op->rwr.sg_list = op->nr ? op->rsg : NULL;
	op->rwr.num_sge = op->nr;
	kvt_set_recv_id(t, &op->rwr, KVT_ID_RECV + i);
	kvt_chain_recv(res, &op->rwr);
	e = kvt_expect(res->rcq, KVT_ID_RECV + i, res->qp, IB_WC_SUCCESS,
		       op->type == KVT_WRITE_IMM ? IB_WC_RECV_RDMA_WITH_IMM : IB_WC_RECV);
	e->recv = true;
	e->byte_len = op->len;
	e->imm = op->type != KVT_SEND;
	e->imm_data = cpu_to_be32(op->imm);
}

static int kvt_check_op(struct kvt_test *t, unsigned int i)
{
	struct kvt_op *op = &t->op[i];
	char desc[64];
	u64 got;

	kvt_op_str(t, i, desc, sizeof(desc));
	switch (op->type) {
	case KVT_SEND:
	case KVT_SEND_IMM:
		snprintf(t->what, sizeof(t->what), "%s: receive buffers", desc);
		if (kvt_check(t, t->what, op->r, op->nr, op->seed, op->len))
			return -EIO;
		break;
	case KVT_WRITE:
	case KVT_WRITE_IMM:
		snprintf(t->what, sizeof(t->what), "%s: target", desc);
		if (kvt_check(t, t->what, &op->rem, 1, op->seed, op->len))
			return -EIO;
		snprintf(t->what, sizeof(t->what), "%s: receive buffers (unused)", desc);
		if (kvt_check(t, t->what, op->r, op->nr, op->seed, 0))
			return -EIO;
		break;
	case KVT_READ:
		snprintf(t->what, sizeof(t->what), "%s: local buffers", desc);
		if (kvt_check(t, t->what, op->l, op->nl, op->seed, op->len))
			return -EIO;
		snprintf(t->what, sizeof(t->what), "%s: remote source", desc);
		if (kvt_check(t, t->what, &op->rem, 1, op->seed, op->len))
			return -EIO;
		return 0;
	default:
		got = *(u64 *)op->l[0].va;
		if (got != op->orig)
			return kvt_fail(t, "%s: returned %#llx, want %#llx (operands %#llx %#llx)",
					desc, got, op->orig, op->cmp, op->swap);
		snprintf(t->what, sizeof(t->what), "%s: result buffer", desc);
		return kvt_check_guards(t, t->what, &op->l[0], 0);
	}
	/* The source of a SEND or WRITE is read, never written. */
	snprintf(t->what, sizeof(t->what), "%s: source buffers", desc);
	return kvt_check(t, t->what, op->l, op->nl, op->seed, op->len);
}

/*
 * Run the t->nops operations in t->op[]: receives first (one chained
 * ib_post_recv() per side), then one chained ib_post_send() per side; wait
 * for and check every completion, then every byte. With may_truncate, ops
 * that do not fit the buffers are dropped.
 */
static int kvt_run_batch(struct kvt_test *t, const char *name, bool may_truncate)
{
	unsigned int i, s, n = t->nops;
	int ret, last;

	kvt_begin(t, "%s", name);
	kvt_arena_reset(t);
	for (i = 0; i < n; i++) {
		ret = kvt_prep_op(t, i);
		if (ret == -ENOSPC && may_truncate && i > 0) {
			n = i;
			break;
		}
		if (ret)
			return kvt_fail(t, "test bug: op %u does not fit the buffers", i);
	}
	t->nops = n;
	/* An unsignaled WR completes only through a later signaled one. */
	for (s = 0; s < 2; s++) {
		last = -1;
		for (i = 0; i < n; i++)
			if (t->op[i].from == s)
				last = i;
		if (last >= 0)
			t->op[last].unsig = false;
	}
	kvt_sync(t, true);
	kvt_chains_reset(t);
	for (i = 0; i < n; i++)
		kvt_build_op(t, i);

	ret = kvt_post_recvs(t, &t->side[0], t->side[0].qp);
	if (!ret)
		ret = kvt_post_recvs(t, &t->side[1], t->side[1].qp);
	if (!ret)
		ret = kvt_post_sends(t, &t->side[0], t->side[0].qp);
	if (!ret)
		ret = kvt_post_sends(t, &t->side[1], t->side[1].qp);
	if (!ret)
		ret = kvt_wait_all(t);
	if (ret)
		return ret;
	kvt_sync(t, false);

	for (i = 0; i < n; i++) {
		ret = kvt_check_op(t, i);
		if (ret)
			return ret;
		t->bytes += t->op[i].type >= KVT_CSWAP ? 8 : t->op[i].len;
	}
	for (s = 0; s < 2; s++) {
		struct kvt_side *res = &t->side[s];

		for (i = 0; i < res->atom_used; i++)
			if (res->atom[i] != res->atom_sim[i])
				return kvt_fail(t, "atomic target %u on %s holds %#llx, want %#llx",
						i, res->name, res->atom[i], res->atom_sim[i]);
	}
	t->wrs += n;
	return 0;
}

static const u32 kvt_sizes[] = { 0, 1, 2, 63, 1024, 1025, 4099, 65541, SZ_1M };

/* Every opcode with data at every size, each direction on its own. */
static int kvt_ladder(struct kvt_test *t)
{
	char name[80];
	unsigned int i;
	u8 dir;
	int ret;

	for (i = 0; i < ARRAY_SIZE(kvt_sizes); i++) {
		if (kvt_sizes[i] > max_size)
			continue;
		for (dir = 0; dir < 2; dir++) {
			t->nops = 0;
			kvt_add(t, KVT_SEND, dir, kvt_sizes[i], 3, 2, 13, false, -1);
			kvt_add(t, KVT_SEND_IMM, dir, kvt_sizes[i], 1, 1, 0, false, -1);
			kvt_add(t, KVT_WRITE, dir, kvt_sizes[i], 2, 0, 0, false, -1);
			kvt_add(t, KVT_WRITE_IMM, dir, kvt_sizes[i], 4, 0, 0, false, -1);
			kvt_add(t, KVT_READ, dir, kvt_sizes[i], 3, 0, 0, false, -1);
			snprintf(name, sizeof(name), "all data opcodes, %u bytes, %s->%s",
				 kvt_sizes[i], t->side[dir].name, t->side[!dir].name);
			ret = kvt_run_batch(t, name, false);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* Chains of atomics on shared targets, both directions at once. */
static int kvt_atomics(struct kvt_test *t)
{
	s8 base;
	u8 dir;

	t->nops = 0;
	for (dir = 0; dir < 2; dir++) {
		base = t->nops;
		kvt_add(t, KVT_CSWAP, dir, 8, 1, 0, 0, false, -1);
		kvt_add(t, KVT_FADD, dir, 8, 1, 0, 0, false, base);
		kvt_add(t, KVT_CSWAP_FAIL, dir, 8, 1, 0, 0, false, base);
		kvt_add(t, KVT_CSWAP, dir, 8, 1, 0, 0, false, base);
		kvt_add(t, KVT_FADD, dir, 8, 1, 0, 0, false, -1);
		kvt_add(t, KVT_FADD, dir, 8, 1, 0, 0, false, base + 4);
		kvt_add(t, KVT_CSWAP_FAIL, dir, 8, 1, 0, 0, false, base + 4);
		kvt_add(t, KVT_CSWAP_FAIL, dir, 8, 1, 0, 0, false, -1);
	}
	return kvt_run_batch(t, "chained atomics on shared targets", false);
}

/* One chain of mixed opcodes per side, some of them unsignaled. */
static int kvt_mixed(struct kvt_test *t)
{
	t->nops = 0;
	kvt_add(t, KVT_WRITE, 0, 4096, 2, 0, 0, true, -1);
	kvt_add(t, KVT_SEND, 0, 100, 2, 3, 50, false, -1);
	kvt_add(t, KVT_SEND, 1, 5000, 4, 1, 0, true, -1);
	kvt_add(t, KVT_READ, 0, 3000, 3, 0, 0, true, -1);
	kvt_add(t, KVT_CSWAP, 0, 8, 1, 0, 0, true, -1);
	kvt_add(t, KVT_READ, 1, 70000, 2, 0, 0, false, -1);
	kvt_add(t, KVT_WRITE_IMM, 0, 300, 1, 1, 16, false, -1);
	kvt_add(t, KVT_FADD, 0, 8, 1, 0, 0, true, 4);
	kvt_add(t, KVT_WRITE_IMM, 1, 0, 1, 0, 0, true, -1);
	kvt_add(t, KVT_SEND_IMM, 0, 1, 1, 1, 0, false, -1);
	kvt_add(t, KVT_WRITE, 1, 1, 1, 0, 0, false, -1);
	return kvt_run_batch(t, "mixed chains with unsignaled WRs", false);
}

static u32 kvt_rand_len(struct kvt_test *t)
{
	u32 r = kvt_rand(t) % 16;

	if (r == 0)
		return 0;
	if (r == 1)
		return max_size;
	r = kvt_rand(t) % (ilog2(max_size) + 1);
	return min(max_size, 1 + kvt_rand(t) % (1U << r));
}

static int kvt_random(struct kvt_test *t, unsigned int iter)
{
	unsigned int i, j, n = 1 + kvt_rand(t) % 16;
	enum kvt_type type;
	char name[48];
	s8 slot;
	u8 from;

	t->nops = 0;
	for (i = 0; i < n; i++) {
		type = kvt_rand(t) % KVT_NTYPES;
		from = kvt_rand(t) & 1;
		slot = -1;
		if (type >= KVT_CSWAP && (kvt_rand(t) & 1)) {
			for (j = 0; j < t->nops; j++)
				if (t->op[j].type >= KVT_CSWAP && t->op[j].from == from)
					slot = j;
		}
		kvt_add(t, type, from, kvt_rand_len(t), 1 + kvt_rand(t) % KVT_MAX_SGE,
			1 + kvt_rand(t) % KVT_MAX_SGE,
			kvt_rand(t) % 3 ? 0 : kvt_rand(t) % 100, !(kvt_rand(t) % 4), slot);
	}
	snprintf(name, sizeof(name), "random chain %u of %u", iter + 1, iters);
	return kvt_run_batch(t, name, true);
}

/* --- QPs -------------------------------------------------------------------- */

static struct ib_qp *kvt_create_qp(struct kvt_test *t, struct kvt_side *s)
{
	struct ib_qp_init_attr ia = {
		.event_handler = kvt_qp_event,
		.qp_context = t,
		.send_cq = s->scq->cq,
		.recv_cq = s->rcq->cq,
		.cap = {
			.max_send_wr = KVT_QP_DEPTH,
			.max_recv_wr = KVT_QP_DEPTH,
			.max_send_sge = t->max_sge,
			.max_recv_sge = t->max_sge,
		},
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};
	struct ib_qp *qp;

	qp = ib_create_qp(s->pd, &ia);
	if (IS_ERR(qp)) {
		kvt_fail(t, "ib_create_qp(RC) on %s failed: %ld", s->devname, PTR_ERR(qp));
		return qp;
	}
	if (ia.cap.max_send_wr < KVT_QP_DEPTH || ia.cap.max_recv_wr < KVT_QP_DEPTH ||
	    ia.cap.max_send_sge < t->max_sge || ia.cap.max_recv_sge < t->max_sge) {
		kvt_fail(t, "ib_create_qp on %s: too few WRs/SGEs (send %u/%u, recv %u/%u)",
			 s->devname, ia.cap.max_send_wr, ia.cap.max_send_sge,
			 ia.cap.max_recv_wr, ia.cap.max_recv_sge);
		ib_destroy_qp(qp);
		return ERR_PTR(-EIO);
	}
	return qp;
}

/* RESET -> INIT -> RTR -> RTS, towards peer's QP pqp. */
static int kvt_connect(struct kvt_test *t, struct kvt_side *s, struct ib_qp *qp,
		       struct kvt_side *peer, struct ib_qp *pqp, u32 sq_psn, u32 rq_psn)
{
	union ib_gid dgid = peer->gattr->gid;
	struct ib_qp_attr attr;
	int ret;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = s->port;
	attr.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
			       IB_ACCESS_REMOTE_ATOMIC;
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
			   IB_QP_ACCESS_FLAGS);
	if (ret)
		return kvt_fail(t, "ib_modify_qp(%s QP %u, RESET->INIT) failed: %d",
				s->name, qp->qp_num, ret);

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = IB_MTU_1024;
	attr.dest_qp_num = pqp->qp_num;
	attr.rq_psn = rq_psn;
	attr.max_dest_rd_atomic = t->rd_atom;
	attr.min_rnr_timer = 12;
	attr.ah_attr.type = rdma_ah_find_type(s->dev, s->port);
	if (attr.ah_attr.type != RDMA_AH_ATTR_TYPE_ROCE)
		return kvt_fail(t, "%s port %u: address handle type %d, not RoCE",
				s->devname, s->port, attr.ah_attr.type);
	rdma_ah_set_port_num(&attr.ah_attr, s->port);
	rdma_ah_set_grh(&attr.ah_attr, &dgid, 0, s->gattr->index, s->hop_limit, 0);
	/* Kernel callers pass resolved L2 addresses (see _ib_modify_qp()). */
	memcpy(attr.ah_attr.roce.dmac, s->dmac, ETH_ALEN);
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
			   IB_QP_MIN_RNR_TIMER);
	if (ret)
		return kvt_fail(t, "ib_modify_qp(%s QP %u, INIT->RTR, to QP %u) failed: %d",
				s->name, qp->qp_num, pqp->qp_num, ret);

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.sq_psn = sq_psn;
	attr.max_rd_atomic = t->rd_atom;
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			   IB_QP_RNR_RETRY | IB_QP_SQ_PSN | IB_QP_MAX_QP_RD_ATOMIC);
	if (ret)
		return kvt_fail(t, "ib_modify_qp(%s QP %u, RTR->RTS) failed: %d",
				s->name, qp->qp_num, ret);
	return kvt_query_state(t, qp, IB_QPS_RTS, "after RTR->RTS");
}

/* A connected QP pair (error_pair: the error-path pair) on the round's CQs. */
static int kvt_pair_create(struct kvt_test *t, bool error_pair)
{
	struct kvt_side *a = &t->side[0], *b = &t->side[1];
	struct ib_qp **qa = error_pair ? &a->eqp : &a->qp;
	struct ib_qp **qb = error_pair ? &b->eqp : &b->qp;
	u32 psn_a = kvt_rand(t) & 0xffffff, psn_b = kvt_rand(t) & 0xffffff;
	struct ib_qp *qp;
	int ret;

	qp = kvt_create_qp(t, a);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	*qa = qp;
	qp = kvt_create_qp(t, b);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	*qb = qp;
	ret = kvt_connect(t, a, *qa, b, *qb, psn_a, psn_b);
	if (!ret)
		ret = kvt_connect(t, b, *qb, a, *qa, psn_b, psn_a);
	return ret;
}

static void kvt_qp_destroy(struct ib_qp **qp)
{
	int ret;

	if (!*qp)
		return;
	ret = ib_destroy_qp(*qp);
	if (ret)
		pr_err("ib_destroy_qp(QP %u) returned %d\n", (*qp)->qp_num, ret);
	*qp = NULL;
}

/* --- atomic targets --------------------------------------------------------- */

/* (Re-)register the FRMR over s->atom: LOCAL_INV, then REG_MR. */
static int kvt_atom_register(struct kvt_test *t, struct kvt_side *s)
{
	struct ib_mr *mr = s->atom_mr;
	int ret;

	kvt_begin(t, "%s: IB_WR_REG_MR of the atomic targets", s->name);
	kvt_chains_reset(t);
	if (s->atom_reg) {
		memset(&t->inv, 0, sizeof(t->inv));
		t->inv.opcode = IB_WR_LOCAL_INV;
		t->inv.send_flags = IB_SEND_SIGNALED;
		t->inv.ex.invalidate_rkey = mr->rkey;
		kvt_set_send_id(t, &t->inv, KVT_ID_INV);
		kvt_chain_send(s, &t->inv);
		kvt_expect(s->scq, KVT_ID_INV, s->qp, IB_WC_SUCCESS, IB_WC_LOCAL_INV);
	}
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey) & 0xff);
	memset(&t->reg, 0, sizeof(t->reg));
	t->reg.wr.opcode = IB_WR_REG_MR;
	t->reg.wr.send_flags = IB_SEND_SIGNALED;
	t->reg.mr = mr;
	t->reg.key = mr->rkey;
	t->reg.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
			IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC;
	kvt_set_send_id(t, &t->reg.wr, KVT_ID_REG);
	kvt_chain_send(s, &t->reg.wr);
	kvt_expect(s->scq, KVT_ID_REG, s->qp, IB_WC_SUCCESS, IB_WC_REG_MR);
	s->atom_reg = false;
	ret = kvt_post_sends(t, s, s->qp);
	if (!ret)
		ret = kvt_cq_wait(s->scq);
	if (!ret)
		ret = kvt_cq_verify(s->scq);
	if (ret)
		return ret;
	s->atom_reg = true;
	s->atom_rkey = mr->rkey;
	s->atom_addr = mr->iova;
	return 0;
}

static int kvt_atom_setup(struct kvt_test *t, struct kvt_side *s)
{
	struct ib_device *dev = s->dev;
	bool frmr_ok = dev->ops.alloc_mr && dev->ops.map_mr_sg &&
		       (dev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS);
	struct ib_mr *mr;
	int n;

	s->atom = kzalloc(PAGE_SIZE, GFP_KERNEL);
	if (!s->atom)
		return kvt_fail(t, "out of memory");
	if (!strcmp(atomic_mr, "frmr") && !frmr_ok)
		return kvt_fail(t, "atomic_mr=frmr, but %s cannot do fast registration",
				s->devname);
	s->atom_frmr = frmr_ok && strcmp(atomic_mr, "dma");

	if (s->atom_frmr) {
		sg_init_one(&s->atom_sg, s->atom, PAGE_SIZE);
		if (!ib_dma_map_sg(dev, &s->atom_sg, 1, DMA_BIDIRECTIONAL))
			return kvt_fail(t, "ib_dma_map_sg of the atomic targets on %s failed",
					s->devname);
		s->atom_mapped = true;
		s->atom_dma = sg_dma_address(&s->atom_sg);
		mr = ib_alloc_mr(s->pd, IB_MR_TYPE_MEM_REG, 1);
		if (IS_ERR(mr))
			return kvt_fail(t, "ib_alloc_mr(%s, IB_MR_TYPE_MEM_REG) failed: %ld",
					s->devname, PTR_ERR(mr));
		s->atom_mr = mr;
		n = ib_map_mr_sg(mr, &s->atom_sg, 1, NULL, PAGE_SIZE);
		if (n != 1)
			return kvt_fail(t, "ib_map_mr_sg(%s) mapped %d of 1", s->devname, n);
		pr_info("%s: atomic targets in a fast-registration MR (IB_WR_REG_MR)\n", s->name);
		return 0;
	}

	s->atom_dma = ib_dma_map_single(dev, s->atom, PAGE_SIZE, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, s->atom_dma))
		return kvt_fail(t, "ib_dma_map_single of the atomic targets on %s failed",
				s->devname);
	s->atom_mapped = true;
	/*
	 * IB_PD_UNSAFE_GLOBAL_RKEY grants remote read and write, not atomics:
	 * take a DMA MR with remote atomic access from the driver, the way
	 * __ib_alloc_pd() takes the PD's own, and release it the way
	 * ib_dealloc_pd() does.
	 */
	mr = dev->ops.get_dma_mr(s->pd, IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
				 IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC);
	if (IS_ERR(mr))
		return kvt_fail(t, "get_dma_mr(%s, remote atomic access) failed: %ld",
				s->devname, PTR_ERR(mr));
	mr->device = dev;
	mr->pd = s->pd;
	mr->type = IB_MR_TYPE_DMA;
	mr->uobject = NULL;
	mr->need_inval = false;
	s->atom_mr = mr;
	s->atom_rkey = mr->rkey;
	s->atom_addr = s->atom_dma;
	pr_info("%s: atomic targets in a DMA MR with remote atomic access\n", s->name);
	return 0;
}

static void kvt_atom_teardown(struct kvt_side *s)
{
	int ret;

	if (s->atom_mr && s->atom_frmr) {
		ret = ib_dereg_mr(s->atom_mr);
		if (ret)
			pr_err("%s: ib_dereg_mr returned %d\n", s->name, ret);
	} else if (s->atom_mr) {
		ret = s->dev->ops.dereg_mr(s->atom_mr, NULL);
		if (ret)
			pr_err("%s: dereg_mr returned %d\n", s->name, ret);
	}
	s->atom_mr = NULL;
	if (s->atom_mapped && s->atom_frmr)
		ib_dma_unmap_sg(s->dev, &s->atom_sg, 1, DMA_BIDIRECTIONAL);
	else if (s->atom_mapped)
		ib_dma_unmap_single(s->dev, s->atom_dma, PAGE_SIZE, DMA_BIDIRECTIONAL);
	s->atom_mapped = false;
	kfree(s->atom);
	s->atom = NULL;
}

/* --- the two ends --------------------------------------------------------- */

static int kvt_check_device(struct kvt_test *t, struct kvt_side *s)
{
#define KVT_OP(x) { offsetof(struct ib_device, ops.x), #x }
	/* The RDMA core's mandatory ops of a kernel-verbs provider. */
	static const struct {
		size_t off;
		const char *name;
	} mandatory[] = {
		KVT_OP(query_device), KVT_OP(query_port), KVT_OP(alloc_pd),
		KVT_OP(dealloc_pd), KVT_OP(create_qp), KVT_OP(modify_qp),
		KVT_OP(destroy_qp), KVT_OP(post_send), KVT_OP(post_recv),
		KVT_OP(create_cq), KVT_OP(destroy_cq), KVT_OP(poll_cq),
		KVT_OP(req_notify_cq), KVT_OP(get_dma_mr), KVT_OP(reg_user_mr),
		KVT_OP(dereg_mr), KVT_OP(get_port_immutable),
	};
#undef KVT_OP
	const struct ib_device_attr *a = &s->dev->attrs;
	struct ib_port_attr pa;
	unsigned int i, missing = 0;
	int ret;

	for (i = 0; i < ARRAY_SIZE(mandatory); i++) {
		if (*(void **)((u8 *)s->dev + mandatory[i].off))
			continue;
		pr_err("FAIL: %s is not a kernel-verbs provider: ib_device_ops.%s is not set\n",
		       s->devname, mandatory[i].name);
		missing++;
	}
	if (missing || !s->dev->kverbs_provider) {
		if (!missing)
			pr_err("FAIL: the RDMA core does not count %s as a kernel-verbs provider\n",
			       s->devname);
		return -EOPNOTSUPP;
	}
	if (!rdma_protocol_roce_udp_encap(s->dev, s->port))
		return kvt_fail(t, "%s port %u does not speak RoCE v2", s->devname, s->port);
	ret = ib_query_port(s->dev, s->port, &pa);
	if (ret)
		return kvt_fail(t, "ib_query_port(%s, %u) failed: %d", s->devname, s->port, ret);
	if (pa.state != IB_PORT_ACTIVE)
		return kvt_fail(t, "%s port %u is in state %d, not ACTIVE", s->devname, s->port,
				pa.state);
	if (pa.active_mtu < IB_MTU_1024)
		return kvt_fail(t, "%s port %u: active MTU %d, below 1024", s->devname, s->port,
				ib_mtu_enum_to_int(pa.active_mtu));
	if (a->atomic_cap == IB_ATOMIC_NONE)
		return kvt_fail(t, "%s reports no atomic operations (atomic_cap NONE)", s->devname);
	if (a->max_qp_rd_atom < 1 || a->max_qp_init_rd_atom < 1)
		return kvt_fail(t, "%s: max_qp_rd_atom %d, max_qp_init_rd_atom %d",
				s->devname, a->max_qp_rd_atom, a->max_qp_init_rd_atom);
	if (a->max_qp_wr < KVT_QP_DEPTH || a->max_cqe < KVT_CQ_DEPTH ||
	    a->max_send_sge < 1 || a->max_recv_sge < 1 || a->max_sge_rd < 1)
		return kvt_fail(t, "%s: limits too small (WR %d, CQE %d, SGE %d/%d/%d)",
				s->devname, a->max_qp_wr, a->max_cqe, a->max_send_sge,
				a->max_recv_sge, a->max_sge_rd);
	return 0;
}

static bool kvt_gid_usable(const struct ib_gid_attr *a, bool want_v4)
{
	const struct in6_addr *ip = (const struct in6_addr *)a->gid.raw;

	if (a->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return false;
	if (want_v4)
		return ipv6_addr_v4mapped(ip);
	/* Not IPv4, not link-local (fe80::/10). */
	return !ipv6_addr_v4mapped(ip) &&
	       !(ip->s6_addr[0] == 0xfe && (ip->s6_addr[1] & 0xc0) == 0x80);
}

static int kvt_pick_gid(struct kvt_test *t, struct kvt_side *s, int index)
{
	const struct ib_port_immutable *im = ib_port_immutable_read(s->dev, s->port);
	const struct ib_gid_attr *a = NULL;
	char ndev[IFNAMSIZ] = "?";
	struct net_device *nd;
	int i, pass;

	if (index >= 0) {
		a = rdma_get_gid_attr(s->dev, s->port, index);
		if (IS_ERR(a))
			return kvt_fail(t, "%s port %u has no GID at index %d (%ld)",
					s->devname, s->port, index, PTR_ERR(a));
		if (a->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP) {
			pass = a->gid_type;
			rdma_put_gid_attr(a);
			return kvt_fail(t, "GID %d of %s port %u is not a RoCE v2 GID (type %d)",
					index, s->devname, s->port, pass);
		}
	}
	for (pass = 0; !a && pass < 2; pass++) {
		for (i = 0; i < im->gid_tbl_len; i++) {
			a = rdma_get_gid_attr(s->dev, s->port, i);
			if (IS_ERR(a)) {
				a = NULL;
				continue;
			}
			if (kvt_gid_usable(a, pass == 0))
				break;
			rdma_put_gid_attr(a);
			a = NULL;
		}
	}
	if (!a)
		return kvt_fail(t, "%s port %u has no RoCE v2 GID", s->devname, s->port);
	s->gattr = a;

	rcu_read_lock();
	nd = rdma_read_gid_attr_ndev_rcu(a);
	if (!IS_ERR(nd))
		strscpy(ndev, nd->name, sizeof(ndev));
	rcu_read_unlock();
	pr_info("%s: %s port %u, RoCE v2 GID %u %pI6c (netdev %s)\n", s->name, s->devname,
		s->port, a->index, a->gid.raw, ndev);
	return 0;
}

static int kvt_chunks_alloc(struct kvt_test *t, struct kvt_side *s)
{
	struct kvt_chunk *ch;
	unsigned int k;

	for (k = 0; k < KVT_NCHUNK; k++) {
		ch = &s->ch[k];
		if (k == 0) {
			ch->size = KVT_KCHUNK_SIZE;
			ch->va = kmalloc(ch->size, GFP_KERNEL);
			if (!ch->va)
				return kvt_fail(t, "out of memory");
			ch->dma = ib_dma_map_single(s->dev, ch->va, ch->size, DMA_BIDIRECTIONAL);
		} else {
			ch->size = KVT_CHUNK_SIZE;
			ch->page = alloc_pages(GFP_KERNEL | __GFP_NOWARN, KVT_CHUNK_ORDER);
			if (!ch->page)
				return kvt_fail(t, "cannot allocate %lu contiguous bytes",
						KVT_CHUNK_SIZE);
			ch->va = page_address(ch->page);
			ch->dma = ib_dma_map_page(s->dev, ch->page, 0, ch->size,
						  DMA_BIDIRECTIONAL);
		}
		if (ib_dma_mapping_error(s->dev, ch->dma))
			return kvt_fail(t, "DMA mapping of buffer %u on %s failed", k, s->devname);
		ch->mapped = true;
	}
	return 0;
}

static void kvt_chunks_free(struct kvt_side *s)
{
	struct kvt_chunk *ch;
	unsigned int k;

	for (k = 0; k < KVT_NCHUNK; k++) {
		ch = &s->ch[k];
		if (ch->mapped && ch->page)
			ib_dma_unmap_page(s->dev, ch->dma, ch->size, DMA_BIDIRECTIONAL);
		else if (ch->mapped)
			ib_dma_unmap_single(s->dev, ch->dma, ch->size, DMA_BIDIRECTIONAL);
		if (ch->page)
			__free_pages(ch->page, KVT_CHUNK_ORDER);
		else
			kfree(ch->va);
		memset(ch, 0, sizeof(*ch));
	}
}

/*
 * The registered RDMA device named @name, with a reference the caller drops
 * with ib_device_put(), or NULL. Not ib_device_get_by_name(): 7.x no longer
 * exports it. A client registered for the lookup is offered every device
 * (its add() runs for each under the core's locks) and declines them all.
 */
static DEFINE_MUTEX(kvt_find_lock);
static const char *kvt_find_name;
static struct ib_device *kvt_find_dev;

static int kvt_find_add(struct ib_device *dev)
{
	if (!kvt_find_dev && !strcmp(dev_name(&dev->dev), kvt_find_name) &&
	    ib_device_try_get(dev))
		kvt_find_dev = dev;
	return -EOPNOTSUPP;
}

static void kvt_find_remove(struct ib_device *dev, void *client_data)
{
}

static struct ib_client kvt_find_client = {
	.name = "sroce_kverbs_test_find",
	.add = kvt_find_add,
	.remove = kvt_find_remove,
};

static struct ib_device *kvt_device_get_by_name(const char *name)
{
	struct ib_device *dev = NULL;

	mutex_lock(&kvt_find_lock);
	kvt_find_name = name;
	kvt_find_dev = NULL;
	if (!ib_register_client(&kvt_find_client)) {
		ib_unregister_client(&kvt_find_client);
		dev = kvt_find_dev;
	}
	mutex_unlock(&kvt_find_lock);
	return dev;
}

static int kvt_side_open(struct kvt_test *t, struct kvt_side *s, const char *devname,
			 int gid_index)
{
	struct ib_pd *pd;
	int ret;

	s->devname = devname;
	s->dev = kvt_device_get_by_name(devname);
	if (!s->dev) {
		pr_err("FAIL: no RDMA device named '%s'\n", devname);
		return -ENODEV;
	}
	s->port = rdma_start_port(s->dev);
	ret = kvt_check_device(t, s);
	if (!ret)
		ret = kvt_pick_gid(t, s, gid_index);
	if (ret)
		return ret;
	pd = ib_alloc_pd(s->dev, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(pd))
		return kvt_fail(t, "ib_alloc_pd(%s, IB_PD_UNSAFE_GLOBAL_RKEY) failed: %ld",
				devname, PTR_ERR(pd));
	s->pd = pd;
	ret = kvt_chunks_alloc(t, s);
	if (!ret)
		ret = kvt_atom_setup(t, s);
	return ret;
}

static void kvt_side_close(struct kvt_side *s)
{
	kvt_atom_teardown(s);
	if (s->dev)
		kvt_chunks_free(s);
	if (s->pd)
		ib_dealloc_pd(s->pd);
	s->pd = NULL;
	if (s->gattr)
		rdma_put_gid_attr(s->gattr);
	s->gattr = NULL;
	if (s->dev)
		ib_device_put(s->dev);
	s->dev = NULL;
}

struct kvt_resolve {
	struct completion done;
	int status;
};

static void kvt_resolve_cb(int status, struct sockaddr *src, struct rdma_dev_addr *addr,
			   void *ctx)
{
	struct kvt_resolve *r = ctx;

	r->status = status;
	complete(&r->done);
}

/*
 * The destination MAC and hop limit of s's packets to peer's GID, resolved
 * in the namespace of s's GID netdev the way the RDMA core does it for user
 * QPs (rdma_addr_find_l2_eth_by_grh(), which is not exported).
 */
static int kvt_resolve(struct kvt_test *t, struct kvt_side *s, struct kvt_side *peer)
{
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} src, dst;
	struct rdma_dev_addr dev_addr;
	struct kvt_resolve r;
	int ret;

	rdma_gid2ip(&src.sa, &s->gattr->gid);
	rdma_gid2ip(&dst.sa, &peer->gattr->gid);
	memset(&dev_addr, 0, sizeof(dev_addr));
	dev_addr.net = &init_net;
	dev_addr.sgid_attr = s->gattr;
	init_completion(&r.done);
	r.status = 0;
	ret = rdma_resolve_ip(&src.sa, &dst.sa, &dev_addr, KVT_RESOLVE_MS, kvt_resolve_cb,
			      true, &r);
	if (ret)
		return kvt_fail(t, "rdma_resolve_ip(%pI6c -> %pI6c) failed: %d",
				s->gattr->gid.raw, peer->gattr->gid.raw, ret);
	wait_for_completion(&r.done);
	if (r.status)
		return kvt_fail(t, "resolving the MAC address of %pI6c from %s failed: %d",
				peer->gattr->gid.raw, s->devname, r.status);
	memcpy(s->dmac, dev_addr.dst_dev_addr, ETH_ALEN);
	s->hop_limit = dev_addr.hoplimit > 0 && dev_addr.hoplimit < 256 ? dev_addr.hoplimit : 64;
	pr_info("%s: %pI6c is at %pM, hop limit %u\n", s->name, peer->gattr->gid.raw,
		s->dmac, s->hop_limit);
	return 0;
}

/* --- rounds ----------------------------------------------------------------- */

/*
 * What ib_drain_qp() relies on: with receives outstanding, move both QPs to
 * ERR, post a receive and a zero-length RDMA WRITE to each; everything must
 * complete with IB_WC_WR_FLUSH_ERR.
 */
static int kvt_drain(struct kvt_test *t)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct kvt_seg seg[2][2];
	struct ib_sge sge[2][2];
	struct ib_recv_wr rwr[2][3];
	struct ib_rdma_wr swr[2];
	struct kvt_side *s;
	unsigned int i, k;
	int ret;

	kvt_begin(t, "drain: QPs to ERR with work outstanding, then more work");
	kvt_arena_reset(t);
	kvt_chains_reset(t);
	memset(rwr, 0, sizeof(rwr));
	memset(swr, 0, sizeof(swr));
	for (i = 0; i < 2; i++) {
		s = &t->side[i];
		for (k = 0; k < 2; k++) {
			if (kvt_alloc_seg(s, 256, 64, 0, &seg[i][k]))
				return kvt_fail(t, "test bug: no room for drain buffers");
			kvt_poison(&seg[i][k], 1);
			sge[i][k].addr = seg[i][k].dma;
			sge[i][k].length = 256;
			sge[i][k].lkey = s->pd->local_dma_lkey;
			rwr[i][k].sg_list = &sge[i][k];
			rwr[i][k].num_sge = 1;
			kvt_set_recv_id(t, &rwr[i][k], KVT_ID_DRAIN_RECV + k);
			kvt_chain_recv(s, &rwr[i][k]);
			kvt_expect(s->rcq, KVT_ID_DRAIN_RECV + k, s->qp, IB_WC_WR_FLUSH_ERR, 0);
		}
	}
	kvt_sync(t, true);
	for (i = 0; i < 2; i++) {
		ret = kvt_post_recvs(t, &t->side[i], t->side[i].qp);
		if (ret)
			return ret;
	}
	for (i = 0; i < 2; i++) {
		s = &t->side[i];
		ret = ib_modify_qp(s->qp, &attr, IB_QP_STATE);
		if (ret)
			return kvt_fail(t, "ib_modify_qp(%s QP %u, ->ERR) failed: %d",
					s->name, s->qp->qp_num, ret);
	}
	kvt_chains_reset(t);
	for (i = 0; i < 2; i++) {
		s = &t->side[i];
		kvt_set_recv_id(t, &rwr[i][2], KVT_ID_DRAIN_RECV + 2);
		kvt_chain_recv(s, &rwr[i][2]);
		kvt_expect(s->rcq, KVT_ID_DRAIN_RECV + 2, s->qp, IB_WC_WR_FLUSH_ERR, 0);
		swr[i].wr.opcode = IB_WR_RDMA_WRITE;
		swr[i].wr.send_flags = IB_SEND_SIGNALED;
		kvt_set_send_id(t, &swr[i].wr, KVT_ID_DRAIN_SEND);
		kvt_chain_send(s, &swr[i].wr);
		kvt_expect(s->scq, KVT_ID_DRAIN_SEND, s->qp, IB_WC_WR_FLUSH_ERR, 0);
		ret = kvt_post_recvs(t, s, s->qp);
		if (!ret)
			ret = kvt_post_sends(t, s, s->qp);
		if (ret)
			return ret;
	}
	ret = kvt_wait_all(t);
	if (ret)
		return ret;
	kvt_sync(t, false);
	for (i = 0; i < 2; i++) {
		s = &t->side[i];
		snprintf(t->what, sizeof(t->what), "%s: flushed receive buffers", s->name);
		ret = kvt_check(t, t->what, seg[i], 2, 0, 0);
		if (!ret)
			ret = kvt_query_state(t, s->qp, IB_QPS_ERR, "after the flush");
		if (ret)
			return ret;
	}
	return 0;
}

static int kvt_sqd_modify(struct kvt_test *t, struct ib_qp *qp, enum ib_qp_state to)
{
	struct ib_qp_attr attr = { .qp_state = to, .en_sqd_async_notify = 1 };
	int mask = IB_QP_STATE | (to == IB_QPS_SQD ? IB_QP_EN_SQD_ASYNC_NOTIFY : 0);
	int ret;

	if (to == IB_QPS_SQD)
		WRITE_ONCE(t->sqd_open, true);
	ret = ib_modify_qp(qp, &attr, mask);
	if (to != IB_QPS_SQD)
		WRITE_ONCE(t->sqd_open, false);
	if (ret)
		return kvt_fail(t, "ib_modify_qp(QP %u, ->%s) failed: %d", qp->qp_num,
				kvt_qp_state_str(to), ret);
	return 0;
}

/*
 * Side A posts KVT_SQD_WRS signaled RDMA WRITEs of @len bytes to side B and
 * moves its QP to SQD with en_sqd_async_notify at once. SQD lets what has
 * started finish and holds the rest: in_sqd() runs there; then back to
 * RTS, every WRITE completes and its data is checked.
 */
static int kvt_sqd_writes(struct kvt_test *t, u32 len, int (*in_sqd)(struct kvt_test *t))
{
	struct kvt_side *a = &t->side[0], *b = &t->side[1];
	struct kvt_seg src[KVT_SQD_WRS], dst[KVT_SQD_WRS];
	unsigned int k;
	int ret;

	kvt_arena_reset(t);
	kvt_chains_reset(t);
	for (k = 0; k < KVT_SQD_WRS; k++) {
		struct ib_rdma_wr *w = &t->op[k].s.rdma;

		if (kvt_alloc_seg(a, len, 64, 0, &src[k]) ||
		    kvt_alloc_seg(b, len, 64, 0, &dst[k]))
			return kvt_fail(t, "test bug: no room for the SQD buffers");
		kvt_fill(&src[k], 1, t->gen * KVT_SQD_WRS + k);
		kvt_poison(&dst[k], 1);
		memset(w, 0, sizeof(*w));
		t->op[k].sge[0].addr = src[k].dma;
		t->op[k].sge[0].length = len;
		t->op[k].sge[0].lkey = a->pd->local_dma_lkey;
		w->wr.opcode = IB_WR_RDMA_WRITE;
		w->wr.sg_list = &t->op[k].sge[0];
		w->wr.num_sge = 1;
		w->wr.send_flags = IB_SEND_SIGNALED;
		w->remote_addr = dst[k].dma;
		w->rkey = b->pd->unsafe_global_rkey;
		kvt_set_send_id(t, &w->wr, KVT_ID_SQD_WRITE + k);
		kvt_chain_send(a, &w->wr);
		kvt_expect(a->scq, KVT_ID_SQD_WRITE + k, a->qp, IB_WC_SUCCESS,
			   IB_WC_RDMA_WRITE);
	}
	kvt_sync(t, true);
	ret = kvt_post_sends(t, a, a->qp);
	if (!ret)
		ret = kvt_sqd_modify(t, a->qp, IB_QPS_SQD);
	if (!ret)
		ret = in_sqd(t);
	if (!ret)
		ret = kvt_sqd_modify(t, a->qp, IB_QPS_RTS);
	if (!ret)
		ret = kvt_wait_all(t);
	if (ret)
		return ret;
	kvt_sync(t, false);
	for (k = 0; k < KVT_SQD_WRS; k++) {
		snprintf(t->what, sizeof(t->what), "RDMA WRITE %u of %u across SQD", k + 1,
			 KVT_SQD_WRS);
		ret = kvt_check(t, t->what, &dst[k], 1, t->gen * KVT_SQD_WRS + k, len);
		if (ret)
			return ret;
	}
	t->wrs += KVT_SQD_WRS;
	t->bytes += (u64)KVT_SQD_WRS * len;
	return 0;
}

/* In SQD until IB_EVENT_SQ_DRAINED: it comes, exactly once. */
static int kvt_sqd_wait_event(struct kvt_test *t)
{
	if (!wait_event_timeout(t->sqd_wq, atomic_read(&t->sqd_events) > 0,
				msecs_to_jiffies(timeout_ms)))
		return kvt_fail(t, "no IB_EVENT_SQ_DRAINED within %u ms", timeout_ms);
	/* A second one would come at once: the same softirq or modify_qp. */
	msleep(100);
	if (atomic_read(&t->sqd_events) != 1)
		return kvt_fail(t, "%d IB_EVENT_SQ_DRAINED for one entry to SQD",
				atomic_read(&t->sqd_events));
	return 0;
}

/* In SQD for 0-5 ms: the event may come in that time, or not at all. */
static int kvt_sqd_short(struct kvt_test *t)
{
	unsigned int us = kvt_rand(t) % 5000;

	if (us)
		usleep_range(us, us + 100);
	return 0;
}

/*
 * SQD and IB_EVENT_SQ_DRAINED (IBTA 11.6.3): side A's QP is moved to SQD
 * with WRITEs just posted. (1) It waits there: the event comes, exactly
 * once. (2) It stays a few milliseconds, many times: an event the driver
 * decided on in SQD may come before modify_qp(SQD->RTS) returns, never
 * after it (then a new entry to SQD would take it as its own, though what
 * that entry waits for has not drained): no event between that return and
 * the next entry, at most one from an entry to SQD to its return to RTS.
 */
static int kvt_sqd(struct kvt_test *t)
{
	unsigned int i, flips = 4 * iters, before;
	int ret;

	kvt_begin(t, "SQD: the QP waits in SQD for IB_EVENT_SQ_DRAINED");
	atomic_set(&t->sqd_events, 0);
	atomic_set(&t->sqd_late, 0);
	ret = kvt_sqd_writes(t, SZ_64K, kvt_sqd_wait_event);
	if (ret)
		return ret;

	kvt_begin(t, "SQD: %u times to SQD and back to RTS within 5 ms", flips);
	before = atomic_read(&t->sqd_events);
	for (i = 0; i < flips; i++) {
		int n = atomic_read(&t->sqd_events);

		t->gen++;
		/*
		 * Large enough to be in flight at the move to SQD: the
		 * completer, not modify_qp, then finds the queue drained.
		 */
		ret = kvt_sqd_writes(t, i % 2 ? SZ_64K : SZ_16K, kvt_sqd_short);
		if (ret)
			return ret;
		/* A late one that came in this entry's time is one too many. */
		n = atomic_read(&t->sqd_events) - n;
		if (n > 1)
			return kvt_fail(t, "entry %u to SQD: %d IB_EVENT_SQ_DRAINED", i + 1, n);
	}
	/* Whatever is still on its way arrives, late, in this time. */
	msleep(100);
	if (atomic_read(&t->sqd_late))
		return kvt_fail(t,
				"%d of %d IB_EVENT_SQ_DRAINED delivered after modify_qp(SQD->RTS) returned",
				atomic_read(&t->sqd_late), atomic_read(&t->sqd_events) - before);
	pr_info("%s: %d IB_EVENT_SQ_DRAINED for %u entries to SQD, none late\n", t->where,
		atomic_read(&t->sqd_events) - before, flips);
	return kvt_query_state(t, t->side[0].qp, IB_QPS_RTS, "after the last SQD->RTS");
}

/*
 * On a fresh pair: an RDMA WRITE with a bad rkey must fail with
 * IB_WC_REM_ACCESS_ERR, the SEND chained after it must be flushed, the QP
 * must be in ERR, and work posted then must be flushed too.
 */
static int kvt_error_path(struct kvt_test *t)
{
	struct kvt_side *a = &t->side[0], *b = &t->side[1];
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;
	struct kvt_seg src, dst, rbuf;
	int ret;

	kvt_begin(t, "error path: connect a fresh QP pair");
	ret = kvt_pair_create(t, true);
	if (ret)
		return ret;

	kvt_begin(t, "error path: RDMA WRITE with a bad rkey, then a SEND");
	kvt_arena_reset(t);
	if (kvt_alloc_seg(a, 64, 64, 0, &src) || kvt_alloc_seg(b, 64, 64, 0, &dst) ||
	    kvt_alloc_seg(a, 64, 64, 0, &rbuf))
		return kvt_fail(t, "test bug: no room for the error-path buffers");
	kvt_fill(&src, 1, 7);
	kvt_poison(&dst, 1);
	kvt_poison(&rbuf, 1);
	kvt_sync(t, true);
	kvt_chains_reset(t);
	memset(t->xwr, 0, sizeof(t->xwr));
	memset(&t->xsend, 0, sizeof(t->xsend));
	t->xsge[0].addr = src.dma;
	t->xsge[0].length = 64;
	t->xsge[0].lkey = a->pd->local_dma_lkey;
	t->xwr[0].wr.opcode = IB_WR_RDMA_WRITE;
	t->xwr[0].wr.sg_list = &t->xsge[0];
	t->xwr[0].wr.num_sge = 1;
	t->xwr[0].wr.send_flags = IB_SEND_SIGNALED;
	t->xwr[0].remote_addr = dst.dma;
	t->xwr[0].rkey = b->pd->unsafe_global_rkey ^ KVT_BAD_RKEY_XOR;
	kvt_set_send_id(t, &t->xwr[0].wr, KVT_ID_ERR_WRITE);
	kvt_chain_send(a, &t->xwr[0].wr);
	t->xsge[1] = t->xsge[0];
	t->xsge[1].length = 8;
	t->xsend.opcode = IB_WR_SEND;
	t->xsend.sg_list = &t->xsge[1];
	t->xsend.num_sge = 1;
	t->xsend.send_flags = IB_SEND_SIGNALED;
	kvt_set_send_id(t, &t->xsend, KVT_ID_ERR_SEND);
	kvt_chain_send(a, &t->xsend);
	kvt_expect(a->scq, KVT_ID_ERR_WRITE, a->eqp, IB_WC_REM_ACCESS_ERR, IB_WC_RDMA_WRITE);
	kvt_expect(a->scq, KVT_ID_ERR_SEND, a->eqp, IB_WC_WR_FLUSH_ERR, IB_WC_SEND);
	ret = kvt_post_sends(t, a, a->eqp);
	if (!ret)
		ret = kvt_wait_all(t);
	if (ret)
		return ret;
	kvt_sync(t, false);
	ret = kvt_check(t, "target of the bad-rkey RDMA WRITE", &dst, 1, 0, 0);
	if (!ret)
		ret = kvt_query_state(t, a->eqp, IB_QPS_ERR, "after IB_WC_REM_ACCESS_ERR");
	if (ret)
		return ret;

	kvt_begin(t, "error path: a receive and a SEND posted in the error state");
	kvt_chains_reset(t);
	memset(&t->xrecv[0], 0, sizeof(t->xrecv[0]));
	t->xsge[2].addr = rbuf.dma;
	t->xsge[2].length = 64;
	t->xsge[2].lkey = a->pd->local_dma_lkey;
	t->xrecv[0].sg_list = &t->xsge[2];
	t->xrecv[0].num_sge = 1;
	kvt_set_recv_id(t, &t->xrecv[0], KVT_ID_LATE_RECV);
	kvt_chain_recv(a, &t->xrecv[0]);
	kvt_set_send_id(t, &t->xsend, KVT_ID_LATE_SEND);
	kvt_chain_send(a, &t->xsend);
	kvt_expect(a->rcq, KVT_ID_LATE_RECV, a->eqp, IB_WC_WR_FLUSH_ERR, IB_WC_RECV);
	kvt_expect(a->scq, KVT_ID_LATE_SEND, a->eqp, IB_WC_WR_FLUSH_ERR, IB_WC_SEND);
	ret = kvt_post_recvs(t, a, a->eqp);
	if (!ret)
		ret = kvt_post_sends(t, a, a->eqp);
	if (!ret)
		ret = kvt_wait_all(t);
	if (ret)
		return ret;
	kvt_sync(t, false);
	ret = kvt_check(t, "flushed receive buffer", &rbuf, 1, 0, 0);
	if (ret)
		return ret;
	memset(&attr, 0, sizeof(attr));
	if (!ib_query_qp(b->eqp, &attr, IB_QP_STATE, &init))
		pr_info("%s: the responder QP %u of the bad-rkey WRITE is in state %s\n",
			t->where, b->eqp->qp_num, kvt_qp_state_str(attr.qp_state));
	return 0;
}

/*
 * A UC QP carries SENDs and WRITEs only (IBTA: UC has no READ, atomic or
 * SEND with Invalidate opcodes): those are refused when they are posted,
 * with the WR in bad_wr, while a SEND is taken (the QP is in the error
 * state: it completes flushed, on a CQ of its own). rdma_rxe's post path
 * is not ours to judge here: the check runs on sroce devices.
 */
static int kvt_uc_opcodes(struct kvt_test *t, struct kvt_side *s)
{
	static const enum ib_wr_opcode refused[] = {
		IB_WR_RDMA_READ, IB_WR_ATOMIC_FETCH_AND_ADD, IB_WR_SEND_WITH_INV,
	};
	struct ib_qp_init_attr ia = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = IB_QPT_UC,
	};
	struct ib_qp_attr attr = {};
	const struct ib_send_wr *bad;
	struct ib_send_wr wr = {};
	struct ib_wc wc;
	struct ib_cq *cq;
	struct ib_qp *qp;
	unsigned int i;
	int ret, n;

	if (s->dev->ops.driver_id == RDMA_DRIVER_RXE)
		return 0;
	kvt_begin(t, "UC QP of %s: READ, atomics and SEND with Invalidate refused", s->name);
	cq = ib_alloc_cq(s->dev, NULL, 8, 0, IB_POLL_DIRECT);
	if (IS_ERR(cq))
		return kvt_fail(t, "ib_alloc_cq on %s failed: %ld", s->devname, PTR_ERR(cq));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	qp = ib_create_qp(s->pd, &ia);
	if (IS_ERR(qp)) {
		ret = kvt_fail(t, "ib_create_qp(UC) on %s failed: %ld", s->devname, PTR_ERR(qp));
		goto free_cq;
	}
	attr.qp_state = IB_QPS_INIT;
	attr.port_num = s->port;
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
			   IB_QP_ACCESS_FLAGS);
	if (!ret) {
		attr.qp_state = IB_QPS_ERR;
		ret = ib_modify_qp(qp, &attr, IB_QP_STATE);
	}
	if (ret) {
		ret = kvt_fail(t, "UC QP %u: RESET -> INIT -> ERR failed: %d", qp->qp_num, ret);
		goto destroy;
	}
	for (i = 0; i < ARRAY_SIZE(refused); i++) {
		wr.opcode = refused[i];
		wr.wr_id = i;
		bad = NULL;
		ret = ib_post_send(qp, &wr, &bad);
		if (ret != -EINVAL || bad != &wr) {
			ret = kvt_fail(t, "UC QP %u: opcode %d posted with %d (bad_wr %s), want -EINVAL",
				       qp->qp_num, refused[i], ret,
				       bad == &wr ? "the WR" : "not the WR");
			goto destroy;
		}
	}
	wr.opcode = IB_WR_SEND;
	wr.wr_id = 100;
	ret = ib_post_send(qp, &wr, &bad);
	if (ret) {
		ret = kvt_fail(t, "UC QP %u: a SEND posted with %d", qp->qp_num, ret);
		goto destroy;
	}
	for (i = 0, n = 0; i < 1000 && !n; i++) {
		n = ib_poll_cq(cq, 1, &wc);
		if (!n)
			usleep_range(1000, 2000);
	}
	if (n != 1 || wc.wr_id != 100 || wc.status != IB_WC_WR_FLUSH_ERR)
		ret = kvt_fail(t, "UC QP %u: the SEND's completion: %d (wr_id %llu, status %d)",
			       qp->qp_num, n, n == 1 ? wc.wr_id : 0ULL, n == 1 ? wc.status : 0);
	else
		ret = 0;
destroy:
	ib_destroy_qp(qp);
free_cq:
	ib_free_cq(cq);
	return ret;
}

static int kvt_check_events(struct kvt_test *t)
{
	struct kvt_cq *cqs[4] = {
		t->side[0].scq, t->side[0].rcq, t->side[1].scq, t->side[1].rcq,
	};
	unsigned int i, total = 0;

	kvt_begin(t, "completion events");
	for (i = 0; i < ARRAY_SIZE(cqs); i++) {
		total += atomic_read(&cqs[i]->events);
		if (t->mode == KVT_CQ_POLL && atomic_read(&cqs[i]->events))
			return kvt_fail(t, "%d completion events on CQ %s, never armed",
					atomic_read(&cqs[i]->events), cqs[i]->name);
	}
	if (t->mode == KVT_CQ_EVENT && !total)
		return kvt_fail(t, "no completion event on any armed CQ");
	if (t->mode == KVT_CQ_EVENT)
		pr_info("%s: %u completion events\n", t->where, total);
	return 0;
}

static void kvt_round_cleanup(struct kvt_test *t)
{
	unsigned int i;

	for (i = 0; i < 2; i++) {
		kvt_qp_destroy(&t->side[i].eqp);
		kvt_qp_destroy(&t->side[i].qp);
	}
	for (i = 0; i < 2; i++) {
		kvt_cq_destroy(t->side[i].scq);
		kvt_cq_destroy(t->side[i].rcq);
		t->side[i].scq = NULL;
		t->side[i].rcq = NULL;
	}
}

static int kvt_round(struct kvt_test *t, enum kvt_cq_mode mode)
{
	unsigned int i, wrs = t->wrs, steps = t->steps;
	u64 bytes = t->bytes;
	struct kvt_cq *c;
	int ret = 0;

	t->mode = mode;
	t->legacy = mode >= KVT_CQ_POLL;
	t->round++;
	kvt_begin(t, "setup");
	for (i = 0; !ret && i < 4; i++) {
		c = kvt_cq_create(t, &t->side[i / 2], i % 2 ? "recv" : "send");
		if (IS_ERR(c)) {
			ret = PTR_ERR(c);
			break;
		}
		if (i % 2)
			t->side[i / 2].rcq = c;
		else
			t->side[i / 2].scq = c;
	}
	if (!ret)
		ret = kvt_pair_create(t, false);
	for (i = 0; !ret && i < 2; i++)
		if (t->side[i].atom_frmr)
			ret = kvt_atom_register(t, &t->side[i]);
	if (!ret)
		ret = kvt_ladder(t);
	if (!ret)
		ret = kvt_atomics(t);
	if (!ret)
		ret = kvt_mixed(t);
	for (i = 0; !ret && i < iters; i++)
		ret = kvt_random(t, i);
	if (!ret)
		ret = kvt_check_events(t);
	if (!ret && sqd)
		ret = kvt_sqd(t);
	if (!ret)
		ret = kvt_drain(t);
	if (!ret)
		ret = kvt_error_path(t);
	kvt_round_cleanup(t);
	if (!ret)
		pr_info("round %u/%u (%s CQs) passed: %u steps, %u WRs, %llu bytes checked\n",
			t->round, t->nrounds, kvt_mode_name[mode], t->steps - steps,
			t->wrs - wrs, t->bytes - bytes);
	return ret;
}

static int kvt_parse_modes(enum kvt_cq_mode *modes, unsigned int *n)
{
	char *buf, *p, *tok;
	unsigned int m;
	int ret = 0;

	buf = kstrdup(cq_modes ? cq_modes : "", GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	*n = 0;
	p = buf;
	while ((tok = strsep(&p, ",")) && !ret) {
		if (!*tok)
			continue;
		for (m = 0; m < KVT_CQ_NMODES; m++)
			if (!strcmp(tok, kvt_mode_name[m]))
				break;
		if (m == KVT_CQ_NMODES || *n >= KVT_MODES) {
			pr_err("FAIL: cq_modes: '%s' is not one of direct, softirq, workqueue, poll, event (at most %u)\n",
			       tok, KVT_MODES);
			ret = -EINVAL;
			break;
		}
		modes[(*n)++] = m;
	}
	kfree(buf);
	if (!ret && !*n) {
		pr_err("FAIL: cq_modes is empty\n");
		ret = -EINVAL;
	}
	return ret;
}

static int kvt_run(struct kvt_test *t)
{
	enum kvt_cq_mode modes[KVT_MODES];
	struct kvt_side *a = &t->side[0], *b = &t->side[1];
	unsigned int i;
	int ret;

	if (!dev_a || !*dev_a) {
		pr_err("FAIL: dev_a=NAME (the RDMA device to test) is required\n");
		return -EINVAL;
	}
	if (max_size < 1 || max_size > KVT_MAX_MSG) {
		pr_err("FAIL: max_size must be 1..%u\n", KVT_MAX_MSG);
		return -EINVAL;
	}
	if (strcmp(atomic_mr, "auto") && strcmp(atomic_mr, "frmr") && strcmp(atomic_mr, "dma")) {
		pr_err("FAIL: atomic_mr must be auto, frmr or dma\n");
		return -EINVAL;
	}
	ret = kvt_parse_modes(modes, &t->nrounds);
	if (ret)
		return ret;
	if (!seed)
		seed = get_random_u32() | 1;
	t->rng = ((u64)seed << 32) | 0x9e3779b9;
	init_waitqueue_head(&t->sqd_wq);
	for (i = 0; i < ARRAY_SIZE(t->cqe); i++) {
		t->cqe[i].cqe.done = kvt_done;
		t->cqe[i].id = i % KVT_NIDS;
		t->cqe[i].tag = i / KVT_NIDS;
	}
	a->name = "A";
	b->name = "B";
	pr_info("start: dev_a=%s dev_b=%s cq_modes=%s iters=%u max_size=%u atomic_mr=%s seed=%u\n",
		dev_a, dev_b && *dev_b ? dev_b : dev_a, cq_modes, iters, max_size, atomic_mr,
		seed);

	kvt_begin(t, "setup of A");
	ret = kvt_side_open(t, a, dev_a, gid_a);
	if (ret)
		goto out;
	kvt_begin(t, "setup of B");
	ret = kvt_side_open(t, b, dev_b && *dev_b ? dev_b : dev_a, gid_b);
	if (ret)
		goto out;
	t->max_sge = min3((u32)KVT_MAX_SGE, (u32)a->dev->attrs.max_send_sge,
			  (u32)a->dev->attrs.max_recv_sge);
	t->max_sge = min3(t->max_sge, (u32)b->dev->attrs.max_send_sge,
			  (u32)b->dev->attrs.max_recv_sge);
	t->max_sge_rd = min3(t->max_sge, (u32)a->dev->attrs.max_sge_rd,
			     (u32)b->dev->attrs.max_sge_rd);
	t->rd_atom = min3(4, a->dev->attrs.max_qp_rd_atom, a->dev->attrs.max_qp_init_rd_atom);
	t->rd_atom = min3((int)t->rd_atom, b->dev->attrs.max_qp_rd_atom,
			  b->dev->attrs.max_qp_init_rd_atom);
	kvt_begin(t, "address resolution");
	ret = kvt_resolve(t, a, b);
	if (!ret)
		ret = kvt_resolve(t, b, a);
	if (!ret)
		ret = kvt_uc_opcodes(t, a);
	if (!ret && b->dev != a->dev)
		ret = kvt_uc_opcodes(t, b);
	for (i = 0; !ret && i < t->nrounds; i++)
		ret = kvt_round(t, modes[i]);
out:
	kvt_side_close(b);
	kvt_side_close(a);
	if (!ret)
		pr_info("PASS: %u rounds, %u WRs, %llu bytes checked (seed=%u)\n",
			t->nrounds, t->wrs, t->bytes, seed);
	else
		pr_err("FAILED with %d (seed=%u); the FAIL line above names the check\n",
		       ret, seed);
	return ret;
}

static int __init kvt_init(void)
{
	struct kvt_test *t;
	int ret;

	t = kvzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	ret = kvt_run(t);
	kvfree(t);
	return ret;
}

static void __exit kvt_exit(void)
{
}

module_init(kvt_init);
module_exit(kvt_exit);

MODULE_DESCRIPTION("RC test of an RDMA device through the kernel verbs API");
MODULE_AUTHOR("sroce developers");
MODULE_LICENSE("GPL");
