# UKL: Unikernel Linux.
#
#   make run    build the kernel and the hello example, boot it under QEMU
#   make test   the whole test suite (unit, host-side toolchain, QEMU boot tests)
#
# Both install the Debian packages they need first (`make setup`, as root).
# Everything generated goes to build/ (ignored by git).

PYTHON ?= python3
UKL := $(PYTHON) bin/ukl
# Arguments for the hello program: make run ARGS="one two"
ARGS ?=

.PHONY: run test unit setup kernel toolchain sources clean help

help:
	@sed -n '3,5p' Makefile

# The hello example linked into the UKL kernel, running at CPL0.
run: setup
	$(UKL) build examples/hello/hello.c -o hello
	$(UKL) run hello --timeout 300 -- $(ARGS)

test: setup sources kernel toolchain
	$(PYTHON) -m pytest --durations=25 tests

# Unit tests only: no kernel build, no QEMU.
unit:
	$(PYTHON) -m pytest tests/unit

setup:
	$(UKL) setup

sources:
	$(UKL) series prepare all

# The flavours the tests use, from the same patched tree: stock (every UKL
# option off), the UKL base model, UKL_BYP, UKL_RET, RET + BYP with the
# shortcuts and run-to-completion, and the stack options UKL_PF_DF (instead of
# the default UKL_PF_SS) and UKL_NSS_PS (kernel/flavours.ini).
kernel:
	$(UKL) kernel build stock
	$(UKL) kernel build ukl
	$(UKL) kernel build ukl-byp
	$(UKL) kernel build ukl-ret
	$(UKL) kernel build ukl-ret-byp
	$(UKL) kernel build ukl-pf-df
	$(UKL) kernel build ukl-nss-ps

# UKL glibc, gcc runtime libraries and ukl-cc/ukl-c++ support files.
toolchain:
	$(UKL) toolchain build

clean:
	rm -rf build/images build/apps build/logs
