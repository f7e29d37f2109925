// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Address handles: what create_ah asks the kernel for and keeps from its
 * answer, through stand-in commands and through the real libibverbs
 * command path (into a pipe instead of /dev/infiniband/uverbsN).
 */
#include "provider.h"
#include "util.h"
#include "uverbs_pipe.h"

#include <gtest/gtest.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <vector>

namespace
{

using namespace sroce;
using sroce::test::expect_cmd;
using sroce::test::uverbs_pipe;

/* What the stand-in kernel saw and will answer. */
struct fake_kernel {
	int creates = 0;
	int destroys = 0;
	size_t resp_size = 0;
	ibv_ah_attr attr{};
	int create_ret = 0;
	int destroy_ret = 0;
	uint32_t ah_handle = 0x31;
	uint32_t ah_num = 0x1001;
};

fake_kernel *fk;

int fake_create(struct ibv_pd *pd, struct ibv_ah *ah, struct ibv_ah_attr *attr,
		struct ib_uverbs_create_ah_resp *resp, size_t resp_size)
{
	fk->creates++;
	fk->resp_size = resp_size;
	fk->attr = *attr;
	if (fk->create_ret)
		return fk->create_ret;
	/* As uverbs writes it: the core response, then sroce's udata. */
	resp->ah_handle = fk->ah_handle;
	const sroce_create_ah_resp drv = {.ah_num = fk->ah_num, .reserved = 0};
	memcpy(reinterpret_cast<unsigned char *>(resp) + sizeof(*resp), &drv,
	       sizeof(drv));
	/* And what ibv_cmd_create_ah itself fills in. */
	ah->handle = resp->ah_handle;
	ah->context = pd->context;
	return 0;
}

int fake_destroy(struct ibv_ah * /*ah*/)
{
	fk->destroys++;
	return fk->destroy_ret;
}

constexpr ah_cmds fake_cmds = {.create = fake_create, .destroy = fake_destroy};

ibv_ah_attr roce_attr()
{
	ibv_ah_attr a{};
	a.is_global = 1;
	a.port_num = 1;
	a.grh.sgid_index = 1;
	a.grh.hop_limit = 64;
	a.grh.dgid.raw[10] = 0xff;
	a.grh.dgid.raw[11] = 0xff;
	a.grh.dgid.raw[12] = 10;
	a.grh.dgid.raw[15] = 2;
	return a;
}

struct CreateAh : ::testing::Test {
	fake_kernel k;
	ibv_context ctx{};
	ibv_pd pd{};

	void SetUp() override
	{
		fk = &k;
		pd.context = &ctx;
		pd.handle = 3;
	}
	void TearDown() override
	{
		fk = nullptr;
	}

	/* create_ah must fail, returning no AH and setting errno to err. */
	void expect_create_fails(ibv_ah_attr attr, int err)
	{
		errno = 0;
		EXPECT_EQ(create_ah_using(fake_cmds, &pd, &attr), nullptr);
		EXPECT_EQ(errno, err);
	}
};

TEST_F(CreateAh, KeepsTheAhNumber)
{
	ibv_ah_attr attr = roce_attr();
	ibv_ah *ibah = create_ah_using(fake_cmds, &pd, &attr);

	ASSERT_NE(ibah, nullptr);
	EXPECT_EQ(k.creates, 1);
	/* 4 bytes of ib_uverbs_create_ah_resp + sroce_create_ah_resp. */
	EXPECT_EQ(k.resp_size, 12U);
	EXPECT_EQ(k.attr.grh.dgid.raw[12], 10);
	EXPECT_EQ(ibah->handle, 0x31U);
	EXPECT_EQ(to_ah(ibah)->ah_num, 0x1001U);
	EXPECT_EQ(static_cast<void *>(to_ah(ibah)), static_cast<void *>(ibah));

	EXPECT_EQ(destroy_ah_using(fake_cmds, ibah), 0);
	EXPECT_EQ(k.destroys, 1);
}

TEST_F(CreateAh, RoceNeedsAGrh)
{
	ibv_ah_attr attr = roce_attr();
	attr.is_global = 0;
	attr.dlid = 5;

	expect_create_fails(attr, EINVAL);
	EXPECT_EQ(k.creates, 0) << "refused before asking the kernel";
}

TEST_F(CreateAh, KernelErrorIsErrno)
{
	k.create_ret = ENOMEM;

	expect_create_fails(roce_attr(), ENOMEM);
	EXPECT_EQ(k.destroys, 0) << "nothing was created";
}

TEST_F(CreateAh, NoAhNumberIsEprotoAndUndone)
{
	k.ah_num = 0;

	expect_create_fails(roce_attr(), EPROTO);
	EXPECT_EQ(k.destroys, 1) << "the kernel AH must not leak";
}

TEST_F(CreateAh, FailedDestroyKeepsTheAh)
{
	ibv_ah_attr attr = roce_attr();
	ibv_ah *ibah = create_ah_using(fake_cmds, &pd, &attr);
	ASSERT_NE(ibah, nullptr);

	k.destroy_ret = EBUSY;
	EXPECT_EQ(destroy_ah_using(fake_cmds, ibah), EBUSY);
	/* Still ours to read (ASan/valgrind would catch a free here). */
	EXPECT_EQ(to_ah(ibah)->ah_num, 0x1001U);
	k.destroy_ret = 0;
	EXPECT_EQ(destroy_ah_using(fake_cmds, ibah), 0);
	EXPECT_EQ(k.destroys, 2);
}

/*
 * The real ibv_cmd_create_ah / ibv_cmd_destroy_ah with a pipe as the
 * command fd: write() succeeds, nobody answers, so the response stays
 * zero (no AH number: EPROTO) and both commands land in the pipe, where
 * the test reads what the kernel would have been asked.
 */
TEST(CreateAhCommand, WhatTheKernelIsAsked)
{
	static_assert(sizeof(ib_uverbs_cmd_hdr) == 8);
	static_assert(sizeof(ib_uverbs_create_ah) == 56);
	static_assert(sizeof(ib_uverbs_destroy_ah) == 4);

	uverbs_pipe p;
	ibv_pd pd{};
	pd.context = &p.vctx->context;
	pd.handle = 7;
	ibv_ah_attr attr = roce_attr();
	attr.grh.traffic_class = 0x20;

	errno = 0;
	EXPECT_EQ(create_ah(&pd, &attr), nullptr);
	EXPECT_EQ(errno, EPROTO);

	const std::vector<unsigned char> b = p.drain();
	const size_t create_len =
		sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_create_ah);
	const size_t destroy_len =
		sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_destroy_ah);
	ASSERT_EQ(b.size(), create_len + destroy_len);

	const auto create =
		expect_cmd<ib_uverbs_create_ah>(b, IB_USER_VERBS_CMD_CREATE_AH);
	EXPECT_EQ(create.hdr.in_words, create_len / 4);
	EXPECT_EQ(create.hdr.out_words, 3U) << "room for sroce_create_ah_resp";

	const ib_uverbs_create_ah &cmd = create.req;
	EXPECT_NE(cmd.response, 0U);
	EXPECT_EQ(cmd.pd_handle, 7U);
	EXPECT_EQ(cmd.attr.is_global, 1);
	EXPECT_EQ(cmd.attr.port_num, 1);
	EXPECT_EQ(cmd.attr.grh.sgid_index, 1);
	EXPECT_EQ(cmd.attr.grh.traffic_class, 0x20);
	EXPECT_EQ(memcmp(cmd.attr.grh.dgid, attr.grh.dgid.raw, 16), 0);

	/* EPROTO undid the kernel object: DESTROY_AH of the same handle. */
	const auto d = expect_cmd<ib_uverbs_destroy_ah>(
		b, IB_USER_VERBS_CMD_DESTROY_AH, create_len);
	EXPECT_EQ(d.req.ah_handle, 0U); /* the zero response's handle */
}

} // namespace
