// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "fake_queue.h"
#include "ring.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace
{

using namespace sroce;
namespace ri = sroce::ring_index;

using test::fake_queue;

TEST(RingIndex, Pow2)
{
	EXPECT_FALSE(ri::is_pow2(0));
	EXPECT_TRUE(ri::is_pow2(1));
	EXPECT_TRUE(ri::is_pow2(2));
	EXPECT_FALSE(ri::is_pow2(3));
	EXPECT_TRUE(ri::is_pow2(0x80000000U));
	EXPECT_FALSE(ri::is_pow2(0xffffffffU));
}

TEST(RingIndex, EmptyFullFree)
{
	EXPECT_TRUE(ri::empty(5, 5));
	EXPECT_FALSE(ri::full(5, 5, 8));
	EXPECT_EQ(ri::free_slots(5, 5, 8), 8U);
	EXPECT_EQ(ri::available(5, 5, 8), 0U);

	EXPECT_TRUE(ri::full(13, 5, 8));
	EXPECT_FALSE(ri::empty(13, 5));
	EXPECT_EQ(ri::free_slots(13, 5, 8), 0U);
	EXPECT_EQ(ri::available(13, 5, 8), 8U);

	EXPECT_EQ(ri::free_slots(7, 5, 8), 6U);
	EXPECT_EQ(ri::available(7, 5, 8), 2U);
}

TEST(RingIndex, WrapsAt2To32)
{
	const uint32_t cons = 0xfffffffeU;
	const uint32_t prod = cons + 4; /* == 2 after the wrap */
	EXPECT_EQ(prod, 2U);
	EXPECT_EQ(ri::used(prod, cons), 4U);
	EXPECT_EQ(ri::available(prod, cons, 8), 4U);
	EXPECT_EQ(ri::free_slots(prod, cons, 8), 4U);
	EXPECT_TRUE(ri::consistent(prod, cons, 8));
	EXPECT_TRUE(ri::full(cons + 8, cons, 8));
	EXPECT_TRUE(ri::empty(0xffffffffU + 1U, 0));
}

TEST(RingIndex, InconsistentIndicesAreSafe)
{
	/* Consumer ahead of producer, or producer more than n ahead. */
	EXPECT_FALSE(ri::consistent(5, 6, 8));
	EXPECT_EQ(ri::available(5, 6, 8), 0U) << "would read garbage";
	EXPECT_TRUE(ri::full(5, 6, 8)) << "would overwrite unread slots";
	EXPECT_EQ(ri::free_slots(5, 6, 8), 0U);
	EXPECT_FALSE(ri::consistent(14, 5, 8));
	EXPECT_EQ(ri::available(14, 5, 8), 0U);
	EXPECT_EQ(ri::free_slots(14, 5, 8), 0U);
}

TEST(RingIndex, Masking)
{
	EXPECT_EQ(ri::slot(0, 8), 0U);
	EXPECT_EQ(ri::slot(7, 8), 7U);
	EXPECT_EQ(ri::slot(8, 8), 0U);
	EXPECT_EQ(ri::slot(0xffffffffU, 8), 7U);
	EXPECT_EQ(ri::slot(0xffffffffU, 1), 0U);
	EXPECT_EQ(ri::slot(0x12345678U, 0x1000), 0x678U);
}

TEST(Ring, AttachValidatesHeader)
{
	fake_queue q(8, 6);
	EXPECT_TRUE(ring::attach(q.mem.data(), q.len(), 64).has_value());
	EXPECT_FALSE(ring::attach(q.mem.data(), q.len(), 65).has_value())
		<< "slots smaller than the caller needs";
	EXPECT_FALSE(ring::attach(nullptr, q.len(), 1).has_value());
	EXPECT_FALSE(ring::attach(q.mem.data(), 100, 1).has_value());
	EXPECT_FALSE(ring::attach(q.mem.data(),
				  SROCE_QUEUE_DATA_OFFSET + 8 * 64 - 1, 1)
			     .has_value())
		<< "slots past the end of the mapping";
	EXPECT_TRUE(
		ring::attach(q.mem.data(), SROCE_QUEUE_DATA_OFFSET + 8 * 64, 1)
			.has_value());

	q.hdr()->num_slots = 6;
	EXPECT_FALSE(ring::attach(q.mem.data(), q.len(), 1).has_value());
	q.hdr()->num_slots = 0;
	EXPECT_FALSE(ring::attach(q.mem.data(), q.len(), 1).has_value());
	q.hdr()->num_slots = 0x80000000U;
	EXPECT_FALSE(ring::attach(q.mem.data(), q.len(), 1).has_value());
	q.hdr()->num_slots = 8;
	q.hdr()->slot_shift = 40;
	EXPECT_FALSE(ring::attach(q.mem.data(), q.len(), 1).has_value())
		<< "shift overflow";
}

TEST(Ring, GeometryIsCachedAtAttach)
{
	fake_queue q(8, 4);
	ring r = q.attach();
	q.hdr()->num_slots = 1024; /* a later write to the shared header */
	q.hdr()->slot_shift = 12;
	EXPECT_EQ(r.num_slots(), 8U);
	EXPECT_EQ(r.slot_size(), 16U);
	auto *data = reinterpret_cast<unsigned char *>(q.mem.data()) +
		     SROCE_QUEUE_DATA_OFFSET;
	EXPECT_EQ(r.slot(0), data);
	EXPECT_EQ(r.slot(9), data + 16);
	EXPECT_EQ(r.slot(0xffffffffU), data + size_t{7} * 16);
}

TEST(Ring, ProducerFillsToFullThenStops)
{
	fake_queue q(4, 3);
	ring r = q.attach();
	ring_producer p(r);

	EXPECT_EQ(p.free_slots(), 4U);
	for (uint32_t i = 0; i < 4; i++)
		memcpy(p.next(i), &i, sizeof(i));
	p.publish(4);
	EXPECT_EQ(q.hdr()->producer, 4U);
	EXPECT_TRUE(p.full());

	/* The kernel consumes two. */
	q.hdr()->consumer = 2;
	EXPECT_EQ(p.free_slots(), 2U);
	EXPECT_EQ(p.next(0), r.slot(0)) << "slot 4 reuses slot 0";
}

TEST(Ring, ConsumerSeesOnlyPublishedSlots)
{
	fake_queue q(4, 3);
	ring r = q.attach();
	ring_consumer c(r);

	EXPECT_TRUE(c.empty());
	uint64_t v = 42;
	memcpy(r.slot(0), &v, sizeof(v));
	q.hdr()->producer = 1;
	ASSERT_EQ(c.available(), 1U);
	uint64_t got = 0;
	memcpy(&got, c.peek(0), sizeof(got));
	EXPECT_EQ(got, 42U);
	c.release(1);
	EXPECT_EQ(q.hdr()->consumer, 1U);
	EXPECT_TRUE(c.empty());

	/* A corrupt producer index reads as empty, not as 2^32 - 1 entries. */
	q.hdr()->producer = 0;
	EXPECT_TRUE(c.empty());
	q.hdr()->producer = 100;
	EXPECT_TRUE(c.empty());
}

TEST(Ring, ProducerAndConsumerAcrossTheWrap)
{
	fake_queue q(8, 3, 0xfffffff0U);
	ring r = q.attach();
	ring_producer p(r);
	ring_consumer c(r);

	uint64_t next_in = 0;
	uint64_t next_out = 0;
	for (int round = 0; round < 10; round++) {
		const uint32_t n = p.free_slots();
		for (uint32_t i = 0; i < n; i++, next_in++)
			memcpy(p.next(i), &next_in, sizeof(next_in));
		p.publish(n);
		const uint32_t avail = c.available();
		ASSERT_EQ(avail, 8U);
		for (uint32_t i = 0; i < avail - 3; i++, next_out++) {
			uint64_t v = 0;
			memcpy(&v, c.peek(i), sizeof(v));
			ASSERT_EQ(v, next_out);
		}
		c.release(avail - 3);
	}
	EXPECT_LT(q.hdr()->producer, 0xfffffff0U) << "indices wrapped";
	EXPECT_EQ(ri::used(q.hdr()->producer, q.hdr()->consumer), 3U);
}

/* Acquire/release: a consumer must never see a slot before its contents. */
TEST(Ring, ThreadedHandoffAcrossTheWrap)
{
	fake_queue q(16, 3, 0xffffff00U);
	ring r = q.attach();
	constexpr uint64_t total = 200000;

	std::thread producer([&] {
		ring_producer p(r);
		uint64_t v = 0;
		while (v < total) {
			uint32_t n = p.free_slots();
			if (n == 0) {
				std::this_thread::yield();
				continue;
			}
			uint32_t i = 0;
			for (; i < n && v < total; i++, v++) {
				const uint64_t x = v * 2654435761ULL;
				memcpy(p.next(i), &x, sizeof(x));
			}
			p.publish(i);
		}
	});

	ring_consumer c(r);
	uint64_t v = 0;
	bool ok = true;
	while (v < total && ok) {
		const uint32_t n = c.available();
		if (n == 0) {
			std::this_thread::yield();
			continue;
		}
		for (uint32_t i = 0; i < n; i++, v++) {
			uint64_t x = 0;
			memcpy(&x, c.peek(i), sizeof(x));
			if (x != v * 2654435761ULL) {
				ok = false;
				break;
			}
		}
		c.release(n);
	}
	producer.join();
	EXPECT_TRUE(ok) << "mismatch at " << v;
	EXPECT_EQ(v, total);
}

} // namespace
