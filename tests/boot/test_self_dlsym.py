"""Boot test: dlsym finds a UKL application's own symbols, as it finds a
dynamically linked -rdynamic executable's (tests/programs/self_dlsym.c;
ukl/toolchain/self_symbols.py and the C library's patch "elf: find a UKL
application's own symbols with dlsym")."""
from __future__ import annotations

import pytest

from tests.boot.test_ukl_boot import BOOT_TIMEOUT
from tests.conftest import PROGRAMS, build_image, ukl

pytestmark = pytest.mark.boot
PROGRAM = str(PROGRAMS / "self_dlsym.c")


def test_dlsym_finds_the_programs_own_functions_and_data_at_cpl0(ukl_kernel) -> None:
    res = ukl("run", build_image("t-self-dlsym", PROGRAM), "--timeout", BOOT_TIMEOUT)
    out = res.stdout + res.stderr
    # Global function and data, by RTLD_DEFAULT and by dlopen(NULL)'s
    # handle; an unknown name is an error; hidden and thread-local
    # symbols are not exported, as -rdynamic would not export them.
    assert ("self-dlsym: default=42 handle=42 value=7 missing=none error=yes hidden=none "
            "tls=none main=same") in out, out
    assert res.returncode == 0, out
