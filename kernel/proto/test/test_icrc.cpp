// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// ICRC: known answers, scapy vectors, masking and incremental use.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>

#include "test_util.hpp"

namespace {

struct icrc_vector {
	const char *name;
	const u8 *data;
	size_t len;
};

#include "icrc_vectors.inc"

// Bit-at-a-time CRC-32, to check the slice-by-8 host table.
u32 crc32_bitwise(u32 crc, const u8 *p, size_t n)
{
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ ((crc & 1) ? 0xedb88320u : 0);
	}
	return crc;
}

// From the reference notes, section 1.5.
const char kSendOnlyIp[] =
	"4502003c123440004011a527c0a80101c0a80102c12312b70028000004"
	"00ffff0000001180000001000102030405060708090a0b0c0d0e0f";

bytes cnp_ip()
{
	bytes b = from_hex(kSendOnlyIp);

	b.resize(28);
	bytes bth = from_hex("8100ffff400000d200000000");
	b.insert(b.end(), bth.begin(), bth.end());
	b.insert(b.end(), 16, 0);
	return b;
}

u32 icrc_of(const bytes &ip)
{
	u32 v = 0;

	EXPECT_TRUE(sroce_icrc_packet(ip.data(), (u32)ip.size(), &v));
	return v;
}

// Through the split API with the IP version fixed by the caller, so that
// flipping version/IHL bits still exercises coverage, not the pre-checks.
u32 icrc_split(const bytes &ip, bool v6)
{
	u32 il = v6 ? 40 : 20;
	u32 crc = sroce_icrc_hdrs(ip.data(), v6, ip.data() + il,
				  ip.data() + il + 8);

	crc = sroce_icrc_update(crc, ip.data() + il + 20,
				(u32)ip.size() - il - 20);
	return sroce_icrc_final(crc);
}

std::set<size_t> masked_bytes(bool v6)
{
	if (v6)	// TC+flow label (bytes 1..3, low nibble of 0), hop limit
		return { 1, 2, 3, 7, 46, 47, 52 };
	return { 1, 8, 10, 11, 26, 27, 32 };	// TOS TTL csum, UDP csum, BTH[4]
}

} // namespace

TEST(Crc32, MatchesBitwiseAndCheckValue)
{
	std::mt19937 rng(7);
	bytes b(300);

	for (auto &x : b)
		x = (u8)rng();
	for (size_t n = 0; n <= b.size(); n++)
		for (size_t off : {0, 1, 3, 7})
			if (off + n <= b.size()) {
				ASSERT_EQ(sroce_crc32_le(0x12345678, &b[off], n),
					  crc32_bitwise(0x12345678, &b[off], n));
			}
	EXPECT_EQ(~sroce_crc32_le(~0u, "123456789", 9), 0xcbf43926u);
	const u8 lrh[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	EXPECT_EQ(sroce_crc32_le(~0u, lrh, 8), SROCE_ICRC_SEED);
}

TEST(Icrc, ReferenceKnownAnswers)
{
	u8 out[4];
	bytes ip = from_hex(kSendOnlyIp);

	sroce_icrc_put(out, icrc_of(ip));
	EXPECT_EQ(bytes(out, out + 4), from_hex("f71a20b9"));
	EXPECT_EQ(icrc_of(ip), 0xb9201af7u);

	sroce_icrc_put(out, icrc_of(cnp_ip()));
	EXPECT_EQ(bytes(out, out + 4), from_hex("1dedd217"));

	ip.insert(ip.end(), out, out + 4);
	// the CNP's ICRC after the SEND: a corrupted or foreign packet
	EXPECT_EQ(sroce_icrc_verify(ip.data(), (u32)ip.size()),
		  SROCE_ICRC_MISMATCH);
	bytes c = cnp_ip();
	c.insert(c.end(), out, out + 4);
	EXPECT_EQ(sroce_icrc_verify(c.data(), (u32)c.size()), SROCE_ICRC_OK);
}

TEST(Icrc, ScapyAndIpv6Vectors)
{
	ASSERT_GE(sizeof(icrc_vectors) / sizeof(icrc_vectors[0]), 40u);
	for (const auto &v : icrc_vectors) {
		bytes ip(v.data, v.data + v.len);
		u32 n = (u32)v.len - 4;
		u32 got;

		ASSERT_TRUE(sroce_icrc_packet(ip.data(), n, &got)) << v.name;
		EXPECT_EQ(got, sroce_icrc_get(&ip[n])) << v.name;
		EXPECT_EQ(sroce_icrc_verify(ip.data(), (u32)ip.size()),
			  SROCE_ICRC_OK) << v.name;
		EXPECT_EQ(icrc_split(bytes(ip.begin(), ip.begin() + n),
				     ip[0] >> 4 == 6), got) << v.name;

		// The UDP payload parses and its length fields agree.
		u32 il = ip[0] >> 4 == 6 ? 40 : 20;
		struct sroce_pkt pkt;
		EXPECT_EQ(sroce_pkt_parse(&ip[il + 8], (u32)v.len - il - 8,
					  &pkt), SROCE_PARSE_OK) << v.name;
	}
}

TEST(Icrc, IncrementalEqualsOneShot)
{
	for (const auto &v : icrc_vectors) {
		bool v6 = v.data[0] >> 4 == 6;
		u32 hl = (v6 ? 40 : 20) + 8 + 12;
		u32 n = (u32)v.len - 4;
		u32 want = sroce_icrc_get(v.data + n);

		for (u32 cut = hl; cut <= n; cut++) {
			u32 crc = sroce_icrc_hdrs(v.data, v6,
						  v.data + hl - 20,
						  v.data + hl - 12);
			crc = sroce_icrc_update(crc, v.data + hl, cut - hl);
			crc = sroce_icrc_update(crc, v.data + cut, n - cut);
			ASSERT_EQ(sroce_icrc_final(crc), want) << v.name;
		}
	}
}

TEST(Icrc, VariantFieldsAreMaskedEverythingElseCovered)
{
	for (const auto &v : icrc_vectors) {
		bool v6 = v.data[0] >> 4 == 6;
		bytes ip(v.data, v.data + v.len - 4);
		u32 want = icrc_split(ip, v6);
		auto masked = masked_bytes(v6);

		for (size_t i = 0; i < ip.size(); i++) {
			for (u8 bit = 1; bit; bit = (u8)(bit << 1)) {
				bytes m = ip;
				bool is_masked = masked.count(i) ||
						 (v6 && i == 0 && bit < 0x10);

				m[i] ^= bit;
				if (is_masked) {
					ASSERT_EQ(icrc_split(m, v6), want)
						<< v.name << " byte " << i;
				} else {
					ASSERT_NE(icrc_split(m, v6), want)
						<< v.name << " byte " << i;
				}
			}
		}
	}
}

TEST(Icrc, SwitchRewritesKeepIcrcValid)
{
	bytes ip = from_hex(kSendOnlyIp);
	u32 want = icrc_of(ip);

	ip[1] = 0x03;			// ECN CE
	ip[8] = 1;			// TTL after many hops
	ip[10] = 0x12;			// recomputed checksum
	ip[11] = 0x34;
	ip[26] = 0xab;			// UDP checksum filled in
	ip[27] = 0xcd;
	ip[32] = 0xc0;			// FECN + BECN
	EXPECT_EQ(icrc_of(ip), want);
	ip[21] ^= 1;			// UDP source port is covered
	EXPECT_NE(icrc_of(ip), want);
}

TEST(Icrc, PacketRejectsWhatItCannotMask)
{
	bytes ip = from_hex(kSendOnlyIp);
	u32 v;

	EXPECT_FALSE(sroce_icrc_packet(ip.data(), 0, &v));
	EXPECT_FALSE(sroce_icrc_packet(ip.data(), 39, &v));
	EXPECT_TRUE(sroce_icrc_packet(ip.data(), 40, &v));
	bytes m = ip;
	m[0] = 0x46;			// IPv4 options
	EXPECT_FALSE(sroce_icrc_packet(m.data(), (u32)m.size(), &v));
	m = ip;
	m[0] = 0x55;
	EXPECT_FALSE(sroce_icrc_packet(m.data(), (u32)m.size(), &v));
	m = ip;
	m[9] = 6;			// TCP
	EXPECT_FALSE(sroce_icrc_packet(m.data(), (u32)m.size(), &v));
	for (const auto &vec : icrc_vectors) {
		if (vec.data[0] >> 4 != 6)
			continue;
		m.assign(vec.data, vec.data + vec.len);
		EXPECT_FALSE(sroce_icrc_packet(m.data(), 59, &v));
		EXPECT_TRUE(sroce_icrc_packet(m.data(), 60, &v));
		m[6] = 0;		// hop-by-hop extension header
		EXPECT_FALSE(sroce_icrc_packet(m.data(), (u32)m.size(), &v));
		break;
	}
	// shorter than an ICRC: malformed, not a mismatch
	EXPECT_EQ(sroce_icrc_verify(ip.data(), 3), SROCE_ICRC_MALFORMED);
}
