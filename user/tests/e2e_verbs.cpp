// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * End to end through libibverbs, the provider and sroce.ko: needs a real
 * sroce device, so it is not a ctest; selftests/rc_integrity.sh runs it in
 * the QEMU guest and reports each part (one TAP line each) as a sub-case.
 * Two RC QPs on one device talk to each other over one of the device's
 * GIDs and exercise every verb the provider implements:
 * ibv_cq_ex polling, the wr_* builder, post_send/post_recv with SGEs and
 * inline data, RDMA write/read, atomics, immediates, completion events,
 * resize_cq with completions pending, the up-front rejects, and a volume
 * run checked byte for byte.
 *
 * Usage: sroce_e2e [DEVICE [GID_INDEX]] (default sroce0, GID 1)
 */
#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <infiniband/verbs.h>
#include <poll.h>
#include <unistd.h>
#include <vector>

#include "e2e_util.h"

static ibv_context *ctx;
static ibv_pd *pd;
static union ibv_gid gid;
static int gid_index = 1;

/*
 * One TAP line per part ("ok - NAME" or "not ok - NAME"), judged by the
 * CHECKs since the previous one: the selftest reports each as a sub-case.
 */
static int part_start;
static void report(const char *name)
{
	printf("%s - %s\n", fails == part_start ? "ok" : "not ok", name);
	fflush(stdout);
	part_start = fails;
}

static void connect_qp(ibv_qp *q, uint32_t remote)
{
	e2e_connect_qp(q, remote, gid, gid_index,
		       {IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				IBV_ACCESS_REMOTE_ATOMIC |
				IBV_ACCESS_LOCAL_WRITE,
			100, 4});
}

/* Poll a classic CQ until n completions arrived (or time out). */
static int poll_n(ibv_cq *cq, ibv_wc *wc, int n)
{
	int got = 0;
	for (long spin = 0; got < n && spin < 200000000L; spin++) {
		int r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			return r;
		got += r;
	}
	return got;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "sroce0";
	if (argc > 2)
		gid_index = atoi(argv[2]);
	ibv_device **list = nullptr;
	ctx = e2e_open_device(name, &list);
	REQUIRE(ibv_query_gid(ctx, 1, gid_index, &gid) == 0);
	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd);

	const size_t len = 1 << 20;
	/* 8-byte aligned, as the atomics need. */
	std::vector<uint64_t> amem(len / 8), bmem(len / 8);
	auto *abuf = reinterpret_cast<unsigned char *>(amem.data());
	auto *bbuf = reinterpret_cast<unsigned char *>(bmem.data());
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	ibv_mr *amr = ibv_reg_mr(pd, abuf, len, acc);
	ibv_mr *bmr = ibv_reg_mr(pd, bbuf, len, acc);
	REQUIRE(amr && bmr);

	/* Unsupported wc_flags are refused. */
	ibv_cq_init_attr_ex cx{};
	cx.cqe = 64;
	cx.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	errno = 0;
	CHECK(!ibv_create_cq_ex(ctx, &cx) && errno == EOPNOTSUPP);

	cx.wc_flags = IBV_WC_STANDARD_FLAGS;
	ibv_cq_ex *xcq = ibv_create_cq_ex(ctx, &cx);
	REQUIRE(xcq);
	ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	REQUIRE(ch);
	ibv_cq *pcq = ibv_create_cq(ctx, 16, nullptr, ch, 0);
	REQUIRE(pcq);
	ibv_cq *scq = ibv_create_cq(ctx, 256, nullptr, nullptr, 0);
	REQUIRE(scq);

	ibv_qp_init_attr_ex qa{};
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = scq;
	qa.recv_cq = pcq;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = 4;
	qa.cap.max_recv_sge = 4;
	qa.cap.max_inline_data = 64;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.pd = pd;
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			    IBV_QP_EX_WITH_RDMA_WRITE |
			    IBV_QP_EX_WITH_RDMA_READ |
			    IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	ibv_qp *a = ibv_create_qp_ex(ctx, &qa);
	REQUIRE(a);
	printf("# A caps: wr %u/%u sge %u/%u inline %u\n", qa.cap.max_send_wr,
	       qa.cap.max_recv_wr, qa.cap.max_send_sge, qa.cap.max_recv_sge,
	       qa.cap.max_inline_data);
	const uint32_t a_send_wr = qa.cap.max_send_wr;
	qa.recv_cq = ibv_cq_ex_to_cq(xcq);
	ibv_qp *b = ibv_create_qp_ex(ctx, &qa);
	REQUIRE(b);
	ibv_qp_ex *ax = ibv_qp_to_qp_ex(a);
	REQUIRE(ax);

	/*
	 * Unsupported send ops are refused: TSO (UD and raw packet QPs only).
	 * (This used to be BIND_MW, until the provider gained memory windows.)
	 */
	qa.send_ops_flags |= IBV_QP_EX_WITH_TSO;
	errno = 0;
	ibv_qp *no = ibv_create_qp_ex(ctx, &qa);
	CHECK(!no && errno == EOPNOTSUPP);
	if (no)
		ibv_destroy_qp(no);
	qa.send_ops_flags &= ~static_cast<uint64_t>(IBV_QP_EX_WITH_TSO);

	connect_qp(a, b->qp_num);
	connect_qp(b, a->qp_num);
	{
		ibv_qp_attr at{};
		ibv_qp_init_attr ia{};
		CHECK(ibv_query_qp(a, &at, IBV_QP_STATE | IBV_QP_CAP, &ia) ==
		      0);
		CHECK(at.qp_state == IBV_QPS_RTS);
	}
	report("unsupported wc_flags and send ops refused, QPs to RTS");

	ibv_wc wc[64];

	/* 1. wr_* send with imm, inline; polled on B through ibv_cq_ex. */
	{
		ibv_sge rs{reinterpret_cast<uintptr_t>(bbuf), 4096, bmr->lkey};
		ibv_recv_wr rw{}, *bad = nullptr;
		rw.wr_id = 0xb1;
		rw.sg_list = &rs;
		rw.num_sge = 1;
		CHECK(ibv_post_recv(b, &rw, &bad) == 0);

		char msg[] = "hello, sroce";
		ibv_wr_start(ax);
		ax->wr_id = 0xa1;
		ax->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send_imm(ax, htonl(0x12345678));
		ibv_wr_set_inline_data(ax, msg, sizeof(msg));
		CHECK(ibv_wr_complete(ax) == 0);

		CHECK(poll_n(scq, wc, 1) == 1 &&
		      wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 0xa1 &&
		      wc[0].opcode == IBV_WC_SEND);

		ibv_poll_cq_attr pa{};
		int r = 0;
		long spin = 0;
		while ((r = ibv_start_poll(xcq, &pa)) == ENOENT &&
		       spin++ < 100000000L)
			;
		CHECK(r == 0);
		if (r == 0) {
			CHECK(xcq->wr_id == 0xb1 &&
			      xcq->status == IBV_WC_SUCCESS);
			CHECK(ibv_wc_read_opcode(xcq) == IBV_WC_RECV);
			CHECK(ibv_wc_read_byte_len(xcq) == sizeof(msg));
			CHECK(ibv_wc_read_wc_flags(xcq) & IBV_WC_WITH_IMM);
			CHECK(ntohl(ibv_wc_read_imm_data(xcq)) == 0x12345678);
			CHECK(ibv_wc_read_qp_num(xcq) == b->qp_num);
			CHECK(ibv_wc_read_src_qp(xcq) == a->qp_num);
			CHECK(ibv_next_poll(xcq) == ENOENT);
			ibv_end_poll(xcq);
		}
		CHECK(!memcmp(bbuf, msg, sizeof(msg)));
		report("SEND_WITH_IMM, inline, through ibv_wr_*; received "
		       "through ibv_cq_ex");
	}

	/* 2. RDMA write with 3 SGEs (post_send), then read it back. */
	{
		for (size_t i = 0; i < 12288; i++)
			abuf[i] = static_cast<unsigned char>(i * 13 + 1);
		ibv_sge sg[3] = {
			{reinterpret_cast<uintptr_t>(abuf), 1000, amr->lkey},
			{reinterpret_cast<uintptr_t>(abuf + 1000), 5000,
			 amr->lkey},
			{reinterpret_cast<uintptr_t>(abuf + 6000), 6288,
			 amr->lkey},
		};
		ibv_send_wr w{}, *bad = nullptr;
		w.wr_id = 2;
		w.opcode = IBV_WR_RDMA_WRITE;
		w.send_flags = IBV_SEND_SIGNALED;
		w.sg_list = sg;
		w.num_sge = 3;
		w.wr.rdma.remote_addr =
			reinterpret_cast<uintptr_t>(bbuf + 65536);
		w.wr.rdma.rkey = bmr->rkey;
		CHECK(ibv_post_send(a, &w, &bad) == 0);
		CHECK(poll_n(scq, wc, 1) == 1 &&
		      wc[0].status == IBV_WC_SUCCESS &&
		      wc[0].opcode == IBV_WC_RDMA_WRITE);
		CHECK(!memcmp(bbuf + 65536, abuf, 12288));

		ibv_sge rsg{reinterpret_cast<uintptr_t>(abuf + 131072), 12288,
			    amr->lkey};
		w.wr_id = 3;
		w.opcode = IBV_WR_RDMA_READ;
		w.sg_list = &rsg;
		w.num_sge = 1;
		CHECK(ibv_post_send(a, &w, &bad) == 0);
		CHECK(poll_n(scq, wc, 1) == 1 &&
		      wc[0].status == IBV_WC_SUCCESS &&
		      wc[0].opcode == IBV_WC_RDMA_READ &&
		      wc[0].byte_len == 12288);
		CHECK(!memcmp(abuf + 131072, abuf, 12288));
		report("RDMA WRITE from 3 SGEs, READ back");
	}

	/* 3. Atomics through wr_*. */
	{
		auto *target = bmem.data() + 1024;
		*target = 40;
		auto *orig = amem.data() + 4096;
		ibv_wr_start(ax);
		ax->wr_id = 4;
		ax->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_fetch_add(ax, bmr->rkey,
					reinterpret_cast<uintptr_t>(target), 2);
		ibv_wr_set_sge(ax, amr->lkey, reinterpret_cast<uintptr_t>(orig),
			       8);
		ax->wr_id = 5;
		ibv_wr_atomic_cmp_swp(ax, bmr->rkey,
				      reinterpret_cast<uintptr_t>(target), 42,
				      7);
		ibv_wr_set_sge(ax, amr->lkey,
			       reinterpret_cast<uintptr_t>(orig + 1), 8);
		CHECK(ibv_wr_complete(ax) == 0);
		CHECK(poll_n(scq, wc, 2) == 2 &&
		      wc[0].status == IBV_WC_SUCCESS &&
		      wc[1].status == IBV_WC_SUCCESS && wc[0].wr_id == 4 &&
		      wc[1].wr_id == 5 && wc[0].opcode == IBV_WC_FETCH_ADD &&
		      wc[1].opcode == IBV_WC_COMP_SWAP);
		CHECK(orig[0] == 40 && orig[1] == 42 && *target == 7);
		printf("# atomics: orig %" PRIu64 " %" PRIu64 " target %" PRIu64
		       "\n",
		       orig[0], orig[1], *target);
		report("FETCH_ADD and CMP_SWAP through ibv_wr_*");
	}

	/* 4. req_notify_cq + event channel; write_with_imm consumes a recv. */
	{
		ibv_sge rs{reinterpret_cast<uintptr_t>(abuf + 200000), 64,
			   amr->lkey};
		ibv_recv_wr rw{}, *rbad = nullptr;
		rw.wr_id = 0xa4;
		rw.sg_list = &rs;
		rw.num_sge = 1;
		CHECK(ibv_post_recv(a, &rw, &rbad) == 0);
		CHECK(ibv_req_notify_cq(pcq, 0) == 0);

		ibv_sge sg{reinterpret_cast<uintptr_t>(bbuf), 16, bmr->lkey};
		ibv_send_wr w{}, *bad = nullptr;
		w.wr_id = 6;
		w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		w.send_flags = IBV_SEND_SIGNALED;
		w.imm_data = htonl(0xfeed);
		w.sg_list = &sg;
		w.num_sge = 1;
		w.wr.rdma.remote_addr =
			reinterpret_cast<uintptr_t>(abuf + 300000);
		w.wr.rdma.rkey = amr->rkey;
		ibv_cq *ibcq = b->send_cq;
		CHECK(ibv_post_send(b, &w, &bad) == 0);
		CHECK(poll_n(ibcq, wc, 1) == 1 &&
		      wc[0].status == IBV_WC_SUCCESS);

		pollfd pfd{ch->fd, POLLIN, 0};
		CHECK(poll(&pfd, 1, 5000) == 1);
		ibv_cq *ev_cq = nullptr;
		void *ev_ctx = nullptr;
		CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 &&
		      ev_cq == pcq);
		ibv_ack_cq_events(pcq, 1);
		CHECK(poll_n(pcq, wc, 1) == 1 && wc[0].wr_id == 0xa4 &&
		      wc[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
		      ntohl(wc[0].imm_data) == 0xfeed && wc[0].byte_len == 16 &&
		      (wc[0].wc_flags & IBV_WC_WITH_IMM));
		CHECK(!memcmp(abuf + 300000, bbuf, 16));
		report("WRITE_WITH_IMM consumes a receive; CQ event through a "
		       "channel");
	}

	/* 5. resize_cq with completions pending. */
	{
		ibv_sge rs{reinterpret_cast<uintptr_t>(abuf + 400000), 64,
			   amr->lkey};
		ibv_recv_wr rw[10]{}, *rbad = nullptr;
		for (int i = 0; i < 10; i++) {
			rw[i].wr_id = 500 + i;
			rw[i].sg_list = &rs;
			rw[i].num_sge = 1;
			rw[i].next = i < 9 ? &rw[i + 1] : nullptr;
		}
		CHECK(ibv_post_recv(a, rw, &rbad) == 0);
		ibv_send_wr w[10]{}, *bad = nullptr;
		for (int i = 0; i < 10; i++) {
			w[i].wr_id = 600 + i;
			w[i].opcode = IBV_WR_SEND;
			w[i].send_flags = i == 9 ? IBV_SEND_SIGNALED : 0;
			w[i].next = i < 9 ? &w[i + 1] : nullptr;
		}
		CHECK(ibv_post_send(b, w, &bad) == 0);
		CHECK(poll_n(b->send_cq, wc, 1) == 1 && wc[0].wr_id == 609);
		/* Wait until all 10 recv completions sit in pcq, unpolled. */
		usleep(300000);
		const int old = pcq->cqe;
		CHECK(ibv_resize_cq(pcq, 4) !=
		      0); /* too small for 10 pending */
		CHECK(ibv_resize_cq(pcq, 200) == 0);
		printf("# resize: cqe %d -> %d\n", old, pcq->cqe);
		CHECK(pcq->cqe >= 200);
		int got = poll_n(pcq, wc, 10);
		CHECK(got == 10);
		for (int i = 0; i < got; i++)
			CHECK(wc[i].wr_id == static_cast<uint64_t>(500 + i) &&
			      wc[i].status == IBV_WC_SUCCESS &&
			      wc[i].byte_len == 0);
		CHECK(ibv_poll_cq(pcq, 1, wc) == 0);
		report("ibv_resize_cq with completions queued");
	}

	/* 6. Rejects: too many SGEs, inline too big, bad opcode. */
	{
		ibv_sge sg[8]{};
		ibv_send_wr w{}, *bad = nullptr;
		w.opcode = IBV_WR_SEND;
		w.sg_list = sg;
		w.num_sge = 8;
		CHECK(ibv_post_send(a, &w, &bad) == EINVAL && bad == &w);
		static char big[4096];
		ibv_sge bs{reinterpret_cast<uintptr_t>(big), 4096, 0};
		w.sg_list = &bs;
		w.num_sge = 1;
		w.send_flags = IBV_SEND_INLINE;
		CHECK(ibv_post_send(a, &w, &bad) == EINVAL && bad == &w);
		w.send_flags = 0;
		w.opcode = IBV_WR_BIND_MW;
		CHECK(ibv_post_send(a, &w, &bad) == EINVAL && bad == &w);
		report("ibv_post_send refuses too many SGEs, oversized inline, "
		       "BIND_MW");
	}

	/* 7. Volume: 20000 sends with data, batched, checked in order. */
	{
		const int total = 20000;
		const ptrdiff_t msz = 48;
		int posted = 0, recvd = 0, sent = 0, errs = 0;
		int rposted = 0;
		while (recvd < total) {
			/* keep B's RQ full */
			while (rposted - recvd < 32 && rposted < total) {
				ibv_sge rs{reinterpret_cast<uintptr_t>(
						   bbuf + 500000 +
						   (rposted % 64) * msz),
					   static_cast<uint32_t>(msz),
					   bmr->lkey};
				ibv_recv_wr rw{}, *rbad = nullptr;
				rw.wr_id = rposted;
				rw.sg_list = &rs;
				rw.num_sge = 1;
				if (ibv_post_recv(b, &rw, &rbad))
					break;
				rposted++;
			}
			/* send up to what B can take, batches of 4, via both APIs */
			while (posted < rposted &&
			       posted - sent <
				       static_cast<int>(a_send_wr) - 4) {
				int n = std::min(4, rposted - posted);
				ibv_sge sg[4];
				ibv_send_wr w[4]{}, *bad = nullptr;
				for (int i = 0; i < n; i++) {
					unsigned char *p =
						abuf + 600000 +
						((posted + i) % 64) * msz;
					for (int k = 0; k < msz; k++)
						p[k] = static_cast<
							unsigned char>(posted +
								       i + k);
					sg[i] = {reinterpret_cast<uintptr_t>(p),
						 static_cast<uint32_t>(msz),
						 amr->lkey};
					w[i].wr_id = posted + i;
					w[i].opcode = IBV_WR_SEND;
					w[i].send_flags =
						IBV_SEND_SIGNALED |
						((posted & 4) ? IBV_SEND_INLINE
							      : 0);
					w[i].sg_list = &sg[i];
					w[i].num_sge = 1;
					w[i].next =
						i + 1 < n ? &w[i + 1] : nullptr;
				}
				int r = ibv_post_send(a, w, &bad);
				if (r == ENOMEM)
					break;
				if (r) {
					errs++;
					break;
				}
				posted += n;
			}
			int s = ibv_poll_cq(scq, 64, wc);
			for (int i = 0; i < s; i++) {
				if (wc[i].status != IBV_WC_SUCCESS ||
				    wc[i].wr_id != static_cast<uint64_t>(sent))
					errs++;
				sent++;
			}
			ibv_poll_cq_attr pa{};
			if (ibv_start_poll(xcq, &pa) == 0) {
				do {
					const int id =
						static_cast<int>(xcq->wr_id);
					const unsigned char *p =
						bbuf + 500000 + (id % 64) * msz;
					bool ok =
						xcq->status == IBV_WC_SUCCESS &&
						id == recvd &&
						ibv_wc_read_byte_len(xcq) ==
							static_cast<uint32_t>(
								msz);
					for (int k = 0; ok && k < msz; k++)
						ok = p[k] ==
						     static_cast<unsigned char>(
							     id + k);
					if (!ok)
						errs++;
					recvd++;
				} while (ibv_next_poll(xcq) == 0);
				ibv_end_poll(xcq);
			}
			if (errs > 10)
				break;
		}
		while (sent < posted) {
			int s = poll_n(scq, wc, 1);
			if (s != 1)
				break;
			sent++;
		}
		CHECK(errs == 0);
		CHECK(recvd == total && sent == total);
		printf("# volume %d: sent %d recvd %d errs %d\n", total, sent,
		       recvd, errs);
		report("20000 SENDs in batches, inline and not, data checked "
		       "in order");
	}

	CHECK(ibv_destroy_qp(a) == 0);
	CHECK(ibv_destroy_qp(b) == 0);
	CHECK(ibv_destroy_cq(pcq) == 0);
	CHECK(ibv_destroy_cq(scq) == 0);
	CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(xcq)) == 0);
	CHECK(ibv_destroy_comp_channel(ch) == 0);
	CHECK(ibv_dereg_mr(amr) == 0);
	CHECK(ibv_dereg_mr(bmr) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	ibv_free_device_list(list);
	report("everything destroyed");
	printf("# e2e: %s (%d failures)\n", fails ? "FAILED" : "PASSED", fails);
	return fails ? 1 : 0;
}
