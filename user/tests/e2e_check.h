/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the end-to-end programs share (e2e_verbs.cpp, e2e_ud.cpp,
 * e2e_srq.cpp: run on a real sroce device in the QEMU guest by the
 * selftests, not by ctest). CHECK counts a condition that does not hold in
 * fails and goes on; REQUIRE ends the program with exit status 1. Both
 * print the file, line, condition and errno. A part of a program reports
 * "ok" when fails did not grow while it ran.
 */
#ifndef SROCE_E2E_CHECK_H
#define SROCE_E2E_CHECK_H

#include <cerrno>
#include <cstdio>
#include <cstdlib>

inline int fails;

#define CHECK(c)                                                       \
	do {                                                           \
		if (!(c)) {                                            \
			fprintf(stderr, "FAIL %s:%d: %s (errno %d)\n", \
				__FILE__, __LINE__, #c, errno);        \
			fails++;                                       \
		}                                                      \
	} while (0)

#define REQUIRE(c)                                                      \
	do {                                                            \
		if (!(c)) {                                             \
			fprintf(stderr, "FATAL %s:%d: %s (errno %d)\n", \
				__FILE__, __LINE__, #c, errno);         \
			exit(1);                                        \
		}                                                       \
	} while (0)

#endif /* SROCE_E2E_CHECK_H */
