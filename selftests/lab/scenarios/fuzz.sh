#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fuzz: shift_ft's netlink family and /dev/shift_ft under FT_FUZZ_MSGS
# (default 1,000,000) fuzzed messages with ioctl and mmap abuse, the rails
# flapping (selftests/shift_ft/fuzz.sh, whose short run of 50,000 is part of
# `make check`; FT_FUZZ_SEED replays a run): `make fuzz` runs it alone, on
# one host.  See that script for what it proves.

set -e
cd "$SHIFT_TOP/selftests/shift_ft"
export FT_FUZZ_MSGS=${FT_FUZZ_MSGS:-1000000}
exec bash ./fuzz.sh
