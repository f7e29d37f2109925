# sroce top-level Makefile.
#
#   make deps      install every Debian package the project needs (idempotent)
#   make           build kernel/sroce.ko and build/user/libsroce-rdmav34.so (65 for rdma-core 65)
#   make test      host unit tests + all selftests in a QEMU guest + the two-guest lane
#   make test-2vm  the two-guest lane alone: two QEMU guests joined by a virtio-net link
#   make check     checkpatch --strict + sparse on kernel/, clang-format/-tidy on user/
#   make demo      boot a guest, load sroce, create a device, show it working
#   make install   module + provider into the system (DESTDIR-aware)
#   make debug-kernel   build (once, cached outside the tree) the KASAN/lockdep guest kernel
#   make test-debug     the debug-kernel lane: sroce.ko instrumented, memory/locking tests
#   make test-debug-inject   prove the lane fails on an injected use-after-free
#
# KVER=<version> or KDIR=<build dir> select the target kernel (default: the
# newest installed Debian stock kernel, which the VM harness also boots).

SHELL := /bin/bash
ROOT := $(CURDIR)
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

.PHONY: all deps deps-check kernel user test test-host test-vm check check-kernel \
	check-user demo install clean proto-test fuzz verbs-tests bench kverbs-test \
	debug-kernel test-debug test-debug-inject test-2vm

all: kernel user verbs-tests kverbs-test

deps:
	$(ROOT)/tools/deps.sh

deps-check:
	@$(ROOT)/tools/deps.sh --check

kernel: deps-check
	@test -d "$(KDIR)" || { echo "no kernel build tree at $(KDIR); run 'make deps' (or set KVER/KDIR)" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(ROOT)/kernel $(if $(filter 1,$(WERROR)),SROCE_WERROR=1) W=1 modules

# Kernel-verbs test module (selftests/kverbs), loaded by selftests/rc_kverbs.sh.
kverbs-test: deps-check
	@test -d "$(KDIR)" || { echo "no kernel build tree at $(KDIR); run 'make deps' (or set KVER/KDIR)" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(ROOT)/selftests/kverbs $(if $(filter 1,$(WERROR)),KVT_WERROR=1) W=1 modules

user: deps-check
	cmake -S $(ROOT)/user -B $(USER_BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_BUILD_TYPE) \
		-DSROCE_WERROR=$(if $(filter 1,$(WERROR)),ON,OFF) >/dev/null
	cmake --build $(USER_BUILD) -j$$(nproc)

PROTO_BUILD := $(BUILD)/proto

# Kernel-independent protocol code (kernel/proto), built for the host.
proto-test: deps-check
	cmake -S $(ROOT)/kernel/proto/test -B $(PROTO_BUILD) -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build $(PROTO_BUILD) -j$$(nproc)

# Project-owned verbs test programs (rc_integrity, rc_errors), run in the guest.
VT_BUILD := $(BUILD)/verbs-tests
verbs-tests: deps-check
	cmake -S $(ROOT)/tools/verbs-tests -B $(VT_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(VT_BUILD) -j$$(nproc)

test-host: user proto-test
	ctest --test-dir $(USER_BUILD) --output-on-failure
	ctest --test-dir $(PROTO_BUILD) --output-on-failure

# Coverage-guided fuzzing (clang/libFuzzer), bounded: the packet parser, then
# the transport rules, FUZZ_SECONDS each.
FUZZ_SECONDS ?= 60
fuzz:
	$(ROOT)/kernel/proto/test/run-fuzz.sh $(FUZZ_SECONDS)

# Every selftest in one guest boot; the harness fails the run on any kernel splat.
test-vm: all
	$(ROOT)/tools/vm/run --timeout $(VM_TIMEOUT) --mem $(VM_MEM) -- selftests/run.sh $(TESTS)

# Two guests joined by a virtio-net link (tools/vm/two-guests): sroce between
# two kernels through a real NIC driver, and against rdma_rxe in the other.
VM_2VM_TIMEOUT ?= 900
test-2vm: all
	$(ROOT)/tools/vm/two-guests --timeout $(VM_2VM_TIMEOUT)

# One summary line at the end, over host and guest results together.
test: all proto-test
	@$(ROOT)/tools/test-all.sh

# The debug-kernel lane (Documentation/debug-kernel.rst). The kernel is built
# once per machine into ${SROCE_CACHE:-~/.cache/sroce}/debug-kernel/ (20-40 min
# on 2 CPUs, niced); sroce.ko is rebuilt against it in build/debug/.
debug-kernel: deps-check
	$(ROOT)/tools/debug-kernel/build.sh

test-debug: deps-check user verbs-tests
	$(ROOT)/tools/debug-kernel/test.sh $(TESTS)

# Passes only if the lane catches the bug in tools/debug-kernel/inject-*.patch.
test-debug-inject: deps-check user verbs-tests
	$(ROOT)/tools/debug-kernel/prove-inject.sh

check: check-kernel check-user

$(CHECKPATCH):
	@mkdir -p $(BUILD)
	tar -C $(BUILD) -xf /usr/src/$(LINUX_SOURCE).tar.xz $(LINUX_SOURCE)/scripts $(LINUX_SOURCE)/include/linux/kernel.h 2>/dev/null || \
		tar -C $(BUILD) -xf /usr/src/$(LINUX_SOURCE).tar.xz $(LINUX_SOURCE)/scripts

check-kernel: deps-check $(CHECKPATCH)
	$(ROOT)/tools/check-kernel.sh $(CHECKPATCH) $(KDIR)

check-user: user
	$(ROOT)/user/check.sh $(USER_BUILD)

demo: all
	$(ROOT)/tools/vm/run --timeout 900 -- tools/demo.sh

# perftest on sroce and rdma_rxe (and iperf3 TCP) in one guest; ratios table.
# Not a test: no thresholds. BENCH_ARGS=--quick for a short run.
bench: all
	$(ROOT)/tools/bench/run.sh $(BENCH_ARGS)

install: all
	$(MAKE) -C $(KDIR) M=$(ROOT)/kernel INSTALL_MOD_PATH=$(DESTDIR) INSTALL_MOD_DIR=updates modules_install
	@if [ -z "$(DESTDIR)" ]; then depmod -a $(KVER); else depmod -b $(DESTDIR) -a $(KVER) 2>/dev/null || true; fi
	DESTDIR=$(DESTDIR) cmake --install $(USER_BUILD) --prefix $(PREFIX)

clean:
	-$(MAKE) -C $(KDIR) M=$(ROOT)/kernel clean
	-$(MAKE) -C $(KDIR) M=$(ROOT)/selftests/kverbs clean
	rm -rf $(BUILD)
