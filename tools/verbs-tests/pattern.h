// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Position-dependent byte streams: byte k of stream `tag` is a function of
// (tag, k) only, so a byte that lands at the wrong place, comes from another
// message or is left over from an earlier one is detected.
#pragma once

#include "common.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace vt {

inline uint64_t stream_word(uint64_t tag, uint64_t wi)
{
	return mix64(tag ^ (wi * 0xd6e8feb86659fd93ULL));
}

inline uint8_t stream_byte(uint64_t tag, uint64_t k)
{
	return static_cast<uint8_t>(stream_word(tag, k >> 3) >> ((k & 7) * 8));
}

// dst[0..len) = stream(tag)[k0..k0+len)
inline void fill_stream(uint8_t *dst, size_t len, uint64_t tag, uint64_t k0)
{
	size_t i = 0;
	for (; i < len && ((k0 + i) & 7); i++)
		dst[i] = stream_byte(tag, k0 + i);
	for (; i + 8 <= len; i += 8) {
		uint64_t w = stream_word(tag, (k0 + i) >> 3);
		std::memcpy(dst + i, &w, 8); // little endian: byte j of w is byte k+j
	}
	for (; i < len; i++)
		dst[i] = stream_byte(tag, k0 + i);
}

// Index of the first byte of src[0..len) that differs from stream(tag) at
// k0.., or len if all match.
inline size_t check_stream(const uint8_t *src, size_t len, uint64_t tag, uint64_t k0)
{
	size_t i = 0;
	for (; i < len && ((k0 + i) & 7); i++)
		if (src[i] != stream_byte(tag, k0 + i))
			return i;
	for (; i + 8 <= len; i += 8) {
		uint64_t w = stream_word(tag, (k0 + i) >> 3), g;
		std::memcpy(&g, src + i, 8);
		if (g != w) {
			for (size_t j = 0; j < 8; j++)
				if (src[i + j] != stream_byte(tag, k0 + i + j))
					return i + j;
		}
	}
	for (; i < len; i++)
		if (src[i] != stream_byte(tag, k0 + i))
			return i;
	return len;
}

// How many bytes of src[0..len) differ from the stream.
inline size_t count_mismatch(const uint8_t *src, size_t len, uint64_t tag, uint64_t k0)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += src[i] != stream_byte(tag, k0 + i);
	return n;
}

// Bytes [off, off+len) of a slot that must hold message bytes (the stream at
// msg_off, or literal bytes).
struct Piece {
	size_t off, len;
	uint64_t msg_off;
	bool literal = false;
	uint8_t lit[8] = {};
};

// How random_pieces cuts, in percent: the odds of a single piece and of a
// cut within `edge` bytes of either end of the message (the interesting
// cuts); each piece is followed by a gap of 0..max_gap bytes half the time.
struct CutOdds {
	unsigned single, near_edge;
	size_t edge, max_gap;
};

// cap bytes of a message in 1..max_pieces pieces (no more than cap, each
// at least one byte, at distinct random cuts), laid out in message order
// from base with random gaps; *end is past the last piece and its gap.
// cap 0: no pieces.
inline std::vector<Piece> random_pieces(Rng &r, size_t cap, size_t max_pieces, size_t base,
					size_t *end, const CutOdds &odds)
{
	std::vector<Piece> v;
	*end = base;
	if (cap == 0)
		return v;
	size_t n = std::min<size_t>(r.range(1, std::max<size_t>(max_pieces, 1)), cap);
	if (r.chance(odds.single))
		n = 1;
	std::vector<size_t> cuts; // n-1 distinct cut points in (0, cap)
	while (cuts.size() + 1 < n) {
		size_t c;
		if (r.chance(odds.near_edge) && cap > 2) {
			const size_t e = std::min<size_t>(cap - 1, odds.edge);
			c = r.chance(50) ? r.range(1, e) : cap - r.range(1, e);
		} else {
			c = r.range(1, cap - 1);
		}
		if (std::find(cuts.begin(), cuts.end(), c) == cuts.end())
			cuts.push_back(c);
	}
	std::sort(cuts.begin(), cuts.end());
	cuts.push_back(cap);
	size_t pos = base, prev = 0;
	for (size_t c : cuts) {
		Piece p{};
		p.off = pos;
		p.len = c - prev;
		p.msg_off = prev;
		v.push_back(p);
		pos += p.len + (r.chance(50) ? r.range(0, odds.max_gap) : 0);
		prev = c;
	}
	*end = pos;
	return v;
}

// " NAME[ OFF+LEN ... ]" of pieces (their offsets and lengths), or nothing
// when there are none: a work request's SGE list in a failure's description.
inline std::string pieces_str(const char *name, const std::vector<Piece> &pieces)
{
	if (pieces.empty())
		return "";
	std::string s = std::string(name) + "[";
	for (auto &p : pieces)
		s += strf(" %zu+%zu", p.off, p.len);
	return s + " ]";
}

} // namespace vt
