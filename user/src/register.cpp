// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The only code that runs when libibverbs dlopen()s the provider. Kept out
 * of the object library the tests link, so a test binary never registers a
 * driver into its own libibverbs.
 */
#include "provider.h"

namespace
{

__attribute__((constructor)) void sroce_register_provider() noexcept
{
	if (sroce::should_register())
		sroce_verbs_register_driver(&sroce::device_ops);
}

} // namespace
