// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Device and port queries: the kernel answers, the provider only formats. */
#include "provider.h"

#include <cstdio>

namespace sroce
{

int query_device_ex(struct ibv_context *ibctx,
		    const struct ibv_query_device_ex_input *input,
		    struct ibv_device_attr_ex *attr, size_t attr_size) noexcept
{
	struct ib_uverbs_ex_query_device_resp resp = {};
	size_t resp_size = sizeof(resp);

	const int ret = ibv_cmd_query_device_any(ibctx, input, attr, attr_size,
						 &resp, &resp_size);
	if (ret)
		return ret;

	/* The kernel reports fw_ver as a u64; show it as major.minor.sub. */
	const uint64_t fw = resp.base.fw_ver;
	(void)snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		       "%u.%u.%u", static_cast<unsigned>((fw >> 32) & 0xffff),
		       static_cast<unsigned>((fw >> 16) & 0xffff),
		       static_cast<unsigned>(fw & 0xffff));
	return 0;
}

int query_port(struct ibv_context *ibctx, uint8_t port,
	       struct ibv_port_attr *attr) noexcept
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(ibctx, port, attr, &cmd, sizeof(cmd));
}

} // namespace sroce
