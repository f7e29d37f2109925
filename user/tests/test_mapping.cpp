// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "mapping.h"

#include <gtest/gtest.h>

#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

namespace
{

struct memfd {
	int fd;
	explicit memfd(size_t len) : fd(memfd_create("sroce-test", MFD_CLOEXEC))
	{
		EXPECT_GE(fd, 0);
		EXPECT_EQ(ftruncate(fd, static_cast<off_t>(len)), 0);
	}
	~memfd()
	{
		close(fd);
	}
	memfd(const memfd &) = delete;
	memfd &operator=(const memfd &) = delete;
};

TEST(Mapping, MapsSharedAndUnmapsOnce)
{
	const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
	memfd f(2 * page);

	sroce::mapping a = sroce::mapping::map(f.fd, page, page);
	ASSERT_TRUE(a);
	EXPECT_EQ(a.size(), page);
	memcpy(a.get(), "ring", 5);

	sroce::mapping b = sroce::mapping::map(f.fd, page, page);
	ASSERT_TRUE(b);
	EXPECT_STREQ(static_cast<const char *>(b.get()), "ring")
		<< "MAP_SHARED";

	void *addr = a.get();
	sroce::mapping moved(std::move(a));
	EXPECT_FALSE(a); // NOLINT(bugprone-use-after-move)
	EXPECT_EQ(moved.get(), addr);
	moved.reset();
	EXPECT_FALSE(moved);
	/* The pages are really gone: mincore() fails on unmapped memory. */
	unsigned char vec = 0;
	EXPECT_EQ(mincore(addr, page, &vec), -1);
}

TEST(Mapping, FailuresAreEmpty)
{
	EXPECT_FALSE(sroce::mapping::map(-1, 0, 4096));
	EXPECT_FALSE(sroce::mapping::map(0, 0, 0));
	EXPECT_FALSE(sroce::mapping::map(0, UINT64_MAX, 4096));
}

} // namespace
