// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "abi_guard.h"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <link.h>

namespace sroce::abi_guard
{

namespace
{

constexpr std::string_view soname = "libibverbs.so.1";

struct scan_state {
	std::string_view expected;
	verdict result;
	bool found;
	char *resolved_out;
	size_t resolved_len;
};

void copy_out(const scan_state &st, const char *s) noexcept
{
	if (!st.resolved_out || st.resolved_len == 0)
		return;
	(void)snprintf(st.resolved_out, st.resolved_len, "%s", s ? s : "?");
}

int scan_one(struct dl_phdr_info *info, size_t /*size*/, void *data) noexcept
{
	auto &st = *static_cast<scan_state *>(data);

	if (!info->dlpi_name || !is_libibverbs_path(info->dlpi_name))
		return 0;

	char buf[PATH_MAX];
	const char *resolved = realpath(info->dlpi_name, buf);
	const verdict v = judge(info->dlpi_name, resolved, st.expected);

	st.found = true;
	copy_out(st, resolved ? resolved : info->dlpi_name);
	if (v != verdict::ok) {
		st.result = v;
		return 1; /* stop: one bad mapping is enough to refuse */
	}
	st.result = verdict::ok;
	return 0;
}

} // namespace

const char *describe(verdict v) noexcept
{
	switch (v) {
	case verdict::ok:
		return "ok";
	case verdict::not_loaded:
		return "libibverbs.so.1 is not mapped";
	case verdict::unresolvable:
		return "cannot resolve the mapped libibverbs.so.1";
	case verdict::wrong_file:
		return "libibverbs is a different release";
	}
	return "?";
}

std::string_view basename(std::string_view path) noexcept
{
	const auto slash = path.rfind('/');

	/* Not substr(): its range check drags libstdc++'s throw helpers in. */
	if (slash == std::string_view::npos)
		return path;
	return {path.data() + slash + 1, path.size() - slash - 1};
}

bool is_libibverbs_path(std::string_view path) noexcept
{
	const std::string_view base = basename(path);

	if (!base.starts_with(soname))
		return false;
	/* libibverbs.so.1 itself, or a versioned file preloaded by path. */
	return base.size() == soname.size() || base[soname.size()] == '.';
}

verdict judge(const char *mapped, const char *resolved,
	      std::string_view expected) noexcept
{
	if (!mapped)
		return verdict::not_loaded;
	if (!resolved)
		return verdict::unresolvable;
	if (expected.empty() || basename(resolved) != expected)
		return verdict::wrong_file;
	return verdict::ok;
}

verdict check_loaded(std::string_view expected, char *resolved_out,
		     size_t resolved_len) noexcept
{
	scan_state st{expected, verdict::not_loaded, false, resolved_out,
		      resolved_len};

	copy_out(st, "");
	dl_iterate_phdr(scan_one, &st);
	return st.found ? st.result : verdict::not_loaded;
}

} // namespace sroce::abi_guard
