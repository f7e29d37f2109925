// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// UDP source port, range validators, MTU helpers, host types.
#include <gtest/gtest.h>

#include <random>

extern "C" {
#include "sroce_proto.h"
#include "sroce_range.h"
#include "sroce_udp.h"
#include "sroce_wire.h"
}

static_assert(sizeof(u8) == 1 && sizeof(u16) == 2 && sizeof(u32) == 4 &&
	      sizeof(u64) == 8 && sizeof(s32) == 4 && sizeof(s64) == 8);

// The kernel helpers, re-typed from include/rdma/ib_verbs.h.
static u16 k_sport(u32 fl)
{
	u32 lo = fl & 0x03fff, hi = fl & 0xFC000;

	lo ^= hi >> 14;
	return (u16)(lo | 0xC000);
}

static u32 k_fl(u32 l, u32 r)
{
	u64 v = (u64)l * r;

	v ^= v >> 20;
	v ^= v >> 40;
	return (u32)(v & 0xFFFFF);
}

TEST(Udp, SourcePort)
{
	EXPECT_EQ(sroce_udp_sport(0), 0xc000);
	EXPECT_EQ(sroce_udp_sport(0x3fff), 0xffff);
	EXPECT_EQ(sroce_udp_sport(0x4000), 0xc001);
	EXPECT_EQ(sroce_udp_sport(0xfffff), 0xc000 | (0x3fff ^ 0x3f));
	EXPECT_EQ(sroce_udp_sport(0x12345), 0xc000 | (0x2345 ^ 0x4));
	std::mt19937 rng(3);
	for (int i = 0; i < 100000; i++) {
		u32 fl = rng() & 0xfffff, a = rng() & 0xffffff,
		    b = rng() & 0xffffff;

		ASSERT_EQ(sroce_udp_sport(fl), k_sport(fl));
		ASSERT_GE(sroce_udp_sport(fl), 0xc000);
		ASSERT_EQ(sroce_flow_label(a, b), k_fl(a, b));
		ASSERT_EQ(sroce_flow_label(a, b), sroce_flow_label(b, a));
		ASSERT_LE(sroce_flow_label(a, b), 0xfffffu);
		ASSERT_EQ(sroce_udp_sport_for_qp(0, a, b),
			  sroce_udp_sport_for_qp(0, b, a));
	}
}

TEST(Udp, FlowLabelKnownValues)
{
	EXPECT_EQ(sroce_flow_label(0, 12345), 0u);
	EXPECT_EQ(sroce_flow_label(1, 0x11), 0x11u);
	// 0x123456 * 0xabcdef = 0xc379a59ba4a; fold >>20 and >>40.
	u64 v = 0x123456ull * 0xabcdefull;
	EXPECT_EQ(v, 0xc379a59ba4aull);
	// v ^= v >> 20 gives 0xc379a9ac3ef; ^= v >> 40 (0xc); low 20 bits.
	EXPECT_EQ(sroce_flow_label(0x123456, 0xabcdef), 0xac3e3u);
	EXPECT_EQ(sroce_udp_sport_for_qp(0x4000, 1, 2), 0xc001);
}

TEST(Range, Within)
{
	const u64 M = ~0ull;

	EXPECT_TRUE(sroce_range_within(0x1000, 0x1000, 0x1000, 0x1000));
	EXPECT_TRUE(sroce_range_within(0x1000, 0x1000, 0x1fff, 1));
	EXPECT_FALSE(sroce_range_within(0x1000, 0x1000, 0x1fff, 2));
	EXPECT_FALSE(sroce_range_within(0x1000, 0x1000, 0xfff, 1));
	EXPECT_TRUE(sroce_range_within(0x1000, 0x1000, 0x2000, 0));
	EXPECT_FALSE(sroce_range_within(0x1000, 0x1000, 0x2001, 0));
	// va + len wraps to a small end inside the region.
	EXPECT_FALSE(sroce_range_within(0x1000, 0x1000, 0x1800, M - 0x100));
	EXPECT_FALSE(sroce_range_within(0, M, 1, M));
	// Region itself wraps.
	EXPECT_FALSE(sroce_range_within(M - 10, 20, M - 5, 1));
	EXPECT_TRUE(sroce_range_within(M - 10, 10, M - 5, 5));
	EXPECT_TRUE(sroce_range_within(0, M, 0, M));
}

TEST(Range, AtomicAndMessage)
{
	EXPECT_TRUE(sroce_atomic_aligned(0));
	EXPECT_TRUE(sroce_atomic_aligned(0x1008));
	for (u64 a = 1; a < 8; a++)
		EXPECT_FALSE(sroce_atomic_aligned(0x1000 + a));
	EXPECT_TRUE(sroce_msg_len_ok(0x80000000u, ~0ull));
	EXPECT_FALSE(sroce_msg_len_ok(0x80000001u, ~0ull));
	EXPECT_FALSE(sroce_msg_len_ok(4097, 4096));
	EXPECT_EQ(sroce_msg_pkts(0, 1024), 1u);
	EXPECT_EQ(sroce_msg_pkts(1, 1024), 1u);
	EXPECT_EQ(sroce_msg_pkts(1024, 1024), 1u);
	EXPECT_EQ(sroce_msg_pkts(1025, 1024), 2u);
	EXPECT_EQ(sroce_msg_pkts(0xffffffffu, 256), 0x1000000u);
	EXPECT_EQ(sroce_msg_pkts(0x80000000u, 4096), 0x80000u);
}

TEST(Mtu, ForNetdev)
{
	EXPECT_EQ(sroce_ib_mtu_bytes(0), 0u);
	EXPECT_EQ(sroce_ib_mtu_bytes(1), 256u);
	EXPECT_EQ(sroce_ib_mtu_bytes(5), 4096u);
	EXPECT_EQ(sroce_ib_mtu_bytes(6), 0u);
	EXPECT_EQ(sroce_ib_mtu_for_netdev(1500), SROCE_IB_MTU_1024);
	EXPECT_EQ(sroce_ib_mtu_for_netdev(9000), SROCE_IB_MTU_4096);
	EXPECT_EQ(sroce_ib_mtu_for_netdev(4096 + 84), SROCE_IB_MTU_4096);
	EXPECT_EQ(sroce_ib_mtu_for_netdev(4096 + 83), SROCE_IB_MTU_2048);
	EXPECT_EQ(sroce_ib_mtu_for_netdev(340), SROCE_IB_MTU_256);
	EXPECT_EQ(sroce_ib_mtu_for_netdev(339), SROCE_IB_MTU_NONE);
	EXPECT_EQ(sroce_ib_mtu_for_netdev(0), SROCE_IB_MTU_NONE);
}

TEST(Wire, BigEndian)
{
	u8 b[8];

	sroce_put_be64(b, 0x0102030405060708ull);
	EXPECT_EQ(b[0], 1);
	EXPECT_EQ(b[7], 8);
	EXPECT_EQ(sroce_get_be64(b), 0x0102030405060708ull);
	EXPECT_EQ(sroce_get_be32(b + 1), 0x02030405u);
	EXPECT_EQ(sroce_get_be24(b + 5), 0x060708u);
	EXPECT_EQ(sroce_get_be16(b + 6), 0x0708);
	sroce_put_le32(b, 0xb9201af7);
	EXPECT_EQ(b[0], 0xf7);
	EXPECT_EQ(sroce_get_le32(b), 0xb9201af7u);
}
