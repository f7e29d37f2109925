// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ud_mcast: UD multicast through the verbs alone (no RDMA CM), for any
 * multicast GID: an IPv6 group (ff0e::...) or an IPv4 one (::ffff:239...).
 *
 *   ud_mcast recv DEV GID_INDEX MGID COUNT   attach a UD QP to MGID, print
 *                                            "ready", receive COUNT datagrams
 *   ud_mcast send DEV GID_INDEX MGID COUNT   send COUNT datagrams to MGID
 *                                            (QPN 0xFFFFFF)
 *
 * The receiver checks every datagram: its payload ("sroce-mcast N", in
 * order), its length, IBV_WC_GRH, the GRH's destination address (the
 * group) and the source QPN (the same for all). It then detaches, so the
 * caller can check the netdev left the group. Exit status 0 only if all of
 * that holds; every failure says what was wrong.
 */
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace
{

constexpr uint32_t kQkey = 0x11111111;
constexpr uint32_t kMcastQpn = 0xFFFFFF;
constexpr size_t kGrh = 40;
constexpr size_t kMsg = 64;

[[noreturn]] void die(const char *what, int err = errno)
{
	fprintf(stderr, "ud_mcast: %s: %s\n", what, strerror(err));
	exit(1);
}

[[noreturn]] void bad(const std::string &what)
{
	fprintf(stderr, "ud_mcast: FAIL: %s\n", what.c_str());
	exit(1);
}

struct ctx {
	ibv_context *dev = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_qp *qp = nullptr;
	ibv_mr *mr = nullptr;
	std::vector<unsigned char> buf;
};

void open_dev(ctx &c, const char *name, size_t nbuf, bool sender)
{
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);

	if (!list)
		die("ibv_get_device_list");
	for (int i = 0; i < n && !c.dev; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			c.dev = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!c.dev)
		die(name, ENODEV);
	c.pd = ibv_alloc_pd(c.dev);
	c.cq = ibv_create_cq(c.dev, static_cast<int>(nbuf) + 8, nullptr,
			     nullptr, 0);
	if (!c.pd || !c.cq)
		die("pd/cq");
	c.buf.assign(nbuf * (kGrh + kMsg), 0);
	c.mr = ibv_reg_mr(c.pd, c.buf.data(), c.buf.size(),
			  IBV_ACCESS_LOCAL_WRITE);
	if (!c.mr)
		die("ibv_reg_mr");

	ibv_qp_init_attr ia = {};
	ia.send_cq = c.cq;
	ia.recv_cq = c.cq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = sender ? 16 : 1;
	ia.cap.max_recv_wr = static_cast<uint32_t>(nbuf);
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	c.qp = ibv_create_qp(c.pd, &ia);
	if (!c.qp)
		die("ibv_create_qp");

	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = kQkey;
	if (ibv_modify_qp(c.qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_QKEY))
		die("modify INIT");
	a = {};
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(c.qp, &a, IBV_QP_STATE))
		die("modify RTR");
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(c.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("modify RTS");
}

ibv_wc wait_one(ctx &c, int seconds)
{
	ibv_wc wc = {};
	const auto end = std::chrono::steady_clock::now() +
			 std::chrono::seconds(seconds);

	for (;;) {
		const int n = ibv_poll_cq(c.cq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq", EIO);
		if (n == 1)
			return wc;
		if (std::chrono::steady_clock::now() > end)
			bad("timed out waiting for a completion");
		std::this_thread::sleep_for(std::chrono::microseconds(200));
	}
}

int do_recv(ctx &c, const ibv_gid &mgid, int count)
{
	for (int i = 0; i < count; i++) {
		ibv_sge sge = {};
		sge.addr = reinterpret_cast<uintptr_t>(c.buf.data()) +
			   i * (kGrh + kMsg);
		sge.length = kGrh + kMsg;
		sge.lkey = c.mr->lkey;
		ibv_recv_wr wr = {}, *badwr = nullptr;
		wr.wr_id = static_cast<uint64_t>(i);
		wr.sg_list = &sge;
		wr.num_sge = 1;
		if (ibv_post_recv(c.qp, &wr, &badwr))
			die("ibv_post_recv");
	}
	if (ibv_attach_mcast(c.qp, &mgid, 0))
		die("ibv_attach_mcast");
	printf("ready\n");
	fflush(stdout);

	uint32_t src_qp = 0;
	for (int i = 0; i < count; i++) {
		const ibv_wc wc = wait_one(c, 60);
		if (wc.status != IBV_WC_SUCCESS)
			bad("completion status " +
			    std::string(ibv_wc_status_str(wc.status)));
		if (wc.opcode != IBV_WC_RECV || !(wc.wc_flags & IBV_WC_GRH))
			bad("not a receive with a GRH");
		if (wc.wr_id != static_cast<uint64_t>(i))
			bad("out of order: WQE " + std::to_string(wc.wr_id) +
			    ", want " + std::to_string(i));
		if (wc.byte_len != kGrh + kMsg)
			bad("byte_len " + std::to_string(wc.byte_len));
		if (i == 0)
			src_qp = wc.src_qp;
		else if (wc.src_qp != src_qp)
			bad("source QPN changed");
		const unsigned char *p = c.buf.data() + i * (kGrh + kMsg);
		/*
		 * The GRH: an IPv6 header (its destination at byte 24) or, for
		 * an IPv4 group, 20 zero bytes and the IPv4 header (destination
		 * at byte 36).
		 */
		bool dst_ok;
		if ((p[0] >> 4) == 6)
			dst_ok = !memcmp(p + 24, mgid.raw, 16);
		else
			dst_ok = !memcmp(p + 36, mgid.raw + 12, 4);
		if (!dst_ok)
			bad("GRH destination is not the group");
		char want[kMsg] = {};
		snprintf(want, sizeof(want), "sroce-mcast %d", i);
		if (memcmp(p + kGrh, want, kMsg))
			bad("payload of message " + std::to_string(i));
	}
	if (ibv_detach_mcast(c.qp, &mgid, 0))
		die("ibv_detach_mcast");
	printf("received %d datagrams from QPN %#x, all checked\n", count,
	       src_qp);
	return 0;
}

int do_send(ctx &c, int gid_index, const ibv_gid &mgid, int count)
{
	ibv_ah_attr aa = {};
	aa.is_global = 1;
	aa.grh.dgid = mgid;
	aa.grh.sgid_index = static_cast<uint8_t>(gid_index);
	aa.grh.hop_limit = 1;
	aa.port_num = 1;
	ibv_ah *ah = ibv_create_ah(c.pd, &aa);
	if (!ah)
		die("ibv_create_ah");
	for (int i = 0; i < count; i++) {
		unsigned char *p = c.buf.data();
		memset(p, 0, kMsg);
		snprintf(reinterpret_cast<char *>(p), kMsg, "sroce-mcast %d", i);
		ibv_sge sge = {};
		sge.addr = reinterpret_cast<uintptr_t>(p);
		sge.length = kMsg;
		sge.lkey = c.mr->lkey;
		ibv_send_wr wr = {}, *badwr = nullptr;
		wr.wr_id = static_cast<uint64_t>(i);
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = kMcastQpn;
		wr.wr.ud.remote_qkey = kQkey;
		if (ibv_post_send(c.qp, &wr, &badwr))
			die("ibv_post_send");
		const ibv_wc wc = wait_one(c, 30);
		if (wc.status != IBV_WC_SUCCESS)
			bad("send completion " +
			    std::string(ibv_wc_status_str(wc.status)));
		/* Do not outrun the receivers' softirq on a slow guest. */
		std::this_thread::sleep_for(std::chrono::milliseconds(2));
	}
	ibv_destroy_ah(ah);
	printf("sent %d datagrams\n", count);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr,
			"usage: ud_mcast recv|send DEV GID_INDEX MGID COUNT\n");
		return 2;
	}
	const bool sender = !strcmp(argv[1], "send");
	const int gid_index = atoi(argv[3]);
	const int count = atoi(argv[5]);
	ibv_gid mgid = {};
	if (inet_pton(AF_INET6, argv[4], mgid.raw) != 1 || mgid.raw[0] != 0xff) {
		/* An IPv4 group as its IPv4-mapped GID. */
		in_addr a4 = {};
		if (inet_pton(AF_INET, argv[4], &a4) != 1)
			bad(std::string("not a multicast address: ") + argv[4]);
		memset(mgid.raw, 0, sizeof(mgid.raw));
		mgid.raw[10] = 0xff;
		mgid.raw[11] = 0xff;
		memcpy(mgid.raw + 12, &a4, 4);
	}
	if (count <= 0 || count > 4096)
		bad("COUNT must be 1..4096");
	ctx c;
	open_dev(c, argv[2], sender ? 1 : static_cast<size_t>(count), sender);
	return sender ? do_send(c, gid_index, mgid, count)
		      : do_recv(c, mgid, count);
}
