// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Shared helpers for the proto host tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

extern "C" {
#include "sroce_hdr.h"
#include "sroce_icrc.h"
}

using bytes = std::vector<u8>;

static inline bytes from_hex(const std::string &h)
{
	bytes b;
	for (size_t i = 0; i + 1 < h.size(); i += 2)
		b.push_back((u8)std::stoul(h.substr(i, 2), nullptr, 16));
	return b;
}
