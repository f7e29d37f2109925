/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * An owned mmap() of kernel memory (a ring, mapped from the uverbs fd at the
 * cookie offset sroce_mmap_info gives). Unmapped exactly once, on destruction
 * or reset, so error paths in create_cq/create_qp cannot leak a mapping.
 */
#ifndef SROCE_MAPPING_H
#define SROCE_MAPPING_H

#include <cstddef>
#include <cstdint>
#include <sys/mman.h>
#include <sys/types.h>
#include <utility>

namespace sroce
{

class mapping
{
public:
	mapping() noexcept = default;

	/* Shared read/write mapping of len bytes at offset; empty on error. */
	static mapping map(int fd, uint64_t offset, size_t len) noexcept
	{
		if (len == 0 || offset > static_cast<uint64_t>(INT64_MAX))
			return {};
		void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			       fd, static_cast<off_t>(offset));
		if (p == MAP_FAILED) // NOLINT(performance-no-int-to-ptr)
			return {};
		return {p, len};
	}

	mapping(const mapping &) = delete;
	mapping &operator=(const mapping &) = delete;

	mapping(mapping &&other) noexcept :
		addr_(std::exchange(other.addr_, nullptr)),
		len_(std::exchange(other.len_, 0))
	{
	}

	mapping &operator=(mapping &&other) noexcept
	{
		if (this != &other) {
			reset();
			addr_ = std::exchange(other.addr_, nullptr);
			len_ = std::exchange(other.len_, 0);
		}
		return *this;
	}

	~mapping()
	{
		reset();
	}

	void reset() noexcept
	{
		if (addr_)
			(void)munmap(addr_, len_);
		addr_ = nullptr;
		len_ = 0;
	}

	void *get() const noexcept
	{
		return addr_;
	}

	size_t size() const noexcept
	{
		return len_;
	}

	explicit operator bool() const noexcept
	{
		return addr_ != nullptr;
	}

private:
	mapping(void *addr, size_t len) noexcept : addr_(addr), len_(len)
	{
	}

	void *addr_ = nullptr;
	size_t len_ = 0;
};

} // namespace sroce

#endif /* SROCE_MAPPING_H */
