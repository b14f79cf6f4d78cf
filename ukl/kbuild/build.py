"""Incremental, ccache-backed kernel builds, one output directory per flavour.

The source tree is build/src/linux (Debian source + our series); objects go to
build/kernel/FLAVOUR via Kbuild's O=, so several flavours share one tree and
each rebuilds only what changed.
"""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from ukl.common import paths, stamp
from ukl.common.buildenv import build_env, cached, jobs
from ukl.common.errors import UklError
from ukl.common.proc import StepCounter, run_logged
from ukl.kbuild import kconfig, objtool, seed, thunks
from ukl.kbuild.flavour import Flavour
from ukl.kbuild.options import CONFIGS_DIR
from ukl.sources import debian, series

# Kbuild's quiet output: two spaces, an upper-case tag, the target.
_KBUILD_STEP = re.compile(r"^  [A-Z][A-Z0-9_]* +\S")
# Steps of a cold build of the stock flavour, measured; refined per output
# directory after each build (stored in .ukl-steps).
_DEFAULT_STEPS = 1560
_CONFIG_STAMP = ".ukl-config-digest"


def output_dir(flavour: str) -> Path:
    return paths.kernel_builds_dir() / flavour


def make_env() -> dict[str, str]:
    # Stable version banner: the same sources give the same vmlinux strings.
    return build_env(KBUILD_BUILD_USER="ukl", KBUILD_BUILD_HOST="ukl")


def make_command(tree: Path, out: Path, *targets: str) -> list[str]:
    cc = cached("gcc")
    return ["make", "-C", str(tree), f"O={out}", f"-j{jobs()}",
            f"CC={cc}", f"HOSTCC={cc}", *targets]


def configure(tree: Path, flavour: Flavour, out: Path) -> Path:
    """(Re)generate out/.config when the fragments changed; verify every option."""
    out.mkdir(parents=True, exist_ok=True)
    wanted = flavour.kconfig
    text = kconfig.render(wanted)
    state = stamp.digest(text)
    dot_config = out / ".config"
    if dot_config.is_file() and stamp.current(out / _CONFIG_STAMP, state):
        return dot_config
    allconfig = out / "ukl-allconfig"
    allconfig.write_text(text)
    env = make_env()
    env["KCONFIG_ALLCONFIG"] = str(allconfig)
    run_logged(make_command(tree, out, "allnoconfig"), label=f"configure kernel {flavour.name}",
               log_path=paths.logs_dir() / f"kernel-{flavour.name}-config.log", env=env)
    bad = kconfig.mismatches(wanted, kconfig.parse(dot_config.read_text(), str(dot_config)))
    if bad:
        raise UklError(
            f"kernel flavour {flavour.name}: {len(bad)} option(s) did not take effect "
            f"(missing dependency?); fix {', '.join(f.name for f in flavour.fragments)}",
            detail="\n".join(bad))
    stamp.record(out / _CONFIG_STAMP, state)
    return dot_config


def _seed_first_build(flavour: Flavour, out: Path) -> None:
    """A never-configured output directory starts as a copy of the nearest
    built flavour's (see ukl.kbuild.seed)."""
    if (out / ".config").is_file():
        return
    named = {opt for fragment in sorted(CONFIGS_DIR.glob("*.config"))
             for opt in kconfig.parse(fragment.read_text(), str(fragment))}
    source = seed.nearest(flavour.kconfig, out.parent, exclude=out, named=named)
    if source is None:
        return
    print(f"ukl: kernel {flavour.name}: first build, starting from {source.name}'s objects",
          file=sys.stderr)
    seed.seed(out, source)


def build(flavour: Flavour, ukl_app: Path | None = None, build_as: str | None = None,
          snapshot: Path | None = None) -> Path:
    """Build vmlinux for a flavour (incrementally) and return its path.

    With `ukl_app` (a UKL flavour only), the application object is linked
    into vmlinux: only the final link depends on it, so changing the
    application relinks without recompiling the kernel.

    `build_as` names the output directory instead of the flavour: flavours
    that take turns in one directory (`ukl matrix`) rebuild only the
    objects whose options changed (Kbuild tracks each object's CONFIG_
    dependencies), where a fresh directory per flavour compiles everything.
    The returned vmlinux is then only valid until the next build there.

    `snapshot`: a path the new vmlinux is copied to before the output
    directory's lock is let go, and which is returned. The output
    directory's vmlinux is the next build's to rewrite (another image's
    application link, or a build without one): an image copied from it
    after the lock could carry another application, or half a kernel.
    """
    if ukl_app is not None and not flavour.is_ukl:
        raise UklError(f"kernel flavour {flavour.name} has CONFIG_UNIKERNEL_LINUX off; "
                       "a UKL application needs a UKL flavour (e.g. --kernel ukl)")
    tree = series.prepare(debian.get("linux"))
    out = output_dir(build_as or flavour.name)
    out.mkdir(parents=True, exist_ok=True)
    # One build per output directory at a time: the app link rewrites vmlinux.
    with seed.locked(out):
        _seed_first_build(flavour, out)
        configure(tree, flavour, out)
        targets = ["vmlinux"]
        if ukl_app is not None:
            # The application's speculation thunks as this kernel has them.
            app = thunks.for_kernel(ukl_app, out / ".config", out / "ukl-app.o")
            targets.append(f"UKL_APP={app.resolve()}")
        counter = StepCounter.remembered(_KBUILD_STEP, out, _DEFAULT_STEPS)
        log_path = paths.logs_dir() / f"kernel-{flavour.name}.log"
        run_logged(make_command(tree, out, *targets), label=f"kernel {flavour.name}",
                   log_path=log_path, env=make_env(), counter=counter)
        counter.save(out)
        warned = objtool.unexpected(log_path.read_text(errors="replace"))
        if warned:
            objtool.forget(warned, out)
            raise UklError(f"kernel {flavour.name}: objtool warned {len(warned)} time(s), "
                           f"first: {warned[0]}; the objects are removed so the next build "
                           f"checks them again; full log: {log_path}")
        vmlinux = out / "vmlinux"
        if not vmlinux.is_file():
            raise UklError(f"kernel build finished but {vmlinux} is missing")
        if snapshot is None:
            return vmlinux
        snapshot.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(vmlinux, snapshot)
        return snapshot
