/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * CRC-32 (reflected polynomial 0xEDB88320) with the kernel's crc32_le()
 * semantics: the caller seeds it and inverts the result, no hidden pre- or
 * post-inversion. The host build links test/sroce_crc32_host.c instead.
 */
#ifndef SROCE_CRC32_H
#define SROCE_CRC32_H

#include "sroce_proto.h"

#ifdef SROCE_PROTO_HOST
u32 sroce_crc32_le(u32 crc, const void *p, size_t len);
#else
#include <linux/crc32.h>

static inline u32 sroce_crc32_le(u32 crc, const void *p, size_t len)
{
	return crc32_le(crc, p, len);
}
#endif

#endif /* SROCE_CRC32_H */
