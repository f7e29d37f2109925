/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A device context whose command fd is a pipe, so the real libibverbs
 * ibv_cmd_* functions can be driven without a kernel: write() succeeds,
 * nobody answers (responses stay as the caller initialised them), and the
 * test reads from the other end what the kernel would have been asked.
 * Only for commands that go through write(): libibverbs' private part is
 * all zero, which means "use write()" (an ioctl on a pipe fails ENOTTY and
 * falls back to write() too).
 */
#ifndef SROCE_TEST_UVERBS_PIPE_H
#define SROCE_TEST_UVERBS_PIPE_H

#include "util.h"
#include "verbs_private.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <vector>

namespace sroce::test
{

struct uverbs_pipe {
	c_ptr<verbs_context> vctx = c_zalloc<verbs_context>();
	std::vector<uint64_t> priv = std::vector<uint64_t>(512, 0);
	std::array<int, 2> fds{-1, -1};

	uverbs_pipe()
	{
		EXPECT_EQ(pipe2(fds.data(), O_NONBLOCK | O_CLOEXEC), 0);
		vctx->sz = sizeof(*vctx);
		vctx->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
		vctx->context.cmd_fd = fds[1];
		vctx->priv = reinterpret_cast<verbs_ex_private *>(priv.data());
	}
	~uverbs_pipe()
	{
		close(fds[0]);
		close(fds[1]);
	}
	uverbs_pipe(const uverbs_pipe &) = delete;
	uverbs_pipe &operator=(const uverbs_pipe &) = delete;
	uverbs_pipe(uverbs_pipe &&) = delete;
	uverbs_pipe &operator=(uverbs_pipe &&) = delete;

	ibv_context *context()
	{
		return &vctx->context;
	}

	/* Everything written so far. */
	std::vector<unsigned char> drain()
	{
		std::vector<unsigned char> out(4096);
		const ssize_t n = read(fds[0], out.data(), out.size());
		out.resize(n > 0 ? static_cast<size_t>(n) : 0);
		return out;
	}
};

/* A command as libibverbs writes it: the header, then the request. */
template <typename Req> struct written_cmd {
	ib_uverbs_cmd_hdr hdr{};
	Req req{};
};

/*
 * The command of request type Req at byte off of what drain() gave. The
 * test checks the length first; a command cut short fails here and reads
 * as zeros.
 */
template <typename Req>
written_cmd<Req> read_cmd(const std::vector<unsigned char> &b, size_t off = 0)
{
	written_cmd<Req> c;
	if (b.size() < off + sizeof(c.hdr) + sizeof(c.req)) {
		ADD_FAILURE() << "command at byte " << off << " cut short";
		return c;
	}
	memcpy(&c.hdr, b.data() + off, sizeof(c.hdr));
	memcpy(&c.req, b.data() + off + sizeof(c.hdr), sizeof(c.req));
	return c;
}

/* read_cmd(), and the command number the command at byte off must have. */
template <typename Req>
written_cmd<Req> expect_cmd(const std::vector<unsigned char> &b,
			    uint32_t command, size_t off = 0)
{
	const written_cmd<Req> c = read_cmd<Req>(b, off);
	EXPECT_EQ(c.hdr.command, command) << "command at byte " << off;
	return c;
}

} // namespace sroce::test

#endif /* SROCE_TEST_UVERBS_PIPE_H */
