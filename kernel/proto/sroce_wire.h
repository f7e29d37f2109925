/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Byte-wise loads and stores for wire fields. The IBTA headers are
 * big-endian and not naturally aligned behind a UDP header (e.g. RETH VA sits
 * at offset 12 of the BTH), so the core never casts a buffer to a struct and
 * never depends on the host byte order.
 */
#ifndef SROCE_WIRE_H
#define SROCE_WIRE_H

#include "sroce_proto.h"

static inline u16 sroce_get_be16(const u8 *p)
{
	return (u16)((u16)p[0] << 8 | p[1]);
}

static inline u32 sroce_get_be24(const u8 *p)
{
	return (u32)p[0] << 16 | (u32)p[1] << 8 | p[2];
}

static inline u32 sroce_get_be32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

static inline u64 sroce_get_be64(const u8 *p)
{
	return (u64)sroce_get_be32(p) << 32 | sroce_get_be32(p + 4);
}

static inline u32 sroce_get_le32(const u8 *p)
{
	return (u32)p[3] << 24 | (u32)p[2] << 16 | (u32)p[1] << 8 | p[0];
}

static inline void sroce_put_be16(u8 *p, u16 v)
{
	p[0] = (u8)(v >> 8);
	p[1] = (u8)v;
}

static inline void sroce_put_be24(u8 *p, u32 v)
{
	p[0] = (u8)(v >> 16);
	p[1] = (u8)(v >> 8);
	p[2] = (u8)v;
}

static inline void sroce_put_be32(u8 *p, u32 v)
{
	p[0] = (u8)(v >> 24);
	p[1] = (u8)(v >> 16);
	p[2] = (u8)(v >> 8);
	p[3] = (u8)v;
}

static inline void sroce_put_be64(u8 *p, u64 v)
{
	sroce_put_be32(p, (u32)(v >> 32));
	sroce_put_be32(p + 4, (u32)v);
}

static inline void sroce_put_le32(u8 *p, u32 v)
{
	p[0] = (u8)v;
	p[1] = (u8)(v >> 8);
	p[2] = (u8)(v >> 16);
	p[3] = (u8)(v >> 24);
}

#endif /* SROCE_WIRE_H */
