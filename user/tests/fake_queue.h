/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A queue mapping as sroce.ko would give it, in plain memory: the header
 * the kernel writes, then the slots. Used by the ring's own tests and by
 * the fake CQs and QPs of fake_rings.h.
 */
#ifndef SROCE_TEST_FAKE_QUEUE_H
#define SROCE_TEST_FAKE_QUEUE_H

#include "ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sroce::test
{

/* Header + num_slots slots of 1 << shift bytes, indices starting at start. */
struct fake_queue {
	std::vector<uint64_t> mem;

	fake_queue(uint32_t num_slots, uint32_t shift, uint32_t start = 0) :
		mem((SROCE_QUEUE_DATA_OFFSET + (size_t{num_slots} << shift)) /
		    8)
	{
		hdr()->num_slots = num_slots;
		hdr()->slot_shift = shift;
		hdr()->producer = start;
		hdr()->consumer = start;
	}
	sroce_queue_hdr *hdr()
	{
		return reinterpret_cast<sroce_queue_hdr *>(mem.data());
	}
	void *base()
	{
		return mem.data();
	}
	size_t len() const
	{
		return mem.size() * 8;
	}
	/* The provider's view of it, checked as the provider checks a mapping. */
	ring attach(size_t min_slot = 1)
	{
		auto r = ring::attach(mem.data(), len(), min_slot);
		EXPECT_TRUE(r.has_value());
		return *r;
	}
	uint32_t num_slots()
	{
		return hdr()->num_slots;
	}
	size_t slot_size()
	{
		return size_t{1} << hdr()->slot_shift;
	}
	unsigned char *slot(uint32_t idx)
	{
		return reinterpret_cast<unsigned char *>(mem.data()) +
		       SROCE_QUEUE_DATA_OFFSET +
		       (size_t{idx & (num_slots() - 1)} << hdr()->slot_shift);
	}
	/* The kernel's view of the two indices. */
	uint32_t producer()
	{
		return std::atomic_ref<uint32_t>(hdr()->producer)
			.load(std::memory_order_acquire);
	}
	uint32_t consumer()
	{
		return std::atomic_ref<uint32_t>(hdr()->consumer)
			.load(std::memory_order_acquire);
	}
	void set_producer(uint32_t v)
	{
		std::atomic_ref<uint32_t>(hdr()->producer)
			.store(v, std::memory_order_release);
	}
	void set_consumer(uint32_t v)
	{
		std::atomic_ref<uint32_t>(hdr()->consumer)
			.store(v, std::memory_order_release);
	}
};

} // namespace sroce::test

#endif /* SROCE_TEST_FAKE_QUEUE_H */
