# sroce top-level Makefile.
#
#   make deps      install the Debian packages needed to build and install (idempotent)
#   make deps-test ... and everything the tests, checks, demo and benchmarks need
#   make           build kernel/sroce.ko and build/user/libsroce-rdmav34.so (65 for rdma-core 65)
#   make test      host unit tests + all selftests in a QEMU guest + the two-guest lane
#   make test-2vm  the two-guest lane alone: two QEMU guests joined by a virtio-net link
#   make check     checkpatch --strict + sparse on kernel/, clang-format/-tidy on user/
#   make demo      boot a guest, load sroce, create a device, show it working
#   make bench     perftest and iperf3 ratios: sroce, rxe, TCP (tools/bench/)
#   make bench-lossy   goodput under netem loss/jitter/duplication: sroce, rxe, TCP
#   make bench-insn    executed guest instructions per byte and per message
#                      (a QEMU plugin counts them): sroce, rxe
#   make install   module + provider into the system, for the running kernel
#                  (KVER= another; DESTDIR=, PREFIX= honoured); make uninstall
#   make deb       Debian packages: sroce-dkms, ibverbs-provider-sroce (build/deb/)
#   make test-deb  install, use, upgrade, purge them in a guest (with DKMS)
#   make debug-kernel   build (once, cached outside the tree) the KASAN/lockdep guest kernel
#   make test-debug     the debug-kernel lane: sroce.ko instrumented, memory/locking tests
#   make test-debug-inject   prove the lane fails on an injected use-after-free
#   make test-kver      a core subset on the release's second kernel (6.12 on Debian 12)
#
# KVER=<version> or KDIR=<build dir> select the target kernel (default: the
# release's newest installed Debian stock kernel, which the VM harness also
# boots; for make install and uninstall, the running kernel).

SHELL := /bin/bash
ROOT := $(CURDIR)
# make install / uninstall are for the kernel that runs, unless KVER says.
ifneq ($(filter install uninstall,$(MAKECMDGOALS)),)
KVER ?= $(shell uname -r)
endif
KVER ?= $(shell $(ROOT)/tools/kver.sh 2>/dev/null)
KDIR ?= /lib/modules/$(KVER)/build
BUILD := $(ROOT)/build
USER_BUILD := $(BUILD)/user
CMAKE_BUILD_TYPE ?= RelWithDebInfo
# Warnings are errors everywhere by default (CI and developers alike).
WERROR ?= 1
VM_TIMEOUT ?= 2400
VM_MEM ?= 4G
DESTDIR ?=
PREFIX ?= /usr
LINUX_SOURCE := $(shell $(ROOT)/tools/release.sh | sed -n 's/^SROCE_LINUX_SOURCE=//p')
CHECKPATCH ?= $(BUILD)/$(LINUX_SOURCE)/scripts/checkpatch.pl

export KVER

.PHONY: all deps deps-test deps-package deps-check deps-check-test kernel user test \
	test-host test-vm check check-kernel check-user demo install uninstall deb test-deb clean \
	proto-test fuzz verbs-tests bench bench-lossy bench-insn bench-insn-tools kverbs-test debug-kernel test-debug \
	test-debug-inject test-2vm test-kver

all: kernel user verbs-tests kverbs-test

deps:
	$(ROOT)/tools/deps.sh build

deps-test:
	$(ROOT)/tools/deps.sh build test

deps-package:
	$(ROOT)/tools/deps.sh build package

deps-check:
	@$(ROOT)/tools/deps.sh --check build

deps-check-test:
	@$(ROOT)/tools/deps.sh --check build test

kernel: deps-check
	@test -d "$(KDIR)" || { echo "no kernel build tree at $(KDIR); run 'make deps' (the running kernel's headers) or 'make deps-test' (the test guest's), or set KVER/KDIR" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(ROOT)/kernel $(if $(filter 1,$(WERROR)),SROCE_WERROR=1) W=1 modules

# Kernel-verbs test module (selftests/kverbs), loaded by selftests/rc_kverbs.sh.
kverbs-test: deps-check
	@test -d "$(KDIR)" || { echo "no kernel build tree at $(KDIR); run 'make deps' (the running kernel's headers) or 'make deps-test' (the test guest's), or set KVER/KDIR" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(ROOT)/selftests/kverbs $(if $(filter 1,$(WERROR)),KVT_WERROR=1) W=1 modules

# The provider's host tests need GoogleTest (make deps-test); without it the
# provider alone is built, and make test-host says the tests are missing.
USER_TESTS ?= $(if $(wildcard /usr/include/gtest/gtest.h),ON,OFF)
user: deps-check
	cmake -S $(ROOT)/user -B $(USER_BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE) \
		-DSROCE_WERROR=$(if $(filter 1,$(WERROR)),ON,OFF) -DSROCE_BUILD_TESTS=$(USER_TESTS) >/dev/null
	cmake --build $(USER_BUILD) -j$$(nproc)

PROTO_BUILD := $(BUILD)/proto

# Kernel-independent protocol code (kernel/proto), built for the host.
proto-test: deps-check-test
	cmake -S $(ROOT)/kernel/proto/test -B $(PROTO_BUILD) -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build $(PROTO_BUILD) -j$$(nproc)

# Project-owned verbs test programs (rc_integrity, rc_errors), run in the guest.
VT_BUILD := $(BUILD)/verbs-tests
verbs-tests: deps-check
	cmake -S $(ROOT)/tools/verbs-tests -B $(VT_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(VT_BUILD) -j$$(nproc)

test-host: deps-check-test user proto-test
	ctest --test-dir $(USER_BUILD) --output-on-failure
	ctest --test-dir $(PROTO_BUILD) --output-on-failure

# Coverage-guided fuzzing (clang/libFuzzer), bounded: the packet parser, then
# the transport rules, FUZZ_SECONDS each.
FUZZ_SECONDS ?= 60
fuzz:
	$(ROOT)/kernel/proto/test/run-fuzz.sh $(FUZZ_SECONDS)

# Every selftest in one guest boot; the harness fails the run on any kernel splat.
test-vm: deps-check-test all
	$(ROOT)/tools/vm/run --timeout $(VM_TIMEOUT) --mem $(VM_MEM) -- selftests/run.sh $(TESTS)

# Two guests joined by a virtio-net link (tools/vm/two-guests): sroce between
# two kernels through a real NIC driver, and against rdma_rxe in the other.
VM_2VM_TIMEOUT ?= 900
test-2vm: deps-check-test all
	$(ROOT)/tools/vm/two-guests --timeout $(VM_2VM_TIMEOUT)

# The other-kernel lane (tools/kver-lane.sh): the module built W=1 for the
# release's second kernel series (Debian 12: 6.12), a core subset of the
# selftests in a guest booting it. LANE_KVER= picks another kernel.
test-kver: deps-check-test user verbs-tests
	$(ROOT)/tools/kver-lane.sh $(TESTS)

# One summary line at the end, over host and guest results together.
test: deps-check-test all proto-test
	@$(ROOT)/tools/test-all.sh

# The debug-kernel lane (Documentation/debug-kernel.rst). The kernel is built
# once per machine into ${SROCE_CACHE:-~/.cache/sroce}/debug-kernel/ (20-40 min
# on 2 CPUs, niced); sroce.ko is rebuilt against it in build/debug/.
debug-kernel: deps-check-test
	$(ROOT)/tools/debug-kernel/build.sh

test-debug: deps-check-test user verbs-tests
	$(ROOT)/tools/debug-kernel/test.sh $(TESTS)

# Passes only if the lane catches the bug in tools/debug-kernel/inject-*.patch.
test-debug-inject: deps-check-test user verbs-tests
	$(ROOT)/tools/debug-kernel/prove-inject.sh

check: check-kernel check-user

$(CHECKPATCH):
	@mkdir -p $(BUILD)
	tar -C $(BUILD) -xf /usr/src/$(LINUX_SOURCE).tar.xz $(LINUX_SOURCE)/scripts $(LINUX_SOURCE)/include/linux/kernel.h 2>/dev/null || \
		tar -C $(BUILD) -xf /usr/src/$(LINUX_SOURCE).tar.xz $(LINUX_SOURCE)/scripts

check-kernel: deps-check-test $(CHECKPATCH)
	$(ROOT)/tools/check-kernel.sh $(CHECKPATCH) $(KDIR)

check-user: user
	$(ROOT)/user/check.sh $(USER_BUILD)

demo: deps-check-test all
	$(ROOT)/tools/vm/run --timeout 900 -- tools/demo.sh

# perftest on sroce and rdma_rxe (and iperf3 TCP) in one guest; ratios table.
# Not a test: no thresholds. BENCH_ARGS=--quick for a short run.
bench: deps-check-test all
	$(ROOT)/tools/bench/run.sh $(BENCH_ARGS)

# Goodput under netem loss, jitter and duplication: sroce, rxe, TCP.
bench-lossy: deps-check-test all
	$(ROOT)/tools/bench/run.sh --lossy $(BENCH_ARGS)

# Executed guest instructions (kernel, user) per byte and per message:
# sroce, rxe. The QEMU plugin that counts them and the guest's marker
# program are built in build/bench/ (no qemu-plugin.h needed:
# tools/bench/insn/qemu_plugin_api.h declares what the plugin uses).
BENCH_INSN_TOOLS := $(BUILD)/bench/sroce_insn.so $(BUILD)/bench/insn_mark
bench-insn: deps-check-test all bench-insn-tools
	$(ROOT)/tools/bench/run.sh --insn $(BENCH_ARGS)

bench-insn-tools: $(BENCH_INSN_TOOLS)

$(BUILD)/bench/sroce_insn.so: $(ROOT)/tools/bench/insn/sroce_insn.c $(ROOT)/tools/bench/insn/qemu_plugin_api.h
	@mkdir -p $(@D)
	$(CC) -O2 -g -Wall -Wextra -Wno-unused-parameter $(if $(filter 1,$(WERROR)),-Werror) \
		-fvisibility=hidden -shared -fPIC -o $@ $<

$(BUILD)/bench/insn_mark: $(ROOT)/tools/bench/insn/insn_mark.c
	@mkdir -p $(@D)
	$(CC) -O2 -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) -static -o $@ $<

# make install: the module into /lib/modules/$(KVER)/updates (signed only
# when the kernel's build tree has its signing key, CONFIG_MODULE_SIG_KEY, as
# a self-built kernel does; Debian's does not, and DKMS signs with its own
# key), and the provider
# where libibverbs finds it (user/CMakeLists.txt: a PREFIX other than /usr
# gets a .driver file naming the full path). Builds only what it installs,
# in build/install/ (no tests, so only `make deps` is needed).
INSTALL_BUILD := $(BUILD)/install
SIG_KEY = $(shell sed -n 's/^CONFIG_MODULE_SIG_KEY="\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' $(KDIR)/include/config/auto.conf 2>/dev/null)
SIG_KEY_FOUND = $(if $(SIG_KEY),$(or $(filter pkcs11:%,$(SIG_KEY)),$(wildcard $(SIG_KEY) $(KDIR)/$(SIG_KEY))))
install: deps-check
	@test -d "$(KDIR)" || { echo "make install: no kernel build tree at $(KDIR) for $(KVER): install linux-headers-$(KVER) (make deps does for the running kernel), or set KVER=" >&2; exit 1; }
	@echo "make install: sroce.ko for $(KVER), the provider under $(PREFIX)"
	$(MAKE) -C $(KDIR) M=$(ROOT)/kernel W=1 modules
	$(MAKE) -C $(KDIR) M=$(ROOT)/kernel INSTALL_MOD_PATH=$(DESTDIR) INSTALL_MOD_DIR=updates \
		$(if $(SIG_KEY_FOUND),,CONFIG_MODULE_SIG_ALL=) modules_install
	@if [ -z "$(DESTDIR)" ]; then depmod -a $(KVER); else depmod -b $(DESTDIR) -a $(KVER) 2>/dev/null || true; fi
	cmake -S $(ROOT)/user -B $(INSTALL_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSROCE_BUILD_TESTS=OFF \
		-DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	cmake --build $(INSTALL_BUILD) -j$$(nproc)
	DESTDIR=$(DESTDIR) cmake --install $(INSTALL_BUILD)
	install -D -m 644 $(ROOT)/Documentation/man/sroce.7 $(DESTDIR)$(PREFIX)/share/man/man7/sroce.7

# Removes what make install put there (the provider's files from cmake's
# install manifest), for the same KVER/DESTDIR/PREFIX.
uninstall:
	rm -f $(DESTDIR)/lib/modules/$(KVER)/updates/sroce.ko $(DESTDIR)$(PREFIX)/share/man/man7/sroce.7
	@if [ -z "$(DESTDIR)" ]; then depmod -a $(KVER) 2>/dev/null || true; fi
	@if [ -r $(INSTALL_BUILD)/install_manifest.txt ]; then \
		while read -r f || [ -n "$$f" ]; do echo "rm -f $(DESTDIR)$$f"; rm -f "$(DESTDIR)$$f"; done <$(INSTALL_BUILD)/install_manifest.txt; \
	else \
		echo "make uninstall: no $(INSTALL_BUILD)/install_manifest.txt (the provider was not installed from this tree); remove libsroce-rdmav*.so and /etc/libibverbs.d/sroce.driver by hand" >&2; exit 1; \
	fi

# Debian packages (Documentation/packaging.rst): dpkg-buildpackage on a clean
# export of HEAD (plus uncommitted changes) in build/deb/.
deb: deps-check
	@$(ROOT)/tools/deps.sh --check build package
	$(ROOT)/tools/deb.sh

# The packages installed, used, upgraded and purged in a guest, with a second
# kernel's headers installed half way (tools/deb/test.sh). Not in make test:
# DKMS compiles the module four times in the guest.
test-deb: deps-check-test
	@$(ROOT)/tools/deps.sh --check build package test
	$(ROOT)/tools/deb/test.sh

clean:
	-$(MAKE) -C $(KDIR) M=$(ROOT)/kernel clean
	-$(MAKE) -C $(KDIR) M=$(ROOT)/selftests/kverbs clean
	rm -rf $(BUILD)
