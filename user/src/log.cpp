// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "log.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace sroce {

bool log_verbose() noexcept
{
	// secure_getenv: never let a setuid verbs program be made chatty.
	static const bool verbose = secure_getenv("IBV_SHOW_WARNINGS") ||
				    secure_getenv("SROCE_DEBUG");
	return verbose;
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
