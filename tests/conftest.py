"""Shared test helpers: run the ukl CLI as a user would."""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

REPO = Path(__file__).resolve().parents[1]
PROGRAMS = REPO / "tests" / "programs"
# Programs the tool itself boots (lebench, memclient, the base-model suite).
GUEST = REPO / "guest"
sys.path.insert(0, str(REPO))
# Every boot of the suite runs under TCG, as the measurements and the
# checks assume, and none pays for `ukl run --accel auto`'s KVM probe: the
# tests of the probe ask for it with --accel auto.
os.environ["UKL_ACCEL"] = "tcg"
# `make test` runs the suite in two pytest-xdist workers (SHARING below).
# Each keeps its images in a directory of its own: a module's images are
# removed when it ends (images_removed_after_module), which must not
# take the other worker's.
WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if WORKER:
    os.environ["UKL_IMAGES_DIR"] = str(REPO / "build" / f"images-{WORKER}")

from ukl.kbuild.flavour import named as _named_flavours  # noqa: E402


def flavour_names() -> list[str]:
    return list(_named_flavours())


def ukl(*args: str, timeout: float = 900,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run bin/ukl with stdin closed; capture output. `env` adds variables."""
    return subprocess.run([sys.executable, str(REPO / "bin" / "ukl"), *args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout, cwd=REPO,
                          env={**os.environ, **env} if env else None)


def image_dir(name: str) -> Path:
    """Image NAME's directory (build/images/NAME, or the test worker's
    own images directory: see UKL_IMAGES_DIR above)."""
    from ukl.common import paths
    return paths.images_dir() / name


# Images built by session fixtures: several modules boot them, so they stay
# until the session ends.
_SESSION_IMAGES: set[str] = set()


def build_image(name: str, *args: str, session: bool = False) -> str:
    """`ukl build ARGS -o NAME`, which must succeed; returns NAME. A
    session fixture's image says `session=True` so that the end of the
    module that first asked for it does not remove it."""
    if session:
        _SESSION_IMAGES.add(name)
    res = ukl("build", *args, "-o", name)
    assert res.returncode == 0, res.stdout + res.stderr
    return name


@pytest.fixture(scope="module", autouse=True)
def images_removed_after_module() -> Iterator[None]:
    """Remove the images (build/images/NAME) a test module created, when
    the module ends. Every image carries its own vmlinux with debug info
    (100-135 MB), and the whole suite's (about 7 GB) beside the kernel
    flavours' build trees (13 GB) fills a small disk. Images that existed
    before the module began (a user's, or a session fixture's) stay."""
    from ukl.common import paths
    root = paths.images_dir()
    before = set(os.listdir(root)) if root.is_dir() else set()
    yield
    if not root.is_dir():
        return
    for name in set(os.listdir(root)) - before - _SESSION_IMAGES:
        shutil.rmtree(root / name, ignore_errors=True)


# A kernel message printed while the application writes a line can land
# in the middle of it on the shared console ("ukl_suite: okUKL: ...\n
# nss-ps-stack"): the kernel's own UKL messages are taken out of lines
# they split before the application's lines are matched.
_SPLICED_KERNEL_LINE = re.compile(r"(?<=[^\n])UKL: [^\n]*\n")


def unspliced(out: str) -> str:
    """A console with the kernel's UKL messages taken out of the lines
    they split."""
    return _SPLICED_KERNEL_LINE.sub("", out)


def assert_suite_passed(out: str, checks: list[str], program: str = "ukl_suite") -> None:
    """Each named check of a check-running program (guest/ukl_suite.c, or
    one of tests/programs/ printing "PROGRAM: ok CHECK" and "PROGRAM: N
    failure(s)") passed, and nothing failed."""
    out = unspliced(out)
    for name in checks:
        assert f"{program}: ok {name}\n" in out, f"check {name} did not pass:\n{out}"
    assert f"{program}: 0 failure(s)" in out, out


def fixture_name(flavour: str) -> str:
    """The session fixture that builds a named flavour: ukl-nss-ps ->
    ukl_nss_ps_kernel."""
    return flavour.replace("-", "_") + "_kernel"


def _kernel_fixture(name: str) -> Callable[[], Path]:
    def build_kernel() -> Path:
        from ukl.kbuild import build, flavour
        return build.build(flavour.get(name))
    build_kernel.__doc__ = f"The {name} vmlinux, built (incrementally) if needed."
    return pytest.fixture(scope="session", name=fixture_name(name))(build_kernel)


def register_kernel_fixtures(namespace: dict[str, object], names: list[str]) -> None:
    """One session fixture per named flavour (kernel/flavours.ini,
    kernel/options.ini), so a new option's flavour gets its fixture
    without a line here."""
    for name in names:
        namespace[fixture_name(name)] = _kernel_fixture(name)


register_kernel_fixtures(globals(), flavour_names())


# `make test` runs two pytest-xdist workers: a group of tests runs wholly
# in one worker, and the two workers run two groups at a time. Each module
# is a group, but modules that share what two cannot use at once (an image
# name, a host port, gdb's port 1234) are one group together, which runs
# them one after the other.
SHARING = {
    # Both build Redis with its recipe and forward host port 16379.
    "redis": ("tests/apps/test_redis.py", "tests/bench/test_bench_apps.py"),
    # The base-model suite images (t-ukl-suite, t-stock-suite) and gdb's port.
    "suite": ("tests/boot/test_ukl_boot.py", "tests/boot/test_ukl_stacks.py",
              "tests/boot/test_ukl_fork.py", "tests/boot/test_stock_boot.py"),
    # `ukl bench`'s images (bench-ukl, bench-ukl-byp) and its logs.
    "bench": ("tests/bench/test_bench.py", "tests/boot/test_ukl_ret.py",
              "tests/boot/test_ukl_byp.py", "tests/boot/test_ukl_shortcuts.py"),
}


def group(nodeid: str) -> str:
    """The group of a test: its sharing group's name, or its module."""
    module = nodeid.split("::", 1)[0]
    for name, modules in SHARING.items():
        if module.startswith(modules):
            return name
    return module


if importlib.util.find_spec("xdist") is not None:
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        """pytest-xdist's scheduling by scope, with group() as the scope.
        (Its own xdist_group markers rename the tests, which pytest 9's
        test ids no longer allow.)"""

        def _split_scope(self, nodeid: str) -> str:
            return group(nodeid)

    def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> GroupScheduling:
        return GroupScheduling(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `distro` every test that boots a distribution-like flavour
    (`*-distro`, `ukl-distro+...`): one in a module named for them, one
    whose fixtures build one, or one parametrised with one (by kernel or
    image name). `make test` leaves them out: a first build of those
    configurations is most of what they cost; `make test-full` runs them."""
    for item in items:
        fixtures = getattr(item, "fixturenames", [])
        if "distro" in item.nodeid or any("distro" in name for name in fixtures):
            item.add_marker(pytest.mark.distro)


@pytest.fixture(scope="session")
def suite_ukl(ukl_kernel: Path) -> str:
    """guest/ukl_suite.c linked into the UKL base-model kernel."""
    return build_image("t-ukl-suite", str(GUEST / "ukl_suite.c"), session=True)


@pytest.fixture(scope="session")
def suite_stock(stock_kernel: Path) -> str:
    """guest/ukl_suite.c as an ordinary process on the stock kernel."""
    return build_image("t-stock-suite", str(GUEST / "ukl_suite.c"), "--kernel", "stock",
                       session=True)


@pytest.fixture(autouse=True)
def kernel_log_is_clean(request: pytest.FixtureRequest) -> object:
    """Fail any test during which a boot's console (build/logs/run-*.log, or
    a background instance's) logged a kernel complaint: an oops, a BUG or
    WARNING splat, an RCU stall, a lockup, a hung task or an unexpected
    panic. A test that provokes one on purpose says so with
    @pytest.mark.kernel_complaints."""
    from ukl.common import paths
    from ukl.qemu import complaints, instances
    start = time.time()
    yield
    if request.node.get_closest_marker("kernel_complaints"):
        return
    logs = paths.logs_dir()
    consoles = sorted(logs.glob("run-*.log")) if logs.is_dir() else []
    # A background instance (`ukl run -d`) logs its console in its own state.
    consoles += sorted(instances.root().glob(f"*/{instances.CONSOLE}"))
    found = []
    for log in consoles:
        try:
            if log.stat().st_mtime >= start:
                found += [f"{log}: {line}"
                          for line in complaints.find(log.read_text(errors="replace"))]
        except FileNotFoundError:
            # Removed since the listing: a bench run rewrites its log,
            # `ukl rm` takes an instance's.
            continue
    if found:
        pytest.fail("the kernel complained during this test:\n" + "\n".join(found[:20]),
                    pytrace=False)


def stop_run(runner: subprocess.Popen[str]) -> None:
    """Kill a `ukl run` started with start_new_session=True, QEMU included:
    killing `ukl run` alone would leave QEMU running (and its ports held)."""
    if runner.poll() is None:
        os.killpg(runner.pid, signal.SIGKILL)
        runner.communicate()


def gdb_break_session(image: str, breakpoint: str, *program_args: str
                      ) -> tuple[subprocess.CompletedProcess[str], int, str]:
    """Boot `image` with --gdb, attach gdb with the image's vmlinux, stop at
    `breakpoint`, print its source line, then let it run to the end.
    Returns gdb's result and the run's exit status and output."""
    runner = subprocess.Popen(
        [sys.executable, str(REPO / "bin" / "ukl"), "run", image, "--gdb", "--",
         *program_args],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        # The hint line printed by ukl is the command to use.
        hint = runner.stderr.readline() + runner.stderr.readline()
        assert "target remote localhost:1234" in hint, hint
        vmlinux = hint.split()[-1]
        for _ in range(40):  # QEMU opens the gdbstub port shortly after starting
            gdb = subprocess.run(
                ["gdb", "-batch", "-nx", "-ex", "target remote localhost:1234",
                 "-ex", f"break {breakpoint}", "-ex", "continue", "-ex", "info line *$pc",
                 "-ex", "delete", "-ex", "continue", vmlinux],
                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
            if "Connection refused" not in gdb.stderr:
                break
            time.sleep(0.5)
        out, _ = runner.communicate(timeout=120)
        return gdb, runner.returncode, out
    finally:
        stop_run(runner)
