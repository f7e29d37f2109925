// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared receive queues end to end through libibverbs, the provider and
 * sroce.ko, on one real sroce device (not a ctest: selftests/srq_pingpong.sh
 * runs it in the QEMU guest). Three receiver QPs - two RC, one UC - share
 * one SRQ, each fed by a sender QP on the same device, and the test checks
 * what ibv_srq_pingpong does not:
 *  1. the SRQ and QP attributes (max_wr/max_sge adjusted, a QP on an SRQ has
 *     no RQ: max_recv_wr 0, ibv_post_recv EINVAL, query_qp names the SRQ),
 *     post_srq_recv's ENOMEM and EINVAL with *bad_wr;
 *  2. WQEs are taken in posting order whichever QP receives, two SGEs
 *     scatter right, byte_len, qp_num, src_qp;
 *  3. the limit event: armed with ibv_modify_srq(IBV_SRQ_LIMIT), it fires
 *     exactly when a WQE is taken and fewer than srq_limit remain, once
 *     (query_srq shows it disarmed after);
 *  4. resize (IBV_SRQ_MAX_WR) with WQEs posted: they survive and complete
 *     first, the new capacity is usable, shrinking below what is posted
 *     fails and leaves the SRQ working, shrinking to what fits works;
 *  5. IBV_EVENT_QP_LAST_WQE_REACHED when a QP on the SRQ goes to error,
 *     the SRQ's WQEs staying with the SRQ; destroy refused while attached.
 *
 * Usage: sroce_e2e_srq DEVICE GID_INDEX...   (each GID index in turn)
 */
#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <vector>

#include "e2e_util.h"

namespace
{

constexpr int npairs = 3;	  /* RC, RC, UC */
constexpr size_t slot_len = 4096; /* per receive WQE */
constexpr size_t nslots = 128;
constexpr uint32_t sge0_len = 1000; /* first SGE of each WQE */

ibv_context *ctx;
ibv_pd *pd;
ibv_mr *mr;
unsigned char *rbuf; /* receive slots */
unsigned char *sbuf; /* send area, one slot per pair */
union ibv_gid gid;
int gid_index;

ibv_cq *scq, *rcq;
ibv_srq *srq;
ibv_qp *snd[npairs], *rcv[npairs];

uint64_t next_id;   /* wr_id of the next WQE posted to the SRQ */
uint64_t expect_id; /* wr_id the next receive must complete */
uint32_t seq;	    /* message number, the payload pattern's seed */

double now()
{
	timespec t{};
	clock_gettime(CLOCK_MONOTONIC, &t);
	return static_cast<double>(t.tv_sec) +
	       static_cast<double>(t.tv_nsec) / 1e9;
}

bool is_uc(int pair)
{
	return pair == 2;
}

void to_rts(ibv_qp *q, uint32_t remote, bool uc)
{
	e2e_connect_qp(
		q, remote, gid, gid_index,
		{IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE, 7, 1, uc});
}

/* Poll cq for one completion, for up to secs seconds. */
bool poll_one(ibv_cq *cq, ibv_wc &wc, double secs = 20)
{
	const double end = now() + secs;
	do {
		const int r = ibv_poll_cq(cq, 1, &wc);
		if (r < 0)
			return false;
		if (r == 1)
			return true;
	} while (now() < end);
	return false;
}

unsigned char *slot(uint64_t id)
{
	return rbuf + (id % nslots) * slot_len;
}

unsigned char pattern(uint32_t s, size_t i)
{
	return static_cast<unsigned char>(size_t{s} * 31 + i * 7 + 1);
}

/*
 * Post count WQEs (two SGEs each) to the SRQ in one call; the call's return
 * value. *bad_wr must be the first WQE not posted.
 */
int post_srq(uint32_t count)
{
	std::vector<ibv_recv_wr> wr(count);
	std::vector<ibv_sge> sg(2 * size_t{count});
	for (size_t i = 0; i < count; i++) {
		const uint64_t id = next_id + i;
		unsigned char *p = slot(id);
		memset(p, 0xee, slot_len);
		sg[2 * i] = {reinterpret_cast<uintptr_t>(p), sge0_len,
			     mr->lkey};
		sg[2 * i + 1] = {reinterpret_cast<uintptr_t>(p + sge0_len),
				 static_cast<uint32_t>(slot_len - sge0_len),
				 mr->lkey};
		wr[i].wr_id = id;
		wr[i].sg_list = &sg[2 * i];
		wr[i].num_sge = 2;
		wr[i].next = i + 1 < count ? &wr[i + 1] : nullptr;
	}
	ibv_recv_wr *bad = nullptr;
	const int r = ibv_post_srq_recv(srq, wr.data(), &bad);
	uint32_t posted = count;
	if (r) {
		if (bad < wr.data() || bad >= wr.data() + count) {
			fprintf(stderr, "post_srq_recv: %d, bad_wr not ours\n",
				r);
			fails++;
			return r;
		}
		posted = static_cast<uint32_t>(bad - wr.data());
	}
	next_id += posted;
	return r;
}

/* Any async event pending within ms milliseconds? */
bool async_pending(int ms)
{
	pollfd p{ctx->async_fd, POLLIN, 0};
	return poll(&p, 1, ms) == 1;
}

/* Send one message of len bytes on pair and check where it landed. */
bool exchange(int pair, size_t len)
{
	const uint32_t s = seq++;
	unsigned char *src = sbuf + static_cast<size_t>(pair) * slot_len;
	for (size_t i = 0; i < len; i++)
		src[i] = pattern(s, i);
	ibv_sge sg{reinterpret_cast<uintptr_t>(src), static_cast<uint32_t>(len),
		   mr->lkey};
	ibv_send_wr w{}, *bad = nullptr;
	w.wr_id = s;
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_SIGNALED;
	w.sg_list = &sg;
	w.num_sge = 1;
	if (ibv_post_send(snd[pair], &w, &bad)) {
		fprintf(stderr, "post_send on pair %d failed\n", pair);
		fails++;
		return false;
	}
	ibv_wc wc{};
	if (!poll_one(scq, wc) || wc.status != IBV_WC_SUCCESS ||
	    wc.wr_id != s) {
		fprintf(stderr, "send %u on pair %d: no good completion (%s)\n",
			s, pair, ibv_wc_status_str(wc.status));
		fails++;
		return false;
	}
	if (!poll_one(rcq, wc)) {
		fprintf(stderr, "send %u on pair %d: nothing received\n", s,
			pair);
		fails++;
		return false;
	}
	bool ok = wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
		  wc.wr_id == expect_id && wc.byte_len == len &&
		  wc.qp_num == rcv[pair]->qp_num &&
		  wc.src_qp == snd[pair]->qp_num;
	if (!ok)
		fprintf(stderr,
			"recv of %u on pair %d: status %s opcode %d wr_id "
			"%llu (want %llu) byte_len %u (want %zu) qp 0x%x "
			"(want 0x%x) src 0x%x\n",
			s, pair, ibv_wc_status_str(wc.status), wc.opcode,
			static_cast<unsigned long long>(wc.wr_id),
			static_cast<unsigned long long>(expect_id), wc.byte_len,
			len, wc.qp_num, rcv[pair]->qp_num, wc.src_qp);
	const unsigned char *dst = slot(wc.wr_id);
	for (size_t i = 0; ok && i < len; i++)
		if (dst[i] != pattern(s, i)) {
			fprintf(stderr, "message %u: byte %zu wrong\n", s, i);
			ok = false;
		}
	if (ok && len < slot_len && dst[len] != 0xee) {
		fprintf(stderr, "message %u: wrote past byte_len\n", s);
		ok = false;
	}
	expect_id = wc.wr_id + 1;
	if (!ok)
		fails++;
	return ok;
}

/* Every message gets its own size: across one SGE, both, or tiny. */
size_t size_of(uint32_t s)
{
	static const size_t sizes[] = {1, 999, 1000, 1001, 2500, 4096, 64};
	return sizes[s % 7];
}

void setup()
{
	scq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
	rcq = ibv_create_cq(ctx, 256, nullptr, nullptr, 0);
	REQUIRE(scq && rcq);

	ibv_srq_init_attr sa{};
	sa.attr.max_wr = 10;
	sa.attr.max_sge = 2;
	sa.attr.srq_limit = 0;
	srq = ibv_create_srq(pd, &sa);
	REQUIRE(srq);
	printf("SRQ: max_wr %u max_sge %u\n", sa.attr.max_wr, sa.attr.max_sge);
	CHECK(sa.attr.max_wr >= 10 && sa.attr.max_sge >= 2);
	ibv_srq_attr q{};
	CHECK(ibv_query_srq(srq, &q) == 0);
	CHECK(q.max_wr == sa.attr.max_wr && q.max_sge == sa.attr.max_sge &&
	      q.srq_limit == 0);

	for (int i = 0; i < npairs; i++) {
		const ibv_qp_type t = is_uc(i) ? IBV_QPT_UC : IBV_QPT_RC;
		ibv_qp_init_attr a{};
		a.qp_type = t;
		a.send_cq = scq;
		a.recv_cq = rcq;
		a.cap.max_send_wr = 16;
		a.cap.max_recv_wr = 4;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		snd[i] = ibv_create_qp(pd, &a);
		REQUIRE(snd[i]);

		a = {};
		a.qp_type = t;
		a.send_cq = scq;
		a.recv_cq = rcq;
		a.srq = srq;
		a.cap.max_send_wr = 4;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_wr = 8; /* ignored with an SRQ */
		a.cap.max_recv_sge = 1;
		rcv[i] = ibv_create_qp(pd, &a);
		REQUIRE(rcv[i]);
		CHECK(a.cap.max_recv_wr == 0 && a.cap.max_recv_sge == 0);
		CHECK(rcv[i]->srq == srq);
	}
	for (int i = 0; i < npairs; i++) {
		to_rts(snd[i], rcv[i]->qp_num, is_uc(i));
		to_rts(rcv[i], snd[i]->qp_num, is_uc(i));
	}
}

void teardown()
{
	for (int i = 0; i < npairs; i++) {
		CHECK(ibv_destroy_qp(snd[i]) == 0);
		CHECK(ibv_destroy_qp(rcv[i]) == 0);
	}
	CHECK(ibv_destroy_srq(srq) == 0);
	CHECK(ibv_destroy_cq(scq) == 0);
	CHECK(ibv_destroy_cq(rcq) == 0);
}

void part1_attrs()
{
	const int before = fails;

	ibv_qp_attr at{};
	ibv_qp_init_attr ia{};
	CHECK(ibv_query_qp(rcv[0], &at, IBV_QP_STATE | IBV_QP_CAP, &ia) == 0);
	CHECK(at.qp_state == IBV_QPS_RTS && ia.srq == srq);
	CHECK(ia.cap.max_recv_wr == 0);

	ibv_recv_wr rw{}, *bad = nullptr;
	CHECK(ibv_post_recv(rcv[0], &rw, &bad) == EINVAL && bad == &rw);

	/* Too many SGEs. */
	ibv_sge sg[3]{};
	rw.sg_list = sg;
	rw.num_sge = 3;
	bad = nullptr;
	CHECK(ibv_post_srq_recv(srq, &rw, &bad) == EINVAL && bad == &rw);

	/* Fill it: ENOMEM at the first WQE that does not fit. */
	ibv_srq_attr q{};
	REQUIRE(ibv_query_srq(srq, &q) == 0);
	CHECK(post_srq(q.max_wr + 2) == ENOMEM);
	CHECK(next_id == q.max_wr);
	CHECK(post_srq(1) == ENOMEM);
	printf("%s - attributes and rejects (%u WQEs posted), GID %d\n",
	       fails == before ? "ok" : "not ok", q.max_wr, gid_index);
}

void part2_fifo(int n)
{
	const int before = fails;
	for (int i = 0; i < n; i++)
		exchange(i % npairs, size_of(seq));
	printf("%s - %d messages over %d QPs (RC, RC, UC) in SRQ order, GID "
	       "%d\n",
	       fails == before ? "ok" : "not ok", n, npairs, gid_index);
}

void part3_limit()
{
	const int before = fails;
	const uint32_t limit = 4;

	/* Top up to full: max_wr posted. */
	ibv_srq_attr q{};
	REQUIRE(ibv_query_srq(srq, &q) == 0);
	const auto outstanding = static_cast<uint32_t>(next_id - expect_id);
	CHECK(post_srq(q.max_wr - outstanding) == 0);
	CHECK(!async_pending(0));

	ibv_srq_attr la{};
	la.srq_limit = limit;
	CHECK(ibv_modify_srq(srq, &la, IBV_SRQ_LIMIT) == 0);
	CHECK(ibv_query_srq(srq, &q) == 0 && q.srq_limit == limit);

	/* Take WQEs until exactly limit remain: no event yet. */
	for (uint32_t left = q.max_wr; left > limit; left--) {
		exchange(static_cast<int>(left % npairs), size_of(seq));
		if (async_pending(0)) {
			fprintf(stderr, "async event with %u WQEs left\n",
				left - 1);
			fails++;
			break;
		}
	}
	CHECK(!async_pending(300));
	CHECK(ibv_query_srq(srq, &q) == 0 && q.srq_limit == limit);

	/* The next one leaves limit - 1: the event. */
	exchange(0, size_of(seq));
	CHECK(async_pending(5000));
	ibv_async_event ev{};
	if (async_pending(0) && ibv_get_async_event(ctx, &ev) == 0) {
		printf("  event: %s\n", ibv_event_type_str(ev.event_type));
		CHECK(ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED);
		CHECK(ev.element.srq == srq);
		ibv_ack_async_event(&ev);
	} else {
		fprintf(stderr, "no IBV_EVENT_SRQ_LIMIT_REACHED\n");
		fails++;
	}
	/* Disarmed: once only. */
	CHECK(ibv_query_srq(srq, &q) == 0 && q.srq_limit == 0);
	exchange(1, size_of(seq));
	CHECK(!async_pending(300));
	printf("%s - limit event at %u, GID %d\n",
	       fails == before ? "ok" : "not ok", limit, gid_index);
}

void part4_resize()
{
	const int before = fails;

	/* Full ring, then grow it with everything still posted. */
	ibv_srq_attr q{};
	REQUIRE(ibv_query_srq(srq, &q) == 0);
	const uint32_t old_wr = q.max_wr;
	auto outstanding = static_cast<uint32_t>(next_id - expect_id);
	CHECK(post_srq(old_wr - outstanding) == 0);
	CHECK(post_srq(1) == ENOMEM);

	ibv_srq_attr ra{};
	ra.max_wr = 64;
	CHECK(ibv_modify_srq(srq, &ra, IBV_SRQ_MAX_WR) == 0);
	CHECK(ibv_query_srq(srq, &q) == 0 && q.max_wr >= 64);
	printf("  resized %u -> %u with %u posted\n", old_wr, q.max_wr, old_wr);
	const uint32_t new_wr = q.max_wr;
	CHECK(post_srq(new_wr - old_wr) == 0);
	CHECK(post_srq(1) == ENOMEM);

	/* Shrinking below what is posted fails and changes nothing. */
	ra.max_wr = 16;
	errno = 0;
	CHECK(ibv_modify_srq(srq, &ra, IBV_SRQ_MAX_WR) == EINVAL);
	CHECK(ibv_query_srq(srq, &q) == 0 && q.max_wr == new_wr);
	CHECK(post_srq(1) == ENOMEM);

	/* All complete, the moved ones first: exchange() checks the order. */
	outstanding = static_cast<uint32_t>(next_id - expect_id);
	for (uint32_t i = 0; i < outstanding; i++)
		exchange(static_cast<int>(i % npairs), size_of(seq));
	CHECK(next_id == expect_id);

	/* Shrink to what fits, with WQEs posted; they survive too. */
	CHECK(post_srq(5) == 0);
	ra.max_wr = 8;
	CHECK(ibv_modify_srq(srq, &ra, IBV_SRQ_MAX_WR) == 0);
	CHECK(ibv_query_srq(srq, &q) == 0 && q.max_wr == 8);
	CHECK(post_srq(3) == 0);
	CHECK(post_srq(1) == ENOMEM);
	for (int i = 0; i < 8; i++)
		exchange(i % npairs, size_of(seq));
	CHECK(next_id == expect_id);
	printf("%s - resize with WQEs posted (grow, refused shrink, shrink), "
	       "GID %d\n",
	       fails == before ? "ok" : "not ok", gid_index);
}

void part5_last_wqe()
{
	const int before = fails;

	CHECK(post_srq(4) == 0);
	CHECK(!async_pending(0));
	/* Attached QPs keep the SRQ alive. */
	CHECK(ibv_destroy_srq(srq) == EBUSY);

	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_ERR;
	CHECK(ibv_modify_qp(rcv[1], &a, IBV_QP_STATE) == 0);
	CHECK(async_pending(5000));
	ibv_async_event ev{};
	if (async_pending(0) && ibv_get_async_event(ctx, &ev) == 0) {
		printf("  event: %s\n", ibv_event_type_str(ev.event_type));
		CHECK(ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED);
		CHECK(ev.element.qp == rcv[1]);
		ibv_ack_async_event(&ev);
	} else {
		fprintf(stderr, "no IBV_EVENT_QP_LAST_WQE_REACHED\n");
		fails++;
	}
	/* It held no WQE: nothing flushed, the SRQ's WQEs stay for others. */
	ibv_wc wc{};
	CHECK(!poll_one(rcq, wc, 0.3));
	exchange(0, 100);
	exchange(2, 100);
	exchange(0, 100);
	exchange(0, 100);
	CHECK(next_id == expect_id);
	printf("%s - last WQE reached on error, SRQ kept its WQEs, GID %d\n",
	       fails == before ? "ok" : "not ok", gid_index);
}

} // namespace

int main(int argc, char **argv)
{
	ibv_device **list = nullptr;
	ctx = e2e_open_device_of_args(argc, argv, &list);
	const int fl = fcntl(ctx->async_fd, F_GETFL);
	REQUIRE(fl >= 0 && fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) == 0);
	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd);
	const size_t len = (nslots + npairs) * slot_len;
	std::vector<unsigned char> mem(len);
	rbuf = mem.data();
	sbuf = rbuf + nslots * slot_len;
	mr = ibv_reg_mr(pd, mem.data(), len,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	REQUIRE(mr);

	for (int g = 2; g < argc; g++) {
		gid_index = atoi(argv[g]);
		REQUIRE(ibv_query_gid(ctx, 1, gid_index, &gid) == 0);
		char text[INET6_ADDRSTRLEN] = "";
		inet_ntop(AF_INET6, gid.raw, text, sizeof(text));
		printf("=== %s GID %d (%s)\n", argv[1], gid_index, text);
		next_id = expect_id = 0;
		setup();
		part1_attrs();
		part2_fifo(9);
		part3_limit();
		part4_resize();
		part5_last_wqe();
		teardown();
	}

	CHECK(ibv_dereg_mr(mr) == 0);
	CHECK(ibv_dealloc_pd(pd) == 0);
	CHECK(ibv_close_device(ctx) == 0);
	ibv_free_device_list(list);
	printf("e2e_srq: %s (%d failures)\n", fails ? "FAILED" : "PASSED",
	       fails);
	return fails ? 1 : 0;
}
