// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Several threads post to one SQ (ibv_post_send and the wr_* builder
 * mixed) while another thread plays the kernel: it reads the producer index
 * with acquire, checks and consumes the WQEs, and hands the slots back with
 * a release store of the consumer index. Every WQE must arrive exactly once,
 * whole, and in each thread's posting order; every call that posted must
 * have rung exactly one doorbell. Run it under -fsanitize=thread for more.
 */
#include "fake_rings.h"
#include "provider.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

namespace
{

using namespace sroce;
using namespace sroce::test;

constexpr int num_threads = 4;
constexpr uint32_t per_thread = 20000;

uint64_t tag(uint64_t thread, uint64_t seq)
{
	return (thread << 32) | seq;
}

TEST(PostSendMt, EveryWqeExactlyOnceInOrder)
{
	fake_qp f{IBV_QPT_RC, make_cap(16, 2, 32)};
	set_qp_ex_ops(*f.q, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE);
	std::atomic<int> calls{0};
	std::atomic<bool> stop{false};
	std::vector<uint32_t> seen(num_threads, 0);
	std::atomic<int> corrupt{0};

	std::thread kernel([&] {
		uint32_t cons = f.sq.consumer();
		uint64_t total = 0;
		while (total < uint64_t{num_threads} * per_thread) {
			const uint32_t prod = f.sq.producer();
			if (prod == cons) {
				if (stop.load())
					break;
				std::this_thread::yield();
				continue;
			}
			if (prod - cons > f.sq.num_slots()) {
				corrupt++;
				break;
			}
			for (; cons != prod; cons++, total++) {
				sroce_send_wqe w;
				memcpy(&w, f.sq.slot(cons), sizeof(w));
				const auto t =
					static_cast<uint32_t>(w.wr_id >> 32);
				const auto s = static_cast<uint32_t>(w.wr_id);
				sroce_sge sge{};
				memcpy(&sge, f.sq.slot(cons) + 64, sizeof(sge));
				/* The SGE echoes the wr_id: a torn WQE shows. */
				if (t >= num_threads || s != seen[t] ||
				    w.num_sge != 1 || sge.addr != w.wr_id ||
				    sge.lkey != t)
					corrupt++;
				else
					seen[t]++;
			}
			f.sq.set_consumer(cons);
		}
	});

	std::vector<std::thread> posters;
	for (uint32_t t = 0; t < num_threads; t++) {
		posters.emplace_back([&, t] {
			uint32_t seq = 0;
			while (seq < per_thread) {
				const uint32_t batch = std::min<uint32_t>(
					1 + seq % 5, per_thread - seq);
				if (t == 0 && seq % 2 == 0) {
					/* The builder API, same lock. */
					ibv_qp_ex *x = f.qpx();
					ibv_wr_start(x);
					for (uint32_t i = 0; i < batch; i++) {
						x->wr_id = tag(t, seq + i);
						x->wr_flags = 0;
						ibv_wr_send(x);
						ibv_wr_set_sge(x, t,
							       tag(t, seq + i),
							       1);
					}
					const int ret = ibv_wr_complete(x);
					if (ret == 0) {
						seq += batch;
						calls++;
					} else if (ret != ENOMEM) {
						ADD_FAILURE() << ret;
						return;
					} else {
						std::this_thread::yield();
					}
					continue;
				}
				std::vector<ibv_sge> sg(batch);
				std::vector<ibv_send_wr> wr(batch);
				for (uint32_t i = 0; i < batch; i++) {
					sg[i] = {tag(t, seq + i), 1, t};
					wr[i] = make_wr(IBV_WR_SEND,
							tag(t, seq + i), &sg[i],
							1, 0);
				}
				chain(wr);
				ibv_send_wr *bad = nullptr;
				const int ret =
					post_send(f.ibqp(), wr.data(), &bad);
				uint32_t done = batch;
				if (ret == ENOMEM)
					done = static_cast<uint32_t>(bad -
								     wr.data());
				else if (ret) {
					ADD_FAILURE() << ret;
					return;
				}
				if (done)
					calls++;
				seq += done;
				if (!done)
					std::this_thread::yield();
			}
		});
	}
	for (auto &p : posters)
		p.join();
	stop = true;
	kernel.join();

	EXPECT_EQ(corrupt.load(), 0);
	for (int t = 0; t < num_threads; t++)
		EXPECT_EQ(seen[t], per_thread) << "thread " << t;
	EXPECT_EQ(f.sq.producer(), uint32_t{num_threads} * per_thread);
	EXPECT_EQ(doorbells.load(), calls.load())
		<< "one doorbell per call that posted";
}

} // namespace
