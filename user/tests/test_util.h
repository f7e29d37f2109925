/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Byte-level helpers: the ABI tests compare raw memory on purpose. */
#ifndef SROCE_TEST_UTIL_H
#define SROCE_TEST_UTIL_H

#include <cstddef>
#include <cstring>

namespace sroce::test
{

inline bool same_bytes(const void *a, const void *b, size_t n)
{
	return memcmp(a, b, n) == 0;
}

inline bool all_zero(const void *p, size_t n)
{
	const auto *c = static_cast<const unsigned char *>(p);
	for (size_t i = 0; i < n; i++)
		if (c[i] != 0)
			return false;
	return true;
}

} // namespace sroce::test

#endif /* SROCE_TEST_UTIL_H */
