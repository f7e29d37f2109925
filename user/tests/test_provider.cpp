// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "provider.h"
#include "test_util.h"
#include "util.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <sstream>
#include <string>

namespace
{

TEST(Provider, MatchTableIsDriverIdPlusSentinel)
{
	const auto &t = sroce::match_table;
	static_assert(std::size(sroce::match_table) == 2);

	EXPECT_EQ(t[0].kind, VERBS_MATCH_DRIVER_ID);
	EXPECT_EQ(t[0].u.driver_id, uint64_t{SROCE_DRIVER_ID});
	EXPECT_EQ(t[0].u.driver_id, 0x5352U);
	EXPECT_EQ(t[0].driver_data, nullptr);

	EXPECT_TRUE(sroce::test::all_zero(&t[1], sizeof(t[1])))
		<< "sentinel not zeroed";
	EXPECT_EQ(sroce::device_ops.match_table, t);
}

TEST(Provider, DeviceOps)
{
	const auto &ops = sroce::device_ops;

	EXPECT_STREQ(ops.name, "sroce");
	EXPECT_EQ(ops.match_min_abi_version, 1U);
	EXPECT_EQ(ops.match_max_abi_version, 1U);
	EXPECT_EQ(ops.match_min_abi_version, SROCE_UVERBS_ABI_VERSION);
	/* A match_device hook would be called for every device: none. */
	EXPECT_EQ(ops.match_device, nullptr);
	EXPECT_EQ(ops.static_providers, nullptr);
	EXPECT_EQ(ops.import_context, nullptr);
	EXPECT_NE(ops.alloc_context, nullptr);
	EXPECT_NE(ops.alloc_device, nullptr);
	EXPECT_NE(ops.uninit_device, nullptr);
}

TEST(Provider, AllocDeviceIsZeroedAndRemembersAbi)
{
	auto sysfs = sroce::c_zalloc<verbs_sysfs_dev>();
	sysfs->abi_ver = SROCE_UVERBS_ABI_VERSION;
	sysfs->driver_id = SROCE_DRIVER_ID;

	verbs_device *vdev = sroce::device_ops.alloc_device(sysfs.get());
	ASSERT_NE(vdev, nullptr);
	/* libibverbs asserts its own parts arrive zeroed. */
	EXPECT_TRUE(sroce::test::all_zero(vdev, sizeof(*vdev)));
	EXPECT_EQ(sroce::to_dev(&vdev->device)->abi_version,
		  SROCE_UVERBS_ABI_VERSION);
	sroce::device_ops.uninit_device(vdev);
}

TEST(Provider, ContextOpsAreTheOnesWeImplement)
{
	const auto &o = sroce::context_ops;

	EXPECT_NE(o.alloc_pd, nullptr);
	EXPECT_NE(o.dealloc_pd, nullptr);
	EXPECT_NE(o.free_context, nullptr);
	EXPECT_NE(o.query_device_ex, nullptr);
	EXPECT_NE(o.query_port, nullptr);
	EXPECT_NE(o.reg_mr, nullptr);
	EXPECT_NE(o.dereg_mr, nullptr);
	EXPECT_NE(o.create_cq, nullptr);
	EXPECT_NE(o.create_cq_ex, nullptr);
	EXPECT_NE(o.poll_cq, nullptr);
	EXPECT_NE(o.req_notify_cq, nullptr);
	EXPECT_NE(o.resize_cq, nullptr);
	EXPECT_NE(o.destroy_cq, nullptr);
	EXPECT_NE(o.create_qp, nullptr);
	EXPECT_NE(o.create_qp_ex, nullptr);
	EXPECT_NE(o.modify_qp, nullptr);
	EXPECT_NE(o.query_qp, nullptr);
	EXPECT_NE(o.destroy_qp, nullptr);
	EXPECT_NE(o.post_send, nullptr);
	EXPECT_NE(o.post_recv, nullptr);
	EXPECT_NE(o.create_ah, nullptr);
	EXPECT_NE(o.destroy_ah, nullptr);
	EXPECT_NE(o.create_srq, nullptr);
	EXPECT_NE(o.modify_srq, nullptr);
	EXPECT_NE(o.query_srq, nullptr);
	EXPECT_NE(o.destroy_srq, nullptr);
	EXPECT_NE(o.post_srq_recv, nullptr);
	/* XRC (xrc.cpp); create_srq_ex also takes basic SRQs. */
	EXPECT_NE(o.open_xrcd, nullptr);
	EXPECT_NE(o.close_xrcd, nullptr);
	EXPECT_NE(o.create_srq_ex, nullptr);
	EXPECT_NE(o.get_srq_num, nullptr);
	EXPECT_NE(o.open_qp, nullptr);
	/* Not yet: libibverbs' EOPNOTSUPP defaults must stay in place. */
	EXPECT_EQ(o.post_srq_ops, nullptr);
	/* Windows (mw.cpp): a bad type is refused before any command. */
	ASSERT_NE(o.alloc_mw, nullptr);
	errno = 0;
	EXPECT_EQ(o.alloc_mw(nullptr, static_cast<ibv_mw_type>(3)), nullptr);
	EXPECT_EQ(errno, EINVAL);
	EXPECT_NE(o.dealloc_mw, nullptr);
	EXPECT_NE(o.bind_mw, nullptr);
	EXPECT_NE(o.attach_mcast, nullptr);
	EXPECT_NE(o.detach_mcast, nullptr);
	EXPECT_NE(o.rereg_mr, nullptr);
}

TEST(Provider, ToCtxRoundTrips)
{
	auto ctx = sroce::c_zalloc<sroce::context>();
	ctx->ibv_ctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	EXPECT_EQ(sroce::to_ctx(&ctx->ibv_ctx.context), ctx.get());
}

TEST(Provider, DlopenNowSucceeds)
{
	void *h = dlopen(SROCE_PROVIDER_PATH, RTLD_NOW | RTLD_LOCAL);
	ASSERT_NE(h, nullptr) << dlerror();
	/* Our internals are not exported (check_symbols.sh checks it all). */
	EXPECT_EQ(dlsym(h, "_ZN5sroce10device_opsE"), nullptr);
	EXPECT_EQ(dlsym(h, "_ZN5sroce15should_registerEv"), nullptr);
	/* The private import resolves to the libibverbs this process uses. */
	EXPECT_EQ(dlsym(h, "verbs_register_driver_" SROCE_PABI_STR),
		  dlsym(RTLD_DEFAULT, "verbs_register_driver_" SROCE_PABI_STR));
	EXPECT_EQ(dlclose(h), 0);
}

/*
 * The .driver file libibverbs reads: under the distribution's prefix the
 * bare name (the library sits in libibverbs' own provider directory);
 * under any other prefix the installed library's path without the
 * "-rdmav<PABI>.so" that libibverbs appends.
 */
TEST(Provider, DriverFile)
{
	std::ifstream f(SROCE_DRIVER_FILE);
	ASSERT_TRUE(f.good()) << SROCE_DRIVER_FILE;
	std::stringstream ss;
	ss << f.rdbuf();
	if (std::string(SROCE_INSTALL_PREFIX) == "/usr")
		EXPECT_EQ(ss.str(), "driver sroce\n");
	else
		EXPECT_EQ(ss.str(), "driver " SROCE_INSTALL_LIBDIR
				    "/libibverbs/libsroce\n");
}

TEST(Provider, OutputName)
{
	const std::string path = SROCE_PROVIDER_PATH;
	EXPECT_TRUE(path.ends_with("/libsroce-rdmav" SROCE_PABI_STR ".so"))
		<< path;
}

} // namespace
