// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * UD end to end through libibverbs, the provider and sroce.ko, on one real
 * sroce device (not a ctest: selftests/ud_pingpong.sh runs it
 * in the QEMU guest). Two UD QPs on the device send to each other through
 * address handles of the GID given, and check what ibv_ud_pingpong does
 * not: the GRH in front of every receive (IPv4: 20 zero bytes and the IPv4
 * header; IPv6: the IPv6 header) with the right addresses, byte_len, the
 * sender's QPN and IBV_WC_GRH in both ibv_poll_cq and the ibv_cq_ex
 * readers, immediates, inline sends, the wr_* API with ibv_wr_set_ud_addr,
 * Q_Key filtering (a wrong Q_Key is dropped, the high bit means "the
 * sender's own"), a message of exactly the MTU, ibv_query_qp of a UD QP,
 * the up-front rejects, and the completion errors: a message over the MTU
 * (IBV_WC_LOC_LEN_ERR) and an AH of another PD.
 *
 * Usage: sroce_e2e_ud DEVICE GID_INDEX...   (each GID index in turn)
 */
#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <infiniband/verbs.h>
#include <vector>

#include "e2e_util.h"

namespace
{

constexpr uint32_t qkey = 0x11223344;
constexpr size_t grh_len = 40;

struct side {
	ibv_cq *scq = nullptr;	  /* sends, classic */
	ibv_cq_ex *rcq = nullptr; /* receives, extended */
	ibv_qp *qp = nullptr;
	ibv_qp_ex *qpx = nullptr;
};

ibv_context *ctx;
ibv_pd *pd;
ibv_mr *mr;
unsigned char *buf;
size_t buf_len;
uint32_t mtu;
union ibv_gid gid;
int gid_index;

/* Fixed regions of buf: per receive slot, and a send area. */
constexpr size_t nslots = 32;
size_t slot_len()
{
	return grh_len + mtu + 64;
}
unsigned char *rslot(int s, uint32_t i)
{
	return buf + (static_cast<size_t>(s) * nslots + i) * slot_len();
}
unsigned char *sarea()
{
	return buf + 2 * nslots * slot_len();
}

void to_rts(ibv_qp *qp)
{
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qkey = qkey;
	REQUIRE(ibv_modify_qp(qp, &a,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_QKEY) == 0);
	a = {};
	a.qp_state = IBV_QPS_RTR;
	REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0);
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x123;
	REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0);
}

side make_side(bool ex)
{
	side s;
	s.scq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
	ibv_cq_init_attr_ex cx{};
	cx.cqe = 64;
	cx.wc_flags = IBV_WC_STANDARD_FLAGS;
	s.rcq = ibv_create_cq_ex(ctx, &cx);
	REQUIRE(s.scq && s.rcq);

	ibv_qp_init_attr_ex a{};
	a.qp_type = IBV_QPT_UD;
	a.send_cq = s.scq;
	a.recv_cq = ibv_cq_ex_to_cq(s.rcq);
	a.cap.max_send_wr = 32;
	a.cap.max_recv_wr = nslots;
	a.cap.max_send_sge = 2;
	a.cap.max_recv_sge = 2;
	a.cap.max_inline_data = 64;
	a.pd = pd;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	if (ex) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags =
			IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
		s.qp = ibv_create_qp_ex(ctx, &a);
		REQUIRE(s.qp);
		s.qpx = ibv_qp_to_qp_ex(s.qp);
		REQUIRE(s.qpx);
	} else {
		ibv_qp_init_attr ia{};
		ia.qp_type = IBV_QPT_UD;
		ia.send_cq = a.send_cq;
		ia.recv_cq = a.recv_cq;
		ia.cap = a.cap;
		s.qp = ibv_create_qp(pd, &ia);
		REQUIRE(s.qp);
		CHECK(ia.cap.max_inline_data >= 64);
	}
	to_rts(s.qp);
	return s;
}

void destroy_side(side &s)
{
	CHECK(ibv_destroy_qp(s.qp) == 0);
	CHECK(ibv_destroy_cq(s.scq) == 0);
	CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(s.rcq)) == 0);
}

void post_recvs(int s, const side &sd, uint32_t first, uint32_t n)
{
	for (uint32_t i = first; i < first + n; i++) {
		memset(rslot(s, i), 0xee, slot_len());
		/* Two SGEs: the GRH lands in the first, the payload after. */
		ibv_sge sg[2] = {
			{reinterpret_cast<uintptr_t>(rslot(s, i)), grh_len,
			 mr->lkey},
			{reinterpret_cast<uintptr_t>(rslot(s, i)) + grh_len,
			 mtu + 64, mr->lkey},
		};
		ibv_recv_wr wr{};
		wr.wr_id = 1000 + i;
		wr.sg_list = sg;
		wr.num_sge = 2;
		ibv_recv_wr *bad = nullptr;
		REQUIRE(ibv_post_recv(sd.qp, &wr, &bad) == 0);
	}
}

long now_ms()
{
	timespec ts{};
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Completions come from a kernel thread: give TCG guests time. */
constexpr long wait_ms = 20000;
/* How long a datagram that should not arrive is waited for. */
constexpr long absent_ms = 500;

int poll_one(ibv_cq *cq, ibv_wc &wc, long ms = wait_ms)
{
	for (const long end = now_ms() + ms; now_ms() < end;) {
		const int r = ibv_poll_cq(cq, 1, &wc);
		if (r)
			return r;
	}
	return 0;
}

/* The next receive through the ibv_cq_ex readers, as a plain ibv_wc. */
bool poll_recv(ibv_cq_ex *cq, ibv_wc &wc, long ms = wait_ms)
{
	ibv_poll_cq_attr pa{};
	for (const long end = now_ms() + ms; now_ms() < end;) {
		const int r = ibv_start_poll(cq, &pa);
		if (r == ENOENT)
			continue;
		REQUIRE(r == 0);
		wc = {};
		wc.wr_id = cq->wr_id;
		wc.status = cq->status;
		wc.opcode = ibv_wc_read_opcode(cq);
		wc.byte_len = ibv_wc_read_byte_len(cq);
		wc.imm_data = ibv_wc_read_imm_data(cq);
		wc.qp_num = ibv_wc_read_qp_num(cq);
		wc.src_qp = ibv_wc_read_src_qp(cq);
		wc.wc_flags = ibv_wc_read_wc_flags(cq);
		wc.slid = static_cast<uint16_t>(ibv_wc_read_slid(cq));
		wc.sl = ibv_wc_read_sl(cq);
		wc.dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
		ibv_end_poll(cq);
		return true;
	}
	return false;
}

void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = static_cast<unsigned char>(seed + i * 13);
}

/* The GRH the kernel wrote in front of a receive from our own GID. */
void check_grh(const unsigned char *g, uint32_t payload)
{
	const bool v4 = IN6_IS_ADDR_V4MAPPED(
		reinterpret_cast<const in6_addr *>(gid.raw));
	if (v4) {
		static const unsigned char zero[20] = {};
		CHECK(memcmp(g, zero, 20) == 0);
		const unsigned char *ip = g + 20;
		CHECK(ip[0] == 0x45);
		CHECK(ip[9] == 17); /* UDP */
		const unsigned tot = (ip[2] << 8) | ip[3];
		/* IP + UDP + BTH + DETH (+ ImmDt) + payload + pad + ICRC */
		CHECK(tot >= 20 + 8 + 12 + 8 + payload + 4);
		CHECK(memcmp(ip + 12, gid.raw + 12, 4) == 0); /* source */
		CHECK(memcmp(ip + 16, gid.raw + 12, 4) == 0); /* dest */
	} else {
		CHECK((g[0] >> 4) == 6);
		CHECK(g[6] == 17); /* next header: UDP */
		CHECK(memcmp(g + 8, gid.raw, 16) == 0);
		CHECK(memcmp(g + 24, gid.raw, 16) == 0);
	}
}

/* One receive at side s (slot i): a datagram of len bytes from src. */
void expect_recv(int s, const side &dst, const side &src, uint32_t i,
		 uint32_t len, const unsigned char *data, bool imm,
		 uint32_t immv)
{
	ibv_wc wc{};
	REQUIRE(poll_recv(dst.rcq, wc));
	CHECK(wc.status == IBV_WC_SUCCESS);
	CHECK(wc.wr_id == 1000 + i);
	CHECK(wc.opcode == IBV_WC_RECV);
	CHECK(wc.byte_len == grh_len + len);
	CHECK(wc.qp_num == dst.qp->qp_num);
	CHECK(wc.src_qp == src.qp->qp_num);
	CHECK(wc.wc_flags & IBV_WC_GRH);
	CHECK(!!(wc.wc_flags & IBV_WC_WITH_IMM) == imm);
	if (imm)
		CHECK(ntohl(wc.imm_data) == immv);
	/* sl: what the packet was, as ConnectX reports it for RoCE: RoCEv2
	 * (0x8), IPv4 (2) or IPv6 (1). No LIDs on RoCE. */
	const bool v4 = IN6_IS_ADDR_V4MAPPED(
		reinterpret_cast<const in6_addr *>(gid.raw));
	CHECK(wc.sl == (v4 ? 0xa : 0x9));
	CHECK(wc.slid == 0 && wc.dlid_path_bits == 0);
	check_grh(rslot(s, i), len);
	CHECK(memcmp(rslot(s, i) + grh_len, data, len) == 0);
	/* Nothing written past the datagram. */
	CHECK(rslot(s, i)[grh_len + len] == 0xee);
}

void expect_send_ok(const side &s, uint64_t wr_id)
{
	ibv_wc wc{};
	REQUIRE(poll_one(s.scq, wc) == 1);
	CHECK(wc.status == IBV_WC_SUCCESS);
	CHECK(wc.wr_id == wr_id);
	CHECK(wc.opcode == IBV_WC_SEND);
}

/*
 * Nothing delivered within a while (a dropped datagram). A QP in the
 * error state flushes its receives: those do not count.
 */
void expect_no_recv(const side &s)
{
	ibv_wc wc{};
	for (const long end = now_ms() + absent_ms; now_ms() < end;)
		if (poll_recv(s.rcq, wc, 10))
			CHECK(wc.status != IBV_WC_SUCCESS);
}

int send(const side &s, ibv_ah *ah, uint32_t dqpn, uint32_t dqkey,
	 ibv_wr_opcode op, uint64_t wr_id, const unsigned char *data,
	 uint32_t len, unsigned flags = IBV_SEND_SIGNALED, uint32_t immv = 0)
{
	ibv_sge sg{reinterpret_cast<uintptr_t>(data), len, mr->lkey};
	ibv_send_wr wr{};
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.imm_data = htonl(immv);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = dqpn;
	wr.wr.ud.remote_qkey = dqkey;
	ibv_send_wr *bad = nullptr;
	const int ret = ibv_post_send(s.qp, &wr, &bad);
	if (ret)
		CHECK(bad == &wr);
	return ret;
}

void run(int gidx)
{
	gid_index = gidx;
	REQUIRE(ibv_query_gid(ctx, 1, gidx, &gid) == 0);
	char text[INET6_ADDRSTRLEN] = {};
	inet_ntop(AF_INET6, gid.raw, text, sizeof(text));
	printf("# UD over GID %d (%s), MTU %u\n", gidx, text, mtu);

	/* RoCE AHs need a GRH. */
	ibv_ah_attr aa{};
	aa.port_num = 1;
	aa.dlid = 1;
	errno = 0;
	CHECK(!ibv_create_ah(pd, &aa) && errno == EINVAL);

	aa.is_global = 1;
	aa.grh.dgid = gid;
	aa.grh.sgid_index = static_cast<uint8_t>(gidx);
	aa.grh.hop_limit = 64;
	ibv_ah *ah = ibv_create_ah(pd, &aa);
	REQUIRE(ah);
	CHECK(ah->pd == pd && ah->context == ctx);

	side A = make_side(false), B = make_side(true);
	post_recvs(0, A, 0, nslots);
	post_recvs(1, B, 0, nslots);

	/* A UD QP queries like any other. */
	ibv_qp_attr qa{};
	ibv_qp_init_attr qi{};
	CHECK(ibv_query_qp(B.qp, &qa, IBV_QP_STATE | IBV_QP_QKEY | IBV_QP_CAP,
			   &qi) == 0);
	CHECK(qa.qp_state == IBV_QPS_RTS);
	CHECK(qa.qkey == qkey);
	CHECK(qi.qp_type == IBV_QPT_UD);
	CHECK(qa.cap.max_inline_data >= 64);

	unsigned char *d = sarea();
	uint32_t ra = 0, rb = 0; /* next receive slot of A and B */

	/* SEND from the MR, SEND_WITH_IMM inline, a 0-byte and an MTU SEND. */
	fill(d, mtu + 1, 1);
	CHECK(send(A, ah, B.qp->qp_num, qkey, IBV_WR_SEND, 1, d, 100) == 0);
	expect_send_ok(A, 1);
	expect_recv(1, B, A, rb++, 100, d, false, 0);

	CHECK(send(A, ah, B.qp->qp_num, qkey, IBV_WR_SEND_WITH_IMM, 2, d + 7,
		   33, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0xabcd0123) == 0);
	expect_send_ok(A, 2);
	expect_recv(1, B, A, rb++, 33, d + 7, true, 0xabcd0123);

	CHECK(send(A, ah, B.qp->qp_num, qkey, IBV_WR_SEND, 3, d, 0) == 0);
	expect_send_ok(A, 3);
	expect_recv(1, B, A, rb++, 0, d, false, 0);

	CHECK(send(A, ah, B.qp->qp_num, qkey, IBV_WR_SEND, 4, d, mtu) == 0);
	expect_send_ok(A, 4);
	expect_recv(1, B, A, rb++, mtu, d, false, 0);

	/* B -> A through the wr_* API, SGE and inline. */
	ibv_wr_start(B.qpx);
	B.qpx->wr_id = 5;
	B.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(B.qpx);
	ibv_wr_set_ud_addr(B.qpx, ah, A.qp->qp_num, qkey);
	ibv_wr_set_sge(B.qpx, mr->lkey, reinterpret_cast<uintptr_t>(d + 3),
		       500);
	B.qpx->wr_id = 6;
	ibv_wr_send_imm(B.qpx, htonl(77));
	ibv_wr_set_inline_data(B.qpx, d + 9, 64);
	ibv_wr_set_ud_addr(B.qpx, ah, A.qp->qp_num, qkey);
	CHECK(ibv_wr_complete(B.qpx) == 0);
	expect_send_ok(B, 5);
	expect_send_ok(B, 6);
	expect_recv(0, A, B, ra++, 500, d + 3, false, 0);
	expect_recv(0, A, B, ra++, 64, d + 9, true, 77);

	/* One completion per signaled send, no more. */
	{
		ibv_wc wc{};
		CHECK(poll_one(A.scq, wc, absent_ms) == 0);
		CHECK(poll_one(B.scq, wc, absent_ms) == 0);
	}

	/* A wrong Q_Key is dropped; the receive WQE stays for the next. */
	CHECK(send(A, ah, B.qp->qp_num, qkey + 1, IBV_WR_SEND, 7, d, 10) == 0);
	expect_send_ok(A, 7);
	expect_no_recv(B);
	/* High bit set: the sender's own Q_Key (the same here). */
	CHECK(send(A, ah, B.qp->qp_num, 0x80000000U, IBV_WR_SEND, 8, d + 1,
		   10) == 0);
	expect_send_ok(A, 8);
	expect_recv(1, B, A, rb++, 10, d + 1, false, 0);

	/* A datagram to a QPN that does not exist just vanishes. */
	CHECK(send(A, ah, 0xfffff0, qkey, IBV_WR_SEND, 9, d, 10) == 0);
	expect_send_ok(A, 9);

	/* Refused at post time: no WQE, *bad_wr set. */
	errno = 0;
	CHECK(send(A, ah, B.qp->qp_num, qkey, IBV_WR_RDMA_WRITE, 10, d, 8) ==
	      EINVAL);
	CHECK(send(A, nullptr, B.qp->qp_num, qkey, IBV_WR_SEND, 11, d, 8) ==
	      EINVAL);
	CHECK(send(A, ah, B.qp->qp_num, qkey, IBV_WR_SEND, 12, d, 65,
		   IBV_SEND_INLINE) == EINVAL);
	{
		ibv_wc wc{};
		CHECK(poll_one(A.scq, wc, absent_ms) == 0);
	}

	/* Over the MTU: IBV_WC_LOC_LEN_ERR (and the QP goes to error). */
	CHECK(send(A, ah, B.qp->qp_num, qkey, IBV_WR_SEND, 13, d, mtu + 1) ==
	      0);
	{
		ibv_wc wc{};
		REQUIRE(poll_one(A.scq, wc) == 1);
		CHECK(wc.wr_id == 13);
		CHECK(wc.status == IBV_WC_LOC_LEN_ERR);
	}
	expect_no_recv(B);

	/* An AH of another PD: a completion error at B, nothing sent. */
	ibv_pd *pd2 = ibv_alloc_pd(ctx);
	REQUIRE(pd2);
	ibv_ah *ah2 = ibv_create_ah(pd2, &aa);
	REQUIRE(ah2);
	CHECK(send(B, ah2, A.qp->qp_num, qkey, IBV_WR_SEND, 14, d, 8) == 0);
	{
		ibv_wc wc{};
		REQUIRE(poll_one(B.scq, wc) == 1);
		CHECK(wc.wr_id == 14);
		CHECK(wc.status != IBV_WC_SUCCESS);
		printf("# AH of another PD: %s\n",
		       ibv_wc_status_str(wc.status));
	}
	expect_no_recv(A);
	CHECK(ibv_destroy_ah(ah2) == 0);
	CHECK(ibv_dealloc_pd(pd2) == 0);

	destroy_side(A);
	destroy_side(B);
	CHECK(ibv_destroy_ah(ah) == 0);
}

} // namespace

int main(int argc, char **argv)
{
	ibv_device **list = nullptr;
	ctx = e2e_open_device_of_args(argc, argv, &list);
	ibv_port_attr pa{};
	REQUIRE(ibv_query_port(ctx, 1, &pa) == 0);
	mtu = 128U << pa.active_mtu;
	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd);
	buf_len = (2 * nslots + 1) * slot_len();
	std::vector<unsigned char> mem(buf_len);
	buf = mem.data();
	const int acc = IBV_ACCESS_LOCAL_WRITE; /* an int: see ibv_reg_mr */
	mr = ibv_reg_mr(pd, buf, buf_len, acc);
	REQUIRE(mr);

	for (int i = 2; i < argc; i++)
		run(atoi(argv[i]));

	CHECK(ibv_dereg_mr(mr) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	ibv_free_device_list(list);
	if (fails) {
		fprintf(stderr, "%d check(s) failed\n", fails);
		return 1;
	}
	printf("sroce_e2e_ud: all checks passed\n");
	return 0;
}
