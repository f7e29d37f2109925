/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Diagnostics. A provider runs inside every verbs application, so it stays
 * quiet by default: errors that make an operation fail are always printed,
 * anything else only when IBV_SHOW_WARNINGS (libibverbs' own switch for
 * provider trouble) or SROCE_DEBUG is set in the environment.
 */
#ifndef SROCE_LOG_H
#define SROCE_LOG_H

namespace sroce
{

enum class log_level {
	err,
	warn,
	debug
};

/* True when warnings and debug output are wanted (read once). */
bool log_verbose() noexcept;

void log(log_level level, const char *fmt, ...) noexcept
	__attribute__((format(printf, 2, 3)));

} // namespace sroce

#endif /* SROCE_LOG_H */
