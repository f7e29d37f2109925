// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "common.h"

#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <poll.h>
#include <strings.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <thread>

namespace vt {

std::string strf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = nullptr;
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return fmt;
	std::string r(s, n);
	free(s);
	return r;
}

void throw_errno(const std::string &what, int err)
{
	throw Error(what + ": " + std::strerror(err) + " (errno " + std::to_string(err) + ")");
}

void CqDeleter::operator()(ibv_cq *cq) const noexcept
{
	if (cq && ibv_destroy_cq(cq))
		std::fprintf(stderr, "warning: ibv_destroy_cq failed: %m\n");
}

// --- Buffer ---------------------------------------------------------------------

Buffer::Buffer(size_t len) : len_(len)
{
	size_t maplen = std::max<size_t>(len, 1);
	void *p = mmap(nullptr, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		throw_errno(strf("mmap of %zu bytes", len), errno);
	p_ = static_cast<uint8_t *>(p);
}

Buffer &Buffer::operator=(Buffer &&o) noexcept
{
	if (this != &o) {
		this->~Buffer();
		p_ = o.p_, len_ = o.len_;
		o.p_ = nullptr, o.len_ = 0;
	}
	return *this;
}

Buffer::~Buffer()
{
	if (p_)
		munmap(p_, std::max<size_t>(len_, 1));
	p_ = nullptr;
}

MrPtr reg_mr(ibv_pd *pd, void *addr, size_t len, unsigned access)
{
	ibv_mr *mr = ibv_reg_mr(pd, addr, len, static_cast<int>(access));
	if (!mr)
		throw_errno(strf("ibv_reg_mr(len %zu, access 0x%x)", len, access), errno);
	return MrPtr(mr);
}

// --- names ------------------------------------------------------------------------

std::string gid_str(const ibv_gid &gid)
{
	char buf[INET6_ADDRSTRLEN];
	if (!inet_ntop(AF_INET6, gid.raw, buf, sizeof(buf)))
		return "?";
	return buf;
}

const char *mtu_str(ibv_mtu mtu)
{
	switch (mtu) {
	case IBV_MTU_256: return "256";
	case IBV_MTU_512: return "512";
	case IBV_MTU_1024: return "1024";
	case IBV_MTU_2048: return "2048";
	case IBV_MTU_4096: return "4096";
	}
	return "?";
}

ibv_mtu mtu_from_bytes(int bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	}
	throw Error(strf("bad MTU %d (256, 512, 1024, 2048 or 4096)", bytes));
}

const char *qp_state_str(ibv_qp_state s)
{
	switch (s) {
	case IBV_QPS_RESET: return "RESET";
	case IBV_QPS_INIT: return "INIT";
	case IBV_QPS_RTR: return "RTR";
	case IBV_QPS_RTS: return "RTS";
	case IBV_QPS_SQD: return "SQD";
	case IBV_QPS_SQE: return "SQE";
	case IBV_QPS_ERR: return "ERR";
	case IBV_QPS_UNKNOWN: return "UNKNOWN";
	}
	return "?";
}

const char *wc_opcode_str(ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: break;
	}
	static thread_local char buf[24];
	snprintf(buf, sizeof(buf), "opcode(%d)", static_cast<int>(op));
	return buf;
}

// --- GIDs -------------------------------------------------------------------------

static bool gid_is_v4mapped(const ibv_gid &g)
{
	static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	return std::memcmp(g.raw, pfx, sizeof(pfx)) == 0;
}

static bool gid_is_zero(const ibv_gid &g)
{
	static const uint8_t z[16] = {};
	return std::memcmp(g.raw, z, sizeof(z)) == 0;
}

// The GID type from sysfs, for when ibv_query_gid_ex is not supported.
static bool sysfs_gid_is_rocev2(ibv_context *ctx, uint8_t port, int idx)
{
	std::ifstream f(strf("/sys/class/infiniband/%s/ports/%u/gid_attrs/types/%d",
			     ibv_get_device_name(ctx->device), port, idx));
	std::string line;
	return f && std::getline(f, line) && line == "RoCE v2";
}

int pick_gid(ibv_context *ctx, uint8_t port, bool ipv6)
{
	ibv_port_attr pa{};
	if (ibv_query_port(ctx, port, &pa))
		throw_errno("ibv_query_port", errno);
	int linklocal = -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		ibv_gid_entry e{};
		bool v2;
		int rc = ibv_query_gid_ex(ctx, port, i, &e, 0);
		if (rc == 0) {
			v2 = e.gid_type == IBV_GID_TYPE_ROCE_V2;
		} else if (rc == ENODATA || rc == EINVAL) {
			continue; // empty entry
		} else {
			// Fall back to ibv_query_gid + sysfs.
			if (ibv_query_gid(ctx, port, i, &e.gid))
				continue;
			v2 = sysfs_gid_is_rocev2(ctx, port, i);
		}
		if (!v2 || gid_is_zero(e.gid))
			continue;
		if (gid_is_v4mapped(e.gid) != !ipv6)
			continue;
		if (ipv6 && e.gid.raw[0] == 0xfe && (e.gid.raw[1] & 0xc0) == 0x80) {
			if (linklocal < 0)
				linklocal = i;
			continue;
		}
		return i;
	}
	if (linklocal >= 0)
		return linklocal;
	throw Error(strf("%s port %u has no RoCE v2 %s GID", ibv_get_device_name(ctx->device), port,
			 ipv6 ? "IPv6" : "IPv4"));
}

// --- endpoints --------------------------------------------------------------------

std::unique_ptr<Endpoint> open_endpoint(const std::string &label, const DevSpec &spec, bool ipv6,
					bool use_event, int cqe)
{
	auto ep = std::make_unique<Endpoint>();
	ep->label = label;
	ep->use_event = use_event;

	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);
	if (!list)
		throw_errno("ibv_get_device_list", errno);
	ibv_device *dev = nullptr;
	std::string names;
	for (int i = 0; i < n; i++) {
		names += std::string(names.empty() ? "" : " ") + ibv_get_device_name(list[i]);
		if (!dev && (spec.name.empty() || spec.name == ibv_get_device_name(list[i])))
			dev = list[i];
	}
	if (dev) {
		ep->ctx.reset(ibv_open_device(dev));
		if (!ep->ctx) {
			int err = errno;
			ibv_free_device_list(list);
			throw_errno(strf("ibv_open_device(%s)", spec.name.c_str()), err);
		}
	}
	ibv_free_device_list(list);
	if (!dev)
		throw Error(strf("no RDMA device '%s' (found: %s)", spec.name.c_str(),
				 names.empty() ? "none" : names.c_str()));
	ep->devname = ibv_get_device_name(ep->ctx->device);

	if (ibv_query_device(ep->ctx.get(), &ep->dattr))
		throw_errno("ibv_query_device(" + ep->devname + ")", errno);
	if (ibv_query_port(ep->ctx.get(), ep->port, &ep->pattr))
		throw_errno("ibv_query_port(" + ep->devname + ")", errno);
	if (ep->pattr.state != IBV_PORT_ACTIVE)
		throw Error(strf("%s port %u is not active (state %d)", ep->devname.c_str(), ep->port,
				 ep->pattr.state));
	if (spec.gid == "auto") {
		ep->gid_index = pick_gid(ep->ctx.get(), ep->port, ipv6);
	} else {
		try {
			ep->gid_index = std::stoi(spec.gid);
		} catch (const std::exception &) {
			throw Error("bad GID index '" + spec.gid + "' (a number or 'auto')");
		}
	}
	if (ibv_query_gid(ep->ctx.get(), ep->port, ep->gid_index, &ep->gid))
		throw_errno(strf("ibv_query_gid(%s, %d)", ep->devname.c_str(), ep->gid_index), errno);

	ep->pd.reset(ibv_alloc_pd(ep->ctx.get()));
	if (!ep->pd)
		throw_errno("ibv_alloc_pd(" + ep->devname + ")", errno);
	if (use_event) {
		ep->chan.reset(ibv_create_comp_channel(ep->ctx.get()));
		if (!ep->chan)
			throw_errno("ibv_create_comp_channel", errno);
		int fl = fcntl(ep->chan->fd, F_GETFL);
		if (fl < 0 || fcntl(ep->chan->fd, F_SETFL, fl | O_NONBLOCK) < 0)
			throw_errno("fcntl(O_NONBLOCK) on the completion channel", errno);
	}
	cqe = std::min(cqe, ep->dattr.max_cqe);
	for (CqPtr *cq : {&ep->scq, &ep->rcq}) {
		cq->reset(ibv_create_cq(ep->ctx.get(), cqe, nullptr, ep->chan.get(), 0));
		if (!*cq)
			throw_errno(strf("ibv_create_cq(%d)", cqe), errno);
	}
	return ep;
}

void Endpoint::create_qp(const QpCaps &want)
{
	qp.reset();
	qp = new_qp(want, &cap);
}

QpPtr Endpoint::new_qp(const QpCaps &want, ibv_qp_cap *out, ibv_pd *on_pd) const
{
	ibv_pd *qpd = on_pd ? on_pd : pd.get();
	QpPtr q;
	ibv_qp_init_attr_ex ia{};
	ia.send_cq = scq.get();
	ia.recv_cq = rcq.get();
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = 0;
	ia.pd = qpd;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	if (want.send_ops_flags) {
		ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ia.send_ops_flags = want.send_ops_flags;
	}
	ia.cap.max_send_wr = std::min<uint32_t>(want.max_send_wr, dattr.max_qp_wr);
	ia.cap.max_recv_wr = std::min<uint32_t>(want.max_recv_wr, dattr.max_qp_wr);
	ia.cap.max_send_sge = std::min<uint32_t>(want.max_send_sge, dattr.max_sge);
	ia.cap.max_recv_sge = std::min<uint32_t>(want.max_recv_sge, dattr.max_sge);
	// The device does not report its inline limit: try smaller ones.
	for (uint32_t inl : {want.max_inline, 128u, 64u, 0u}) {
		if (inl > want.max_inline)
			continue;
		ia.cap.max_inline_data = inl;
		if (want.send_ops_flags) {
			q.reset(ibv_create_qp_ex(ctx.get(), &ia));
		} else {
			ibv_qp_init_attr a{};
			a.send_cq = ia.send_cq;
			a.recv_cq = ia.recv_cq;
			a.qp_type = ia.qp_type;
			a.sq_sig_all = ia.sq_sig_all;
			a.cap = ia.cap;
			q.reset(ibv_create_qp(qpd, &a));
			ia.cap = a.cap;
		}
		if (q)
			break;
		if (errno != EINVAL)
			break;
	}
	if (!q)
		throw_errno(strf("ibv_create_qp%s(RC, send_wr %u recv_wr %u send_sge %u recv_sge %u) on %s",
				 want.send_ops_flags ? "_ex" : "", ia.cap.max_send_wr, ia.cap.max_recv_wr,
				 ia.cap.max_send_sge, ia.cap.max_recv_sge, devname.c_str()),
			    errno);
	// ibv_create_qp reports the actual caps, at least the requested ones.
	if (ia.cap.max_send_sge < 1 || ia.cap.max_recv_sge < 1)
		throw Error("QP created with no SGEs");
	if (out)
		*out = ia.cap;
	return q;
}

ibv_mtu pick_mtu(const Endpoint &a, const Endpoint &b, int mtu_bytes)
{
	if (mtu_bytes)
		return mtu_from_bytes(mtu_bytes);
	return std::min(a.pattr.active_mtu, b.pattr.active_mtu);
}

ibv_qp_state qp_state(ibv_qp *qp)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		throw_errno("ibv_query_qp", errno);
	return a.qp_state;
}

void modify_state(ibv_qp *qp, ibv_qp_state st)
{
	ibv_qp_attr a{};
	a.qp_state = st;
	int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (rc)
		throw_errno(strf("ibv_modify_qp(-> %s)", qp_state_str(st)), rc);
}

void connect_qp(Endpoint &ep, const Endpoint &peer, const ConnParams &p, uint32_t peer_psn)
{
	connect_qp(ep, ep.qp.get(), peer, peer.qpn(), p, peer_psn);
}

ibv_ah_attr ah_attr_to(const Endpoint &ep, const Endpoint &peer)
{
	ibv_ah_attr ah{};
	ah.is_global = 1;
	ah.grh.dgid = peer.gid;
	ah.grh.sgid_index = static_cast<uint8_t>(ep.gid_index);
	ah.grh.hop_limit = 64;
	ah.port_num = ep.port;
	return ah;
}

void connect_qp(Endpoint &ep, ibv_qp *qp, const Endpoint &peer, uint32_t peer_qpn, const ConnParams &p,
		uint32_t peer_psn)
{
	const bool ud = qp->qp_type == IBV_QPT_UD, rc = qp->qp_type == IBV_QPT_RC;
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = ep.port;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (ud) {
		a.qkey = p.qkey;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = p.access;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	if (int err = ibv_modify_qp(qp, &a, mask))
		throw_errno(ep.label + ": ibv_modify_qp(RESET -> INIT)", err);

	uint8_t rd = std::min<int>({p.max_rd_atomic, ep.dattr.max_qp_rd_atom,
				    ep.dattr.max_qp_init_rd_atom, peer.dattr.max_qp_rd_atom,
				    peer.dattr.max_qp_init_rd_atom});
	a = {};
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (!ud) {
		a.path_mtu = p.mtu;
		a.dest_qp_num = peer_qpn;
		a.rq_psn = peer_psn;
		a.ah_attr = ah_attr_to(ep, peer);
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	}
	if (rc) {
		a.max_dest_rd_atomic = rd;
		a.min_rnr_timer = p.min_rnr_timer;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	if (int err = ibv_modify_qp(qp, &a, mask))
		throw_errno(strf("%s: ibv_modify_qp(INIT -> RTR, dest qpn 0x%x, dgid %s, mtu %s)",
				 ep.label.c_str(), peer_qpn, gid_str(peer.gid).c_str(), mtu_str(p.mtu)),
			    err);

	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = p.psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (rc) {
		a.timeout = p.timeout;
		a.retry_cnt = p.retry_cnt;
		a.rnr_retry = p.rnr_retry;
		a.max_rd_atomic = rd;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (int err = ibv_modify_qp(qp, &a, mask))
		throw_errno(ep.label + ": ibv_modify_qp(RTR -> RTS)", err);
}

void connect_pair(Endpoint &a, Endpoint &b, const ConnParams &pa, const ConnParams &pb)
{
	connect_qp(a, b, pa, pb.psn);
	connect_qp(b, a, pb, pa.psn);
}

// --- common options ---------------------------------------------------------------

enum {
	O_DEVA = kCommonOptFirst,
	O_DEVB,
	O_GIDA,
	O_GIDB,
	O_IPV6,
	O_MTU,
	O_EVENT,
};

std::vector<option> common_longopts(std::initializer_list<option> extra)
{
	std::vector<option> v = {
		{"dev-a", required_argument, nullptr, O_DEVA}, {"dev-b", required_argument, nullptr, O_DEVB},
		{"gid-a", required_argument, nullptr, O_GIDA}, {"gid-b", required_argument, nullptr, O_GIDB},
		{"ipv6", no_argument, nullptr, O_IPV6},        {"mtu", required_argument, nullptr, O_MTU},
		{"use-event", no_argument, nullptr, O_EVENT},
	};
	v.insert(v.end(), extra.begin(), extra.end());
	if (v.back().name)
		v.push_back({nullptr, 0, nullptr, 0});
	return v;
}

bool parse_common_opt(CommonOptions &o, int c, const char *arg)
{
	switch (c) {
	case O_DEVA: o.a.name = arg; return true;
	case O_DEVB: o.b.name = arg; return true;
	case O_GIDA: o.a.gid = arg; return true;
	case O_GIDB: o.b.gid = arg; return true;
	case O_IPV6: o.ipv6 = true; return true;
	case O_MTU: o.mtu = std::stoi(arg); mtu_from_bytes(o.mtu); return true;
	case O_EVENT: o.use_event = true; return true;
	default: return false;
	}
}

int parse_args(int argc, char **argv, CommonOptions &o, const char *shortopts, std::initializer_list<option> extra,
	       void (*usage)(FILE *), const std::function<bool(int c, const char *arg)> &own)
{
	std::vector<option> longopts = common_longopts(extra);
	longopts.insert(longopts.end() - 1, {"help", no_argument, nullptr, 'h'});
	int c;
	while ((c = getopt_long(argc, argv, shortopts, longopts.data(), nullptr)) != -1) {
		if (parse_common_opt(o, c, optarg) || (c != 'h' && own(c, optarg)))
			continue;
		usage(c == 'h' ? stdout : stderr);
		return c == 'h' ? 0 : 2;
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (o.b.name.empty())
		o.b.name = o.a.name;
	return -1;
}

int parse_args(const char *prog, int argc, char **argv, CommonOptions &o, const char *shortopts,
	       std::initializer_list<option> extra, void (*usage)(FILE *),
	       const std::function<bool(int c, const char *arg)> &own)
{
	try {
		return parse_args(argc, argv, o, shortopts, extra, usage, own);
	} catch (const std::exception &e) {
		std::fprintf(stderr, "%s: bad argument: %s\n", prog, e.what());
		return 2;
	}
}

const char *const kCommonUsage =
	"  --dev-a NAME, --dev-b NAME  the two devices (default: the first device; B: A's)\n"
	"  --gid-a N|auto, --gid-b N|auto\n"
	"                       GID index (auto: the first RoCE v2 GID of the family)\n"
	"  --ipv6               IPv6 GIDs (auto), IPv4 otherwise\n"
	"  --mtu BYTES          path MTU (default: the smaller active_mtu)\n"
	"  --use-event          wait on completion channels instead of polling\n";

size_t parse_size(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		throw Error(strf("bad size '%s'", s));
	const std::string suf(end);
	unsigned shift = 0;
	if (suf == "K" || suf == "k" || suf == "KiB")
		shift = 10;
	else if (suf == "M" || suf == "m" || suf == "MiB")
		shift = 20;
	else if (suf == "G" || suf == "g" || suf == "GiB")
		shift = 30;
	else if (!suf.empty())
		throw Error(strf("bad size suffix in '%s' (K, M, G)", s));
	if (v > (static_cast<unsigned long long>(SIZE_MAX) >> shift))
		throw Error(strf("size '%s' is too large", s));
	return static_cast<size_t>(v << shift);
}

unsigned parse_name_list(const std::string &s, const char *const *names, size_t n, const char *what)
{
	std::string allowed;
	for (size_t k = 0; k < n; k++)
		allowed += (k ? "," : "") + std::string(names[k]);
	unsigned m = 0;
	size_t pos = 0;
	for (;;) {
		size_t c = s.find(',', pos);
		std::string w = s.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
		size_t k = 0;
		while (k < n && strcasecmp(w.c_str(), names[k]) != 0)
			k++;
		if (k == n)
			throw Error(strf("unknown %s '%s' (%s)", what, w.c_str(), allowed.c_str()));
		m |= 1u << k;
		if (c == std::string::npos)
			return m;
		pos = c + 1;
	}
}

// --- completions ------------------------------------------------------------------

int CqWaiter::poll_all(ibv_wc *wc, int *which, int max)
{
	int got = 0;
	for (size_t i = 0; i < cqs.size() && got < max; i++) {
		int n = ibv_poll_cq(cqs[i].cq, max - got, wc + got);
		if (n < 0)
			throw Error(strf("ibv_poll_cq failed: %d", n));
		for (int k = 0; k < n; k++)
			which[got + k] = static_cast<int>(i);
		got += n;
	}
	return got;
}

int CqWaiter::wait(ibv_wc *wc, int *which, int max, std::chrono::milliseconds timeout)
{
	int n = poll_all(wc, which, max);
	if (n || !use_event) {
		if (!n)
			std::this_thread::yield();
		return n;
	}
	for (auto &e : cqs)
		if (e.chan && ibv_req_notify_cq(e.cq, 0))
			throw_errno("ibv_req_notify_cq", errno);
	// A completion that came between the poll and the arming has no event.
	n = poll_all(wc, which, max);
	if (n)
		return n;
	std::vector<pollfd> pfds;
	for (auto &e : cqs) {
		if (!e.chan)
			continue;
		bool dup = false;
		for (auto &p : pfds)
			dup |= p.fd == e.chan->fd;
		if (!dup)
			pfds.push_back({e.chan->fd, POLLIN, 0});
	}
	int rc = ::poll(pfds.data(), pfds.size(), static_cast<int>(timeout.count()));
	if (rc < 0 && errno != EINTR)
		throw_errno("poll on the completion channels", errno);
	bool got_event = false;
	for (auto &p : pfds) {
		if (!(p.revents & POLLIN))
			continue;
		for (auto &e : cqs) {
			if (!e.chan || e.chan->fd != p.fd)
				continue;
			ibv_cq *ev_cq;
			void *ev_ctx;
			while (ibv_get_cq_event(e.chan, &ev_cq, &ev_ctx) == 0) {
				ibv_ack_cq_events(ev_cq, 1);
				events++;
				got_event = true;
			}
			break;
		}
	}
	n = poll_all(wc, which, max);
	if (n && !got_event)
		missed_events++;
	return n;
}

std::vector<ibv_wc> collect(Endpoint &ep, ibv_cq *cq, size_t n, std::chrono::milliseconds timeout)
{
	CqWaiter w;
	w.use_event = ep.use_event;
	w.cqs.push_back({cq, ep.chan.get()});
	std::vector<ibv_wc> out;
	auto start = Clock::now();
	while (out.size() < n) {
		ibv_wc wc[16];
		int which[16];
		auto left = timeout - std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
		if (left.count() <= 0)
			break;
		int got = w.wait(wc, which, static_cast<int>(std::min<size_t>(16, n - out.size())),
				 std::min(left, std::chrono::milliseconds(100)));
		out.insert(out.end(), wc, wc + got);
	}
	return out;
}

std::string recv_wc_mismatch(const ibv_wc &wc, uint32_t qpn, ibv_wc_opcode want, size_t len, bool imm,
			     uint32_t imm_data)
{
	if (wc.qp_num != qpn)
		return strf("receive completion qp_num 0x%x, expected 0x%x", wc.qp_num, qpn);
	if (wc.opcode != want)
		return strf("receive completion opcode %s, expected %s", wc_opcode_str(wc.opcode), wc_opcode_str(want));
	if (wc.byte_len != len)
		return strf("receive completion byte_len %u, expected %zu", wc.byte_len, len);
	if (!!(wc.wc_flags & IBV_WC_WITH_IMM) != imm)
		return strf("receive completion wc_flags 0x%x: IBV_WC_WITH_IMM %s", wc.wc_flags,
			    imm ? "missing" : "unexpected");
	if (imm && be32toh(wc.imm_data) != imm_data)
		return strf("receive completion imm_data 0x%08x, expected 0x%08x", be32toh(wc.imm_data), imm_data);
	return "";
}

int guarded_main(const char *prog, const std::function<int()> &body,
		 const std::function<int(const Error &)> &on_error)
{
	try {
		return body();
	} catch (const Error &e) {
		std::fprintf(stderr, "%s: %s\n", prog, e.what());
		return on_error ? on_error(e) : 2;
	} catch (const std::exception &e) {
		std::fprintf(stderr, "%s: bad argument: %s\n", prog, e.what());
		return 2;
	}
}

int run_named_cases(const std::vector<const char *> &names, const std::vector<std::string> &only,
		    const std::function<void(const std::string &name, Checker &c)> &run)
{
	for (auto &n : only)
		if (std::find(names.begin(), names.end(), n) == names.end())
			throw Error(strf("unknown case %s", n.c_str()));
	int failed = 0;
	for (const char *name : names) {
		if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end())
			continue;
		std::printf("--- %s\n", name);
		std::fflush(stdout);
		Checker c;
		run(name, c);
		std::printf("%s %s\n", c.ok ? "PASS" : "FAIL", name);
		std::fflush(stdout);
		failed += !c.ok;
	}
	return failed;
}

} // namespace vt
