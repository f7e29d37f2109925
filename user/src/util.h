/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Small RAII helpers for memory shared with C code. */
#ifndef SROCE_UTIL_H
#define SROCE_UTIL_H

#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

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

/*
 * Provider objects with C++ members (locks, mappings) that embed a
 * libibverbs object first. They live in calloc()ed memory, so the C parts
 * start zeroed whatever the constructor leaves out, and are destroyed and
 * freed by obj_ptr. No operator new: its nothrow form still links
 * libstdc++'s exception handling.
 */
template <typename T> struct obj_deleter {
	void operator()(T *p) const noexcept
	{
		p->~T();
		free(p); // NOLINT(cppcoreguidelines-no-malloc)
	}
};

template <typename T> using obj_ptr = std::unique_ptr<T, obj_deleter<T>>;

template <typename T, typename... Args>
obj_ptr<T> c_new(Args &&...args) noexcept
{
	static_assert(std::is_standard_layout_v<T>);
	static_assert(std::is_nothrow_constructible_v<T, Args...>);
	// NOLINTNEXTLINE(cppcoreguidelines-no-malloc)
	void *mem = calloc(1, sizeof(T));
	if (!mem)
		return obj_ptr<T>();
	return obj_ptr<T>(new (mem) T(std::forward<Args>(args)...));
}

} // namespace sroce

#endif /* SROCE_UTIL_H */
