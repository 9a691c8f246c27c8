# SPDX-License-Identifier: GPL-2.0
#
# quiet.mk: kbuild-style output for the userspace Makefiles (shiftmon,
# libshiftu): "  CC      x.o" lines, nothing under make -s, full commands
# with V=1.  Recipes prefix commands with $(Q) and announce steps with
# $(quiet) "  TAG     target".

ifeq ($(V),1)
Q :=
quiet = @:
else ifneq ($(findstring s,$(firstword -$(MAKEFLAGS))),)
Q := @
quiet = @:
else
Q := @
quiet = @echo
endif
