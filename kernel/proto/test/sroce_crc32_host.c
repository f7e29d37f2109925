// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host stand-in for the kernel's crc32_le(): slice-by-8 over tables built
 * on first use. Tests compare it against a bitwise reference, so a table
 * bug cannot hide behind matching known-answer vectors.
 */
#include "sroce_crc32.h"

#define SROCE_CRC32_POLY 0xEDB88320u

static u32 crc_tab[8][256];
static bool crc_tab_ready;

static void crc_tab_init(void)
{
	u32 i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c >> 1) ^ ((c & 1) ? SROCE_CRC32_POLY : 0);
		crc_tab[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			crc_tab[j][i] = (crc_tab[j - 1][i] >> 8) ^
					crc_tab[0][crc_tab[j - 1][i] & 0xff];
	crc_tab_ready = true;
}

u32 sroce_crc32_le(u32 crc, const void *p, size_t len)
{
	const u8 *b = p;
	u32 lo, hi;

	if (!crc_tab_ready)
		crc_tab_init();
	while (len >= 8) {
		lo = crc ^ ((u32)b[0] | (u32)b[1] << 8 | (u32)b[2] << 16 |
			    (u32)b[3] << 24);
		hi = (u32)b[4] | (u32)b[5] << 8 | (u32)b[6] << 16 |
		     (u32)b[7] << 24;
		crc = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		      crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
		      crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
		      crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
		b += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *b++) & 0xff];
	return crc;
}
