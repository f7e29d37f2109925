// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "abi_guard.h"
#include "config.h"

#include <gtest/gtest.h>

#include <climits>
#include <string>

namespace
{

using sroce::abi_guard::check_loaded;
using sroce::abi_guard::is_libibverbs_path;
using sroce::abi_guard::judge;
using sroce::abi_guard::verdict;

constexpr const char *want = "libibverbs.so.1.14.44.0";
constexpr const char *mapped = "/lib/x86_64-linux-gnu/libibverbs.so.1";

TEST(AbiGuard, ExpectedNameComesFromTheBuild)
{
	EXPECT_TRUE(std::string(SROCE_LIBIBVERBS_FILE)
			    .starts_with("libibverbs.so.1."));
}

TEST(AbiGuard, RecognisesLibibverbsPaths)
{
	EXPECT_TRUE(is_libibverbs_path(mapped));
	EXPECT_TRUE(is_libibverbs_path("libibverbs.so.1"));
	EXPECT_TRUE(is_libibverbs_path("/opt/x/libibverbs.so.1.14.45.0"));
	EXPECT_FALSE(is_libibverbs_path("/usr/lib/libibverbs.so"));
	EXPECT_FALSE(is_libibverbs_path("/usr/lib/libibverbs.so.10"));
	EXPECT_FALSE(is_libibverbs_path("/usr/lib/libibverbs.so.1x"));
	EXPECT_FALSE(is_libibverbs_path("/usr/lib/xlibibverbs.so.1"));
	EXPECT_FALSE(is_libibverbs_path("/libibverbs.so.1/libfoo.so"));
	EXPECT_FALSE(is_libibverbs_path(""));
}

TEST(AbiGuard, AcceptsTheExactRelease)
{
	EXPECT_EQ(judge(mapped,
			"/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0",
			want),
		  verdict::ok);
	EXPECT_EQ(judge(mapped, "libibverbs.so.1.14.44.0", want), verdict::ok);
}

TEST(AbiGuard, RefusesOtherReleasesOfTheSamePrivateAbi)
{
	/* rdma-core 45..56 still say IBVERBS_PRIVATE_34. */
	for (const char *other :
	     {"/usr/lib/libibverbs.so.1.14.45.0",
	      "/usr/lib/libibverbs.so.1.14.56.0",
	      "/usr/lib/libibverbs.so.1.14.34.0",
	      "/usr/lib/libibverbs.so.1.14.44.1",
	      "/usr/lib/libibverbs.so.1.14.44",
	      "/usr/lib/libibverbs.so.1.14.44.0.bak",
	      "/usr/lib/xlibibverbs.so.1.14.44.0", "/usr/lib/libibverbs.so.1"})
		EXPECT_EQ(judge(mapped, other, want), verdict::wrong_file)
			<< other;
}

TEST(AbiGuard, RefusesWhenUnknown)
{
	EXPECT_EQ(judge(nullptr, nullptr, want), verdict::not_loaded);
	EXPECT_EQ(judge(mapped, nullptr, want), verdict::unresolvable);
	EXPECT_EQ(judge(mapped, "/usr/lib/libibverbs.so.1.14.44.0", ""),
		  verdict::wrong_file);
}

TEST(AbiGuard, DirectoryDoesNotMatter)
{
	EXPECT_EQ(judge(mapped, "/opt/libibverbs.so.1.14.44.0/x", want),
		  verdict::wrong_file);
	EXPECT_EQ(judge(mapped, "/opt/rdma/lib/libibverbs.so.1.14.44.0", want),
		  verdict::ok);
}

/* This test binary links libibverbs, so the real check must see it. */
TEST(AbiGuard, ThisProcessPassesTheRealCheck)
{
	char resolved[PATH_MAX];
	EXPECT_EQ(
		check_loaded(SROCE_LIBIBVERBS_FILE, resolved, sizeof(resolved)),
		verdict::ok)
		<< resolved;
	EXPECT_TRUE(std::string(resolved).ends_with(SROCE_LIBIBVERBS_FILE))
		<< resolved;
	EXPECT_EQ(check_loaded("libibverbs.so.1.14.45.0", resolved,
			       sizeof(resolved)),
		  verdict::wrong_file);
}

} // namespace
