/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Small RAII helpers for memory shared with C code. */
#ifndef SROCE_UTIL_H
#define SROCE_UTIL_H

#include <cstdlib>
#include <memory>
#include <type_traits>

namespace sroce
{

struct free_deleter {
	void operator()(void *p) const noexcept
	{
		free(p); // NOLINT(cppcoreguidelines-no-malloc)
	}
};

/* Memory that libibverbs or C code may also free() or calloc(). */
template <typename T> using c_ptr = std::unique_ptr<T, free_deleter>;

/*
 * Zeroed storage for a C-compatible object. calloc() implicitly creates it
 * (C++20 [intro.object]): only implicit-lifetime, standard-layout types.
 */
template <typename T> c_ptr<T> c_zalloc() noexcept
{
	static_assert(std::is_standard_layout_v<T>);
	static_assert(std::is_trivially_destructible_v<T>);
	// NOLINTNEXTLINE(cppcoreguidelines-no-malloc)
	return c_ptr<T>(static_cast<T *>(calloc(1, sizeof(T))));
}

} // namespace sroce

#endif /* SROCE_UTIL_H */
