"""Debian packages the build host needs, each with the reason it is needed.

`ukl setup` installs what is missing with apt-get (as root), saying what and
why. Nothing is ever downloaded from anywhere but Debian's archive.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

from ukl.common.errors import UklError


@dataclass(frozen=True)
class Package:
    name: str
    why: str


# Grouped by layer so a later issue adds its needs in one place.
SOURCES = [
    Package("linux-source-6.1", "the Linux 6.1 source that the UKL patch series applies to"),
    Package("glibc-source", "the glibc 2.36 source that the UKL libc patch series applies to"),
    Package("gcc-12-source", "libgcc, libgcc_eh, crt files and libstdc++ rebuilt for the kernel"
            " code model"),
    Package("xz-utils", "to unpack the Debian source tarballs"),
    Package("git", "patch series are materialised as git trees"),
]
KERNEL_BUILD = [
    Package("gcc", "compiles the kernel and test programs"),
    Package("make", "drives Kbuild"),
    Package("libc6-dev", "static test programs link against libc.a"),
    Package("flex", "Kconfig and dtc lexers"),
    Package("bison", "Kconfig parser"),
    Package("bc", "Kbuild computes timer constants with bc"),
    Package("libelf-dev", "objtool (ORC unwinder, noinstr checks) reads ELF files"),
    Package("ccache", "kernel rebuilds reuse earlier compiles"),
]
TOOLCHAIN = [
    Package("gawk", "glibc's configure and build scripts need GNU awk"),
    Package("linux-libc-dev", "kernel UAPI headers installed into the UKL sysroot"),
    Package("binutils", "ld -r, objcopy and objdump for UKL objects and `ukl lint`"),
    Package("g++", "compiles C++ applications and the C++ support libraries"),
    Package("gcc-12-plugin-dev", "the headers gcc's own build generated, which libgcc's build"
            " reads (no gcc is configured or built)"),
    # gcc's top-level configure insists on these even though no compiler is built.
    Package("libgmp-dev", "configuring gcc-12-source for its runtime libraries"),
    Package("libmpfr-dev", "configuring gcc-12-source for its runtime libraries"),
    Package("libmpc-dev", "configuring gcc-12-source for its runtime libraries"),
]
RUNTIME = [
    Package("qemu-system-x86", "boots the images (TCG, no hardware virtualisation needed)"),
    Package("libglib2.0-dev", "glib's headers, which the ukl_counts QEMU plugin compiles against"),
    Package("busybox-static", "the guest userland: init shell, mount, ip, dd"),
    Package("gdb", "`ukl run --gdb` attaches gdb to the guest kernel and application"),
]
APPS = [
    Package("python3", "Debian's interpreter: runs ukl-cc in Debian's builds (their PATH "
            "is the system's) and the lint tools"),
    Package("dpkg-dev", "`ukl build --debian` unpacks Debian source packages (dpkg-source)"),
    Package("debhelper", "Debian's own builds run debhelper (dh); its tests build a "
            "debhelper package"),
    Package("pkg-config", "configure scripts of Debian applications look up their libraries"),
    Package("autoconf", "autotools packages are autoreconf'ed before building, as Debian does"),
    Package("automake", "autotools packages are autoreconf'ed before building, as Debian does"),
    Package("libtool", "autotools packages are autoreconf'ed before building, as Debian does"),
    Package("autopoint", "autoreconf of packages that use gettext (GNU hello, ...)"),
    Package("patch", "recipes' own patches on Debian sources (recipes/redis/*.patch)"),
]
# `ukl pkg`: images packaged for other machines (ukl/image/oci.py, iso.py).
PACKAGING = [
    Package("umoci", "`ukl pkg --oci` makes OCI image layouts for urunc"),
    Package("skopeo", "`ukl pkg --oci-archive` writes OCI archives; the tests inspect layouts"),
    Package("grub-common", "`ukl pkg --iso`: grub-mkrescue makes the bootable ISO"),
    Package("grub-pc-bin", "`ukl pkg --iso`: GRUB for BIOS machines"),
    Package("grub-efi-amd64-bin", "`ukl pkg --iso`: GRUB for EFI machines"),
    Package("xorriso", "`ukl pkg --iso`: grub-mkrescue writes the ISO with it"),
    Package("mtools", "`ukl pkg --iso`: grub-mkrescue makes the ISO's EFI partition with it"),
    Package("ovmf", "EFI firmware for QEMU: the tests boot `ukl pkg --iso` images under EFI"),
]
# Checks `make test` runs on the project itself.
DEVELOP = [
    Package("flake8", "lints the ukl tool's Python code (make lint, make test)"),
    Package("mypy", "type-checks the ukl tool's Python code with --strict"),
    Package("python3-ply", "the kernel's checkpatch.pl checks SPDX lines with it"),
    Package("python3-git", "the kernel's checkpatch.pl checks SPDX lines with it"),
    Package("python3-debian", "mypy checks the ukl tool against python-debian's types"),
]
ALL = SOURCES + KERNEL_BUILD + TOOLCHAIN + RUNTIME + APPS + PACKAGING + DEVELOP


def installed(names: list[str]) -> set[str]:
    """The subset of `names` that dpkg reports as installed."""
    if not names:
        return set()
    res = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package} ${db:Status-Status}\n", *names],
        capture_output=True, text=True,
    )
    # dpkg-query exits 1 when some names are unknown; the output still lists
    # the ones it knows.
    found = set()
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == "installed":
            found.add(parts[0])
    return found


def missing(packages: list[Package]) -> list[Package]:
    have = installed([p.name for p in packages])
    return [p for p in packages if p.name not in have]


# Another apt-get (a second ukl command's build dependencies, the
# machine's own updates) holds dpkg's lock: wait for it rather than fail.
WAIT_FOR_DPKG = ("-o", "DPkg::Lock::Timeout=900")


def ensure(packages: list[Package] = ALL) -> None:
    """Install whatever is missing, or explain exactly what to install."""
    if shutil.which("dpkg-query") is None:
        raise UklError("this host is not Debian-based (no dpkg-query); UKL needs Debian 12")
    todo = missing(packages)
    if not todo:
        return
    names = [p.name for p in todo]
    print("ukl: installing Debian packages:", file=sys.stderr)
    for p in todo:
        print(f"   {p.name:18} {p.why}", file=sys.stderr)
    if os.geteuid() != 0:
        raise UklError(
            "missing Debian packages; as root run: apt-get install " + " ".join(names)
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # A fresh machine may have empty package lists; refresh them first.
    _apt(["apt-get", *WAIT_FOR_DPKG, "update"], env, "apt-get update")
    _apt(["apt-get", *WAIT_FOR_DPKG, "install", "-y", "--no-install-recommends", *names], env,
         "apt-get install")
    still = missing(todo)
    if still:
        raise UklError("apt-get did not install: " + " ".join(p.name for p in still))


def _apt(cmd: list[str], env: dict[str, str], what: str) -> None:
    res = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise UklError(
            f"{what} failed (exit status {res.returncode}); check the network and "
            "/etc/apt/sources.list, then rerun",
            detail=(res.stderr or res.stdout)[-2000:],
        )
