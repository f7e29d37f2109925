/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Refuse to run against a libibverbs we were not built for.
 *
 * The private ABI number 34 is shared by rdma-core 34..56, and the struct
 * layouts in verbs_private.h differ across that range (verbs_qp moved in
 * v44 and v45). Linking only proves the symbols exist; a provider loaded
 * into a v45 libibverbs would corrupt memory instead of failing. The real
 * file name of libibverbs.so.1 encodes the release (libibverbs.so.1.14.44.0),
 * so the constructor compares it before registering.
 */
#ifndef SROCE_ABI_GUARD_H
#define SROCE_ABI_GUARD_H

#include <cstddef>
#include <string_view>

namespace sroce::abi_guard
{

enum class verdict {
	ok,
	not_loaded,   /* no libibverbs.so.1 in the process */
	unresolvable, /* realpath() failed on the mapped path */
	wrong_file,   /* mapped file is another release */
};

const char *describe(verdict v) noexcept;

/* The last path component ("a/b/c" -> "c"). */
std::string_view basename(std::string_view path) noexcept;

/* Is this a path a process maps libibverbs.so.1 under? */
bool is_libibverbs_path(std::string_view path) noexcept;

/*
 * The pure decision, testable with made-up names: mapped is the path as the
 * dynamic loader reports it (nullptr if none was found), resolved is its
 * realpath() (nullptr if that failed), expected the file name we want.
 */
verdict judge(const char *mapped, const char *resolved,
	      std::string_view expected) noexcept;

/*
 * Look at every libibverbs.so.1 actually mapped into this process. The
 * resolved path of the first one that is not ok (or of the last one) is
 * copied into resolved_out for messages.
 */
verdict check_loaded(std::string_view expected, char *resolved_out,
		     size_t resolved_len) noexcept;

} // namespace sroce::abi_guard

#endif /* SROCE_ABI_GUARD_H */
