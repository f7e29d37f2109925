/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The rings sroce.ko shares with user space (struct sroce_queue_hdr +
 * slots, mmapped from the uverbs fd).
 *
 * Indices are free-running u32 counters: they are never masked when stored,
 * they wrap at 2^32, and slot = index & (num_slots - 1). "prod - cons" in
 * u32 arithmetic is the fill level across the wrap, so full is
 * "prod - cons == num_slots" and no slot is sacrificed to tell full from
 * empty (rxe's masked indices do sacrifice one).
 *
 * Each side owns one index, keeps the authoritative copy privately, and
 * only publishes it: the owner store is a release (the slot contents it
 * covers are visible first) and the load of the peer's index is an acquire
 * (slot contents the peer published are visible after). A peer index that
 * is more than num_slots away from ours is corrupt; we then see an empty
 * (consumer) or full (producer) ring rather than read or overwrite slots.
 *
 * Header-only and free of libibverbs so it is unit-tested without a kernel.
 */
#ifndef SROCE_RING_H
#define SROCE_RING_H

#include "abi.h"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace sroce
{

/* Pure index arithmetic; n is the slot count, a power of two. */
namespace ring_index
{

constexpr bool is_pow2(uint32_t n) noexcept
{
	return n != 0 && (n & (n - 1)) == 0;
}

constexpr uint32_t used(uint32_t prod, uint32_t cons) noexcept
{
	return prod - cons; /* modulo 2^32 by design */
}

/* Could these two indices belong to one healthy ring of n slots? */
constexpr bool consistent(uint32_t prod, uint32_t cons, uint32_t n) noexcept
{
	return used(prod, cons) <= n;
}

constexpr bool empty(uint32_t prod, uint32_t cons) noexcept
{
	return prod == cons;
}

/* Inconsistent indices count as full: never produce over unread slots. */
constexpr bool full(uint32_t prod, uint32_t cons, uint32_t n) noexcept
{
	return used(prod, cons) >= n;
}

constexpr uint32_t free_slots(uint32_t prod, uint32_t cons, uint32_t n) noexcept
{
	const uint32_t u = used(prod, cons);
	return u >= n ? 0 : n - u;
}

/* Inconsistent indices count as empty: never consume garbage. */
constexpr uint32_t available(uint32_t prod, uint32_t cons, uint32_t n) noexcept
{
	return consistent(prod, cons, n) ? used(prod, cons) : 0;
}

constexpr uint32_t slot(uint32_t idx, uint32_t n) noexcept
{
	return idx & (n - 1);
}

} // namespace ring_index

/*
 * A mapped ring: header pointer plus the geometry, validated once at attach
 * and cached, so a later write to the shared header cannot move our slots.
 */
class ring
{
public:
	/* Slots larger than this are certainly a corrupt header. */
	static constexpr uint32_t max_slot_shift = 16;

	/*
	 * Check the header at base (len bytes mapped) and bind to it.
	 * min_slot_size is the smallest slot the caller can use (e.g. the
	 * CQE size); the ring must fit in the mapping.
	 */
	static std::optional<ring> attach(void *base, size_t len,
					  size_t min_slot_size) noexcept
	{
		if (!base || len < SROCE_QUEUE_DATA_OFFSET)
			return std::nullopt;

		auto *hdr = static_cast<sroce_queue_hdr *>(base);
		const uint32_t n = load_acquire(hdr->num_slots);
		const uint32_t shift = load_acquire(hdr->slot_shift);

		if (!ring_index::is_pow2(n) || shift > max_slot_shift ||
		    (size_t{1} << shift) < min_slot_size)
			return std::nullopt;
		/* Both factors are bounded, so this cannot overflow size_t. */
		const size_t bytes = static_cast<size_t>(n) << shift;
		if (bytes > len - SROCE_QUEUE_DATA_OFFSET)
			return std::nullopt;
		return ring(hdr, n, shift);
	}

	uint32_t num_slots() const noexcept
	{
		return mask_ + 1;
	}

	size_t slot_size() const noexcept
	{
		return size_t{1} << shift_;
	}

	/* The slot an index refers to; any index is safe, it is masked. */
	void *slot(uint32_t idx) const noexcept
	{
		return data_ + (static_cast<size_t>(idx & mask_) << shift_);
	}

	uint32_t load_producer() const noexcept
	{
		return load_acquire(hdr_->producer);
	}

	/* sroce_queue_hdr.flags (SROCE_QUEUE_F_*), written by the kernel. */
	uint32_t load_flags() const noexcept
	{
		return load_acquire(hdr_->flags);
	}

	uint32_t load_consumer() const noexcept
	{
		return load_acquire(hdr_->consumer);
	}

	/* sroce_queue_hdr.polling (a send queue's), written by the kernel. */
	uint32_t load_polling() const noexcept
	{
		return load_acquire(hdr_->polling);
	}

	void store_producer(uint32_t v) const noexcept
	{
		store_release(hdr_->producer, v);
	}

	void store_consumer(uint32_t v) const noexcept
	{
		store_release(hdr_->consumer, v);
	}

	sroce_queue_hdr *header() const noexcept
	{
		return hdr_;
	}

	static uint32_t load_acquire(uint32_t &word) noexcept
	{
		return std::atomic_ref<uint32_t>(word).load(
			std::memory_order_acquire);
	}

	static void store_release(uint32_t &word, uint32_t v) noexcept
	{
		std::atomic_ref<uint32_t>(word).store(
			v, std::memory_order_release);
	}

private:
	ring(sroce_queue_hdr *hdr, uint32_t n, uint32_t shift) noexcept :
		hdr_(hdr), data_(reinterpret_cast<unsigned char *>(hdr) +
				 SROCE_QUEUE_DATA_OFFSET),
		mask_(n - 1), shift_(shift)
	{
	}

	sroce_queue_hdr *hdr_;
	unsigned char *data_;
	uint32_t mask_;
	uint32_t shift_;
};

static_assert(std::atomic_ref<uint32_t>::required_alignment <=
		      alignof(uint32_t),
	      "ring indices in the shared header must be usable atomically");
static_assert(std::atomic_ref<uint32_t>::is_always_lock_free,
	      "the kernel side uses plain loads/stores on the same words");

/*
 * User space produces (SQ, RQ, SRQ). Write slots at next(0), next(1), ...
 * up to free_slots(), then publish() them in one release store.
 */
class ring_producer
{
public:
	explicit ring_producer(const ring &r) noexcept :
		r_(r), prod_(r.load_producer())
	{
	}

	uint32_t free_slots() const noexcept
	{
		return ring_index::free_slots(prod_, r_.load_consumer(),
					      r_.num_slots());
	}

	bool full() const noexcept
	{
		return free_slots() == 0;
	}

	/* The slot i places past the last published one (i < free_slots()). */
	void *next(uint32_t i) const noexcept
	{
		return r_.slot(prod_ + i);
	}

	/* Hand count written slots to the consumer. */
	void publish(uint32_t count) noexcept
	{
		prod_ += count;
		r_.store_producer(prod_);
	}

	/*
	 * Post a linked list of work requests (anything with a next
	 * pointer), one slot each: encode(request, slot) returns 0 or an
	 * errno. The consumer index is re-read once when the room seen first
	 * runs out, and what was written is published in one store. Returns
	 * 0, the encoder's error or ENOMEM (the ring is full); wr is left at
	 * the first request not posted and posted counts the others.
	 */
	template <typename Wr, typename Encode>
	int produce(Wr *&wr, uint32_t &posted, Encode &&encode) noexcept
	{
		uint32_t room = free_slots();
		uint32_t n = 0;
		int ret = 0;

		for (; wr; wr = wr->next) {
			if (n == room) {
				room = free_slots();
				if (n == room) {
					ret = ENOMEM;
					break;
				}
			}
			ret = encode(*wr, next(n));
			if (ret)
				break;
			n++;
		}
		if (n)
			publish(n);
		posted = n;
		return ret;
	}

	uint32_t index() const noexcept
	{
		return prod_;
	}

	/* The kernel reset the ring (QP to RESET): start where it says. */
	void resync() noexcept
	{
		prod_ = r_.load_producer();
	}

	/*
	 * After publish(): has the kernel marked the QP in error? The full
	 * fence orders our producer store before the flag load; the kernel
	 * stores the flag, fences, then reads the producer to flush, so at
	 * least one side sees the other (SROCE_QUEUE_F_QP_ERR).
	 */
	bool qp_in_error() const noexcept
	{
		std::atomic_thread_fence(std::memory_order_seq_cst);
		return r_.load_flags() & SROCE_QUEUE_F_QP_ERR;
	}

	/*
	 * After publish() to a send queue: must a doorbell tell the kernel?
	 * Not while its requester runs, is queued to run or waits to send a
	 * WQE it fetched, and so reads the producer index again anyway
	 * (sroce_queue_hdr.polling), unless the QP is in error, where only a
	 * doorbell flushes. qp_in_error()'s full fence orders our producer
	 * store before both loads; the requester clears the flag, fences,
	 * then reads the producer, so at least one side sees the other.
	 */
	bool needs_doorbell() const noexcept
	{
		return qp_in_error() || !r_.load_polling();
	}

	const ring &queue() const noexcept
	{
		return r_;
	}

private:
	ring r_;
	uint32_t prod_;
};

/*
 * User space consumes (CQ). Read slots at peek(0), peek(1), ... below
 * available(), then release() them back to the producer.
 */
class ring_consumer
{
public:
	explicit ring_consumer(const ring &r) noexcept :
		r_(r), cons_(r.load_consumer())
	{
	}

	uint32_t available() const noexcept
	{
		return ring_index::available(r_.load_producer(), cons_,
					     r_.num_slots());
	}

	bool empty() const noexcept
	{
		return available() == 0;
	}

	const void *peek(uint32_t i) const noexcept
	{
		return r_.slot(cons_ + i);
	}

	/* The same slot, to rewrite an entry not yet released. */
	void *slot(uint32_t i) const noexcept
	{
		return r_.slot(cons_ + i);
	}

	/* Return count consumed slots to the producer. */
	void release(uint32_t count) noexcept
	{
		cons_ += count;
		r_.store_consumer(cons_);
	}

	uint32_t index() const noexcept
	{
		return cons_;
	}

	const ring &queue() const noexcept
	{
		return r_;
	}

private:
	ring r_;
	uint32_t cons_;
};

} // namespace sroce

#endif /* SROCE_RING_H */
