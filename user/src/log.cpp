// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sroce
{

namespace
{

bool env_on(const char *name) noexcept
{
	// secure_getenv: a setuid verbs program is never made chatty.
	const char *v = secure_getenv(name);
	return v && *v && strcmp(v, "0") != 0;
}

} // namespace

bool log_verbose() noexcept
{
	/*
	 * Not a function-local static: its guard would need libstdc++'s
	 * __cxa_guard_*. Racing first callers just both read the environment.
	 */
	static constinit std::atomic<int> state{0}; /* 0 unknown, 1 no, 2 yes */
	int s = state.load(std::memory_order_relaxed);

	if (s == 0) {
		s = env_on("IBV_SHOW_WARNINGS") || env_on("SROCE_DEBUG") ? 2
									 : 1;
		state.store(s, std::memory_order_relaxed);
	}
	return s == 2;
}

void log(log_level level, const char *fmt, ...) noexcept
{
	if (level != log_level::err && !log_verbose())
		return;

	// One fprintf so concurrent threads do not interleave a line.
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	(void)vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	(void)fprintf(stderr, "sroce: %s\n", buf);
}

} // namespace sroce
