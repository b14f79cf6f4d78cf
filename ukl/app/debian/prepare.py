"""A recipe's prepare script: image files made on the host at build time.

Some servers need files that only their own tools make: PostgreSQL starts
from a data directory that `initdb` creates. `initdb` runs the server
binary with its loadable modules, which a static program cannot load, so
it cannot run in the guest; the prepare script builds the same source the
ordinary (native, dynamically linked) way and runs it on the host.

The script (recipes/..., named by `[image] prepare`) runs with `sh -eu` in
its work directory, build/debian/PACKAGE/prepare, which it keeps between
runs (an incremental native build), and gets:

    UKL_SOURCE          the unpacked Debian source (read only: copy it)
    UKL_WORK            its work directory
    UKL_ROOT            an empty directory: what the script puts there goes
                        into the image at the same path below /, owned by
                        the recipe's [run] user
    UKL_CONFIGURE_ARGS  the recipe's configure_args, shell-quoted
    UKL_JOBS            how many parallel jobs to run
    CC, CXX             the host compilers (through ccache)

It runs again only when the script, the recipe or the source changes.
"""
from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from ukl.app.debian import recipe
from ukl.common import paths, stamp
from ukl.common.buildenv import build_env, cached, jobs
from ukl.common.proc import run_logged

PREPARED_STAMP = ".ukl-prepared"


def prepare(rec: recipe.Recipe, source: Path) -> Path | None:
    """Run `rec`'s prepare script if its output is not current; returns
    the directory to merge into the image's root (None: no script)."""
    if rec.prepare is None:
        return None
    work = paths.build_root() / "debian" / rec.package / "prepare"
    root = work / "root"
    done = work / PREPARED_STAMP
    # What the script gets: the recipe's configure arguments, its own text
    # and the source (its Debian version).
    state = stamp.digest(repr((rec.package, rec.configure_args, rec.prepare)),
                         rec.prepare.read_bytes(), (source / "debian" / "changelog").read_bytes())
    if stamp.current(done, state) and root.is_dir():
        return root
    done.unlink(missing_ok=True)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    env = build_env(CC=cached("gcc"), CXX=cached("g++"), UKL_SOURCE=str(source),
                    UKL_WORK=str(work), UKL_ROOT=str(root),
                    UKL_CONFIGURE_ARGS=shlex.join(rec.configure_args), UKL_JOBS=str(jobs()))
    run_logged(["sh", "-eu", str(rec.prepare)], label=f"prepare {rec.package} image files",
               cwd=work, env=env,
               log_path=paths.logs_dir() / f"debian-{rec.package}-prepare.log")
    stamp.record(done, state)
    return root
