/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The lock that serialises pollers of a CQ and posters to an SQ or RQ.
 *
 * A pthread spinlock, as in other providers: the critical sections are a
 * few dozen stores into a mapped ring, far shorter than a futex round trip.
 * Locking it cannot fail in a way we could handle (EDEADLK is a caller bug
 * libibverbs documents as undefined), and std::mutex would drag libstdc++'s
 * std::system_error throwing path into a library built without exceptions.
 *
 * Meets BasicLockable, so std::lock_guard works for scoped use; the ibv_qp_ex
 * wr_start()/wr_complete() pair locks and unlocks across calls by hand.
 */
#ifndef SROCE_LOCK_H
#define SROCE_LOCK_H

#include <pthread.h>

namespace sroce
{

class spinlock
{
public:
	spinlock() noexcept
	{
		(void)pthread_spin_init(&l_, PTHREAD_PROCESS_PRIVATE);
	}

	~spinlock()
	{
		(void)pthread_spin_destroy(&l_);
	}

	spinlock(const spinlock &) = delete;
	spinlock &operator=(const spinlock &) = delete;

	void lock() noexcept
	{
		(void)pthread_spin_lock(&l_);
	}

	void unlock() noexcept
	{
		(void)pthread_spin_unlock(&l_);
	}

	bool try_lock() noexcept
	{
		return pthread_spin_trylock(&l_) == 0;
	}

private:
	pthread_spinlock_t l_{};
};

} // namespace sroce

#endif /* SROCE_LOCK_H */
