# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The one place that knows which rdma-core releases the provider declares
# (src/verbs_private.h) and which one this build is for. Included by
# user/CMakeLists.txt and tools/verbs-tests (hostile_ring uses the
# provider's ring headers). Needs IBVERBS_LIBRARY; sets SROCE_RDMA_CORE and
# SROCE_PABI and SROCE_LIBIBVERBS_FILE, for src/config.h.in.
#
# The runtime ABI guard compares the real file name of the libibverbs.so.1
# that the process actually mapped against the one we were built for, taken
# from the build machine. That name encodes the release:
# libibverbs.so.1.14.<rdma-core version>. src/verbs_private.h declares the
# private ABI of the releases listed here, each checked against that
# release's own libibverbs.
set(SROCE_RDMA_CORE_CHECKED 44 56 65)
file(REAL_PATH "${IBVERBS_LIBRARY}" _sroce_ibverbs_real)
get_filename_component(_sroce_ibverbs_name "${_sroce_ibverbs_real}" NAME)
if(NOT _sroce_ibverbs_name MATCHES "^libibverbs\\.so\\.1\\.[0-9]+\\.([0-9]+)\\.[0-9]+$")
	message(FATAL_ERROR
		"sroce: cannot tell the rdma-core release of ${_sroce_ibverbs_real} "
		"(expected libibverbs.so.1.14.<release>.<n>)")
endif()
set(SROCE_RDMA_CORE "${CMAKE_MATCH_1}")
if(NOT SROCE_RDMA_CORE IN_LIST SROCE_RDMA_CORE_CHECKED)
	string(REPLACE ";" ", " _sroce_checked "${SROCE_RDMA_CORE_CHECKED}")
	message(FATAL_ERROR
		"sroce: this system's libibverbs is rdma-core ${SROCE_RDMA_CORE} "
		"(${_sroce_ibverbs_name}); the provider declares the private ABI of "
		"rdma-core ${_sroce_checked} only (src/verbs_private.h)")
endif()
# The private ABI number: libibverbs dlopen()s libsroce-rdmav<PABI>.so and
# the provider calls verbs_register_driver_<PABI>. It stayed 34 from
# rdma-core 34 to 56; 65 is 65.
if(SROCE_RDMA_CORE LESS 57)
	set(SROCE_PABI 34)
else()
	set(SROCE_PABI "${SROCE_RDMA_CORE}")
endif()
set(SROCE_LIBIBVERBS_FILE "${_sroce_ibverbs_name}" CACHE STRING
    "File name of the libibverbs.so.1 the provider is allowed to bind to")
