"""Who may start the UKL application and reach it (Documentation/x86/ukl.rst,
"Who may start the application"): an ordinary process beside it attacks
it as root, as root without CAP_SYS_RAWIO and as uid 1000, from outside."""
from __future__ import annotations

import re
import subprocess

import pytest

from tests.conftest import PROGRAMS, fixture_name, ukl, unspliced

BOOT_TIMEOUT = "300"
# Every probe the attacker makes (tests/programs/attacker.c), per identity.
PROBES = ["ptrace-attach", "ptrace-seize", "proc-mem-read", "proc-mem-write", "vm-readv",
          "vm-writev", "load-static", "syscall-static", "start", "start-traced"]
# child-*: the same probes on a forked child of the application, which has
# its own copy of the application's static data.
IDENTITIES = ["root", "root-without-rawio", "uid1000", "child-root", "child-uid1000"]
# What the kernel must answer, where the answer tells its check from
# another refusal (the trigger file's mode, the instance already running).
EXPECTED = {
    ("root", "start"): "Device or resource busy",
    ("root", "start-traced"): "Operation not permitted",
    ("root-without-rawio", "start"): "Operation not permitted",
    ("root", "ptrace-attach"): "Operation not permitted",
    ("root", "proc-mem-write"): "Permission denied",
    ("child-root", "start"): "Device or resource busy",
    ("child-root", "ptrace-attach"): "Operation not permitted",
    ("child-root", "proc-mem-write"): "Permission denied",
}


@pytest.fixture(scope="module")
def attacker(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("attacker") / "attacker"
    subprocess.run(["gcc", "-static", "-O2", "-o", str(out), str(PROGRAMS / "attacker.c")],
                   check=True)
    return f"{out}:/attacker"


# A busybox shell beside the application starts the attacker at once; it
# waits for the application's /tmp/guarded.info itself.
HELPER = "/attacker"


@pytest.mark.parametrize("kernel,smp", [("ukl", 1), ("ukl", 2), ("ukl-ret-byp", 2)])
def test_nobody_else_starts_or_reaches_the_application(request: pytest.FixtureRequest,
                                                       attacker: str, kernel: str,
                                                       smp: int) -> None:
    request.getfixturevalue(fixture_name(kernel))
    image = f"t-guard-{kernel}"
    res = ukl("build", str(PROGRAMS / "guarded_app.c"), "--kernel", kernel,
              "--file", attacker, "--helper", HELPER, "-o", image)
    assert res.returncode == 0, res.stdout + res.stderr
    res = ukl("run", image, "--smp", str(smp), "--timeout", BOOT_TIMEOUT)
    # Two CPUs: the kernel's refusals may land inside the attacker's lines.
    out = unspliced(res.stdout + res.stderr)
    assert "guarded_app: cpl=0" in out and "attacker: cpl=3" in out, out
    for who in IDENTITIES:
        for probe in PROBES:
            line = re.search(rf"^attacker: {who} {probe}: (.*)$", out, re.M)
            assert line, f"no result for {who} {probe}:\n{out}"
            # The process_vm_*v calls exist only with CROSS_MEMORY_ATTACH.
            unavailable = probe.startswith("vm-") and line.group(1).startswith("unavailable")
            assert line.group(1).startswith("refused") or unavailable, line.group(0)
            want = EXPECTED.get((who, probe))
            assert want is None or want in line.group(1), (line.group(0), want)
    assert "attacker: done, 0 allowed" in out, out
    assert "STARTED by" not in out, out
    for check in ("a second start is refused with EBUSY", "PTRACE_TRACEME is refused", "fork",
                  "the attacker finished", "the static secret is intact",
                  "the heap secret is intact", "the forked child's static secret is intact",
                  "vmsplice of a static buffer",
                  "a restart while a pipe holds its static data is refused with EBUSY",
                  "the pipe gives back the spliced bytes"):
        assert f"guarded_app: ok {check}" in out, out
    # The instance restarted itself by exec of the trigger, still at CPL0.
    assert "guarded_app: restarted cpl=0" in out, out
    assert res.returncode == 0, out
