# SPDX-License-Identifier: GPL-2.0
#
# shift: top-level build.  Quiet unless V=1.
#
#   make [all]        the module, the tools and the selftests
#   make module       kmod/shift_ft.ko against KDIR (KVER: default from
#                     scripts/kver.sh; the lab boots the same kernel)
#   make tools        shiftmon
#   make lib          libshiftu (userlib/)
#   make check        install what is missing, build, host unit tests, the lab
#                     (the module's one-host tests on the other kernels,
#                     every other test on KVER;
#                     KERNELS=all: every test on every kernel;
#                     the one-host tests in one guest beside the two-host
#                     tests in two pairs of guests, TWO_LANES=1: in one
#                     pair, after the rest; the many-QP rides 1 round
#                     each, MANY_ROUNDS=N, torture 15 pulls, 30 module
#                     loads in load_unload.sh)
#   make demo         the two-host lab: a link pulled, the table changing
#   make torture      libshiftu under 50 random rail-0 pulls with checked
#                     NCCL-style traffic, alone (the two-host lab; check
#                     runs it too); TORTURE_PULLS=N, LU_LOG=debug
#   make fuzz         shift_ft's netlink family and /dev/shift_ft under
#                     1,000,000 fuzzed messages and ioctl/mmap abuse while
#                     the rails flap, then rmmod (the one-host lab, about
#                     4 minutes; check runs 50,000): FT_FUZZ_MSGS=N,
#                     FT_FUZZ_SEED=S replays a run, KVER=... picks the kernel
#   make many         libshiftu with many QPs and processes through pulls,
#                     five rounds each, alone (the two-host lab, about 10
#                     minutes; check runs two rounds each): ib_write_bw -q 16,
#                     shiftgen -P 64, eight ib_write_bw pairs started together
#   make soak         libshiftu through 1000 faults (rail-0 pulls, silent
#                     drops, 50-500 ms flaps, rail-1 pulls) under checked
#                     NCCL-like traffic in two processes of 8 QPs on each
#                     host (the two-host lab, about an hour):
#                     SOAK_FAULTS=N, SOAK_CONNS=N, SOAK_PLAIN=1 (the
#                     control: the same without the library),
#                     SOAK_KINDS=riding (set_link pulls and drops only,
#                     which plain Soft-RoCE rides)
#   make bench        all, then libshiftu's cost (latency, bandwidth,
#                     instructions and syscalls per data verb) and its
#                     failover times on the two-host lab; report on stdout
#                     and in build/bench/report.txt
#   make install      module (modules_install), libshiftu, the UAPI header
#   make dkms-install register, build and install through DKMS
#   make style        checkpatch on the kernel code
#   make clean

TOP      := $(CURDIR)
VERSION  := $(shell $(TOP)/scripts/version.sh)
# The kernel to build for (scripts/kver.sh says which when KVER is not
# given); exported, so that the lab boots the same one.  Expanded when
# used, not now: on a fresh machine check's deps install the kernels first.
ifeq ($(origin KVER),undefined)
KVER      = $(shell $(CURDIR)/scripts/kver.sh)
endif
KDIR     ?= /lib/modules/$(KVER)/build
BUILD    := $(TOP)/build
KSFT_TOP := $(BUILD)/kselftest
KSFT_DIR := $(KSFT_TOP)/tools/testing/selftests
# the kernel's YNL tools and netlink schemas (selftests/lab/get-ynl.sh)
YNL_TOP  := $(BUILD)/ynl
LAB      := $(TOP)/selftests/lab/lab.sh
PREFIX   ?= /usr/local

ifeq ($(V),1)
Q :=
SUBMAKE_QUIET :=
else
Q := @
SUBMAKE_QUIET := -s
MAKEFLAGS += --no-print-directory
endif

TOOL_DIRS     := tools/shiftmon
SELFTEST_DIRS := selftests/shift_ft selftests/shiftmon selftests/libshiftu
LAB_ONE_DIRS  := selftests/shift_ft selftests/shiftmon selftests/libshiftu
LAB_TWO_DIRS  := selftests/shift_ft_2host selftests/shiftmon_2host \
		 selftests/libshiftu_2host
# the one-host tests check runs on every installed kernel other than KVER
LAB_KMOD_DIRS := selftests/shift_ft
# the build machine's own: pure logic and packaging, and the spin model
HOST_DIRS     := selftests/host selftests/model

export KVER KSFT_DIR V LAB_ONE_DIRS LAB_TWO_DIRS LAB_KMOD_DIRS HOST_DIRS KERNELS TWO_LANES MANY_ROUNDS

.PHONY: all module tools lib selftests kselftest ynl check deps unit lab dkms-test torture \
	fuzz soak demo bench many install dkms-install style clean version

all: module tools lib selftests

# kbuild's kmod/shift_ft.ko is for the last KVER built; the lab loads the
# copy kept for the kernel it boots, build/kmod/<its version>/shift_ft.ko.
# So with the selftests' own module (selftests/shift_ft/nldelay), which
# nothing installs.
NLDELAY := selftests/shift_ft/nldelay
module:
	$(Q)$(MAKE) -C $(KDIR) M=$(TOP) modules
	$(Q)install -D -m 0644 kmod/shift_ft.ko $(BUILD)/kmod/$(KVER)/shift_ft.ko
	$(Q)$(MAKE) -C $(KDIR) M=$(TOP)/$(NLDELAY) modules
	$(Q)install -D -m 0644 $(NLDELAY)/sft_nldelay.ko $(BUILD)/kmod/$(KVER)/sft_nldelay.ko

tools:
	$(Q)for d in $(TOOL_DIRS); do $(MAKE) -C $$d || exit; done

lib:
	$(Q)$(MAKE) -C userlib

$(KSFT_TOP)/.stamp: selftests/lab/get-kselftest.sh
	$(Q)$(TOP)/selftests/lab/get-kselftest.sh $(KSFT_TOP)

kselftest: $(KSFT_TOP)/.stamp

# Only the tests use YNL: the module never depends on it (DKMS builds where
# there are no kernel sources).
ynl:
	$(Q)$(TOP)/selftests/lab/get-ynl.sh $(YNL_TOP)

# the host tests link userlib's objects: build them first, once
selftests: kselftest ynl lib
	$(Q)for d in $(SELFTEST_DIRS) $(LAB_TWO_DIRS) $(HOST_DIRS); do \
		$(MAKE) $(SUBMAKE_QUIET) -C $$d OUTPUT=$(TOP)/$$d KSFT_DIR=$(KSFT_DIR) \
			SHIFT_TOP=$(TOP) all || exit; \
	done

version:
	@echo $(VERSION)

deps:
	$(Q)$(TOP)/selftests/lab/install-deps.sh

# Everything, as the README promises: a fresh Debian 12 machine as root.
check: deps
	$(Q)$(MAKE) all
	$(Q)$(TOP)/selftests/check.sh

# through the lab guests' ksft-run, as check does, so that the runner finds
# each directory's settings; fails when a test does (runner.sh's make does
# not), or when the run itself did
unit: selftests
	$(Q)mkdir -p $(BUILD); \
	{ KSFT_DIR=$(KSFT_DIR) $(TOP)/selftests/lab/guest/ksft-run $(addprefix $(TOP)/,$(HOST_DIRS)); \
	  echo $$? > $(BUILD)/unit.rc; } | tee $(BUILD)/unit.tap; \
	[ "$$(cat $(BUILD)/unit.rc)" = 0 ] && ! grep -q '^not ok' $(BUILD)/unit.tap

lab: all
	$(Q)$(LAB) run one $(LAB_ONE_DIRS)
	$(Q)$(LAB) run two $(LAB_TWO_DIRS)

# DKMS builds the module for every installed kernel (also one of check's
# host tests)
dkms-test:
	$(Q)$(TOP)/selftests/host/dkms_build.sh

demo: deps
	$(Q)$(MAKE) all
	$(Q)$(LAB) scenario demo

bench: all
	$(Q)$(TOP)/bench/run.sh

torture: all
	$(Q)$(LAB) scenario torture two

fuzz: all
	$(Q)$(LAB) scenario fuzz one

# 1000 faults take about an hour of the lab's VM time: a timeout of its own
soak: all
	$(Q)LAB_TIMEOUT=$${LAB_TIMEOUT:-10800} $(LAB) scenario soak two

many: all
	$(Q)LAB_TESTS="many_qps.sh many_gen.sh many_procs.sh store_down.sh" STORE_DOWN_P=64 \
		MANY_GEN_P=64 MANY_PROCS_N=8 \
		$(LAB) run two selftests/libshiftu_2host

install: module tools lib
	$(Q)$(MAKE) -C $(KDIR) M=$(TOP) modules_install
	$(Q)for d in $(TOOL_DIRS); do $(MAKE) -C $$d install || exit; done
	$(Q)$(MAKE) -C userlib install
	$(Q)depmod -a $(KVER)
	$(Q)install -D -m 0644 uapi/shift_ft.h $(DESTDIR)$(PREFIX)/include/shift_ft.h
	$(Q)install -D -m 0644 Documentation/man/shift_ft.4 \
		$(DESTDIR)$(PREFIX)/share/man/man4/shift_ft.4

dkms-install:
	$(Q)$(TOP)/scripts/dkms-install.sh

style:
	$(Q)$(TOP)/scripts/style.sh

clean:
	$(Q)$(MAKE) -C $(KDIR) M=$(TOP) clean
	$(Q)$(MAKE) -C $(KDIR) M=$(TOP)/$(NLDELAY) clean
	$(Q)for d in $(TOOL_DIRS); do $(MAKE) -C $$d clean; done
	$(Q)$(MAKE) -C userlib clean
	$(Q)for d in $(SELFTEST_DIRS) $(LAB_TWO_DIRS) $(HOST_DIRS); do \
		$(MAKE) -C $$d OUTPUT=$(TOP)/$$d KSFT_DIR=$(KSFT_DIR) SHIFT_TOP=$(TOP) clean 2>/dev/null; \
	done; true
	$(Q)rm -rf $(BUILD)/lab/runs $(BUILD)/kmod
