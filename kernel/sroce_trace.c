// SPDX-License-Identifier: GPL-2.0
/*
 * sroce tracepoints: the one object that defines them; the events and what
 * each records are described in sroce_trace.h.
 */

#define CREATE_TRACE_POINTS
#include "sroce_trace.h"
