// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * How libibverbs finds sroce devices and creates the per-device object.
 *
 * sroce has no upstream rdma_driver_id, so sroce.ko reports the private
 * SROCE_DRIVER_ID through RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID and the match
 * table has exactly that one entry: no name or modalias match that could
 * claim (or be claimed by) another provider's device.
 */
#include "provider.h"
#include "abi_guard.h"
#include "config.h"
#include "log.h"
#include "util.h"

#include <climits>

namespace sroce
{

namespace
{

struct verbs_device *alloc_device(struct verbs_sysfs_dev *sysfs_dev) noexcept
{
	/* libibverbs asserts that the parts it owns arrive zeroed. */
	auto dev = c_zalloc<device>();

	if (!dev)
		return nullptr;
	dev->abi_version = sysfs_dev->abi_ver;
	return &dev.release()->ibv_dev;
}

void uninit_device(struct verbs_device *vdev) noexcept
{
	c_ptr<device> dev(reinterpret_cast<device *>(vdev));
}

} // namespace

const struct verbs_match_ent match_table[2] = {
	{
		.driver_data = nullptr,
		.u = {.driver_id = SROCE_DRIVER_ID},
		.vendor = 0,
		.device = 0,
		.kind = VERBS_MATCH_DRIVER_ID,
	},
	{}, /* sentinel */
};

const struct verbs_device_ops device_ops = {
	.name = "sroce",
	.match_min_abi_version = SROCE_UVERBS_ABI_VERSION,
	.match_max_abi_version = SROCE_UVERBS_ABI_VERSION,
	.match_table = match_table,
	.static_providers = nullptr,
	.match_device = nullptr,
	.alloc_context = alloc_context,
	.import_context = nullptr,
	.alloc_device = alloc_device,
	.uninit_device = uninit_device,
};

bool should_register() noexcept
{
	char resolved[PATH_MAX];
	const auto v = abi_guard::check_loaded(SROCE_LIBIBVERBS_FILE, resolved,
					       sizeof(resolved));

	if (v != abi_guard::verdict::ok) {
		/*
		 * Printed unconditionally, like libibverbs' own "couldn't
		 * load driver" warning: the install is broken and sroce
		 * devices would otherwise just be missing without a clue.
		 */
		log(log_level::err,
		    "Warning: provider disabled: %s (%s); it was built for %s. "
		    "Rebuild sroce against the installed rdma-core.",
		    abi_guard::describe(v), resolved[0] ? resolved : "-",
		    SROCE_LIBIBVERBS_FILE);
		return false;
	}
	log(log_level::debug, "provider registered (%s)", resolved);
	return true;
}

} // namespace sroce
