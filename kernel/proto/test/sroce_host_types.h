/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Kernel integer types for building proto/ on the host (tests, fuzzers).
 * Only what the protocol core uses; nothing endian-specific, because the
 * core does its own byte-wise big-endian loads and stores.
 */
#ifndef SROCE_HOST_TYPES_H
#define SROCE_HOST_TYPES_H

#ifndef __cplusplus
#include <stdbool.h>
#endif
#include <stddef.h>

/* LP64 and ILP32 hosts alike; test_misc.cpp asserts the sizes. */
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef signed char s8;
typedef short s16;
typedef int s32;
typedef long long s64;

#endif /* SROCE_HOST_TYPES_H */
