# UKL: Unikernel Linux.
#
#   make run        build the kernel and the hello example, boot it under QEMU
#   make test       the test suite (lint, unit, host-side toolchain, QEMU boot
#                   tests), but for the distribution-like flavours' tests
#   make test-full  every test, the distribution-like flavours' too
#   make test-distro  only what test-full adds to test
#
# Both install the Debian packages they need first (`make setup`, as root).
# Everything generated goes to build/ (ignored by git).

PYTHON ?= python3
UKL := $(PYTHON) bin/ukl
# Arguments for the hello program: make run ARGS="one two"
ARGS ?=

.PHONY: run test test-full test-distro unit lint setup kernel toolchain sources catalog clean help

help:
	@sed -n '3,8p' Makefile

# The hello example linked into the UKL kernel, running at CPL0.
run: setup
	$(UKL) build examples/hello/hello.c -o hello
	$(UKL) run hello --timeout 300 -- $(ARGS)

# The distribution-like flavours (*-distro, built on demand) are most of a
# first build's time: their tests, marked `distro`, are test-full's.
# Two pytest-xdist workers run the suite's modules two at a time (most
# tests boot one single-CPU QEMU); modules that share an image name or a
# host port run in one worker (tests/conftest.py, SHARING).
PYTEST_LANES := -n 2 --dist loadscope
test: setup sources kernel toolchain
	$(PYTHON) -m pytest --durations=25 $(PYTEST_LANES) -m "not distro" tests

test-full: setup sources kernel toolchain
	$(PYTHON) -m pytest --durations=25 $(PYTEST_LANES) tests

test-distro: setup sources kernel toolchain
	$(PYTHON) -m pytest --durations=25 $(PYTEST_LANES) -m distro tests

# Unit tests only (flake8, mypy and the layering test included): no kernel
# build, no QEMU.
unit:
	$(PYTHON) -m pytest tests/unit

# flake8 and mypy --strict on ukl/ (config: pyproject.toml), the import
# layering, and checkpatch on the patch series.
lint: setup sources
	$(PYTHON) -m pytest tests/unit/test_code_style.py tests/unit/test_layering.py
	$(UKL) series check linux
	$(UKL) series check glibc

setup:
	$(UKL) setup

# The whole Debian catalog (catalog/packages.ini): every package built by
# Debian's own build, booted on UKL and on stock, and tested; recorded in
# results/catalog/. make test runs the short version (ukl catalog --small).
catalog: setup sources kernel toolchain
	$(UKL) catalog --name catalog

sources:
	$(UKL) series prepare all

# Every named flavour (`ukl kernel list`) but those built on demand: stock,
# the UKL base model, one per option marked in kernel/options.ini, and
# kernel/flavours.ini's combinations. The tests use each.
kernel:
	$(UKL) kernel build

# UKL glibc, gcc runtime libraries and ukl-cc/ukl-c++ support files.
toolchain:
	$(UKL) toolchain build

clean:
	rm -rf build/images build/images-* build/apps build/logs
