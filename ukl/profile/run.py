"""Boot an image under the ukl_profile plugin and write its profile:

    DIR/profile.txt     the flat profile's top functions (also printed)
    DIR/flat.csv        every function that ran: self, inclusive, shares, events
    DIR/calltree.txt    the calling contexts above a small share, indented
    DIR/stacks.folded   folded stacks ("a;b;c COUNT"), for any flame-graph tool
    DIR/flame.svg       the flame graph
    DIR/series.csv, series.png   with --every and --track: the tracked
                        functions' calls and self instructions per interval
    DIR/symbols.txt     the function table the plugin used
    DIR/raw.tsv         the plugin's own output

Always under -icount (shift=0, sleep=off) and on one CPU: the counts are
exact and repeat from run to run.
"""
from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ukl.bench import counts
from ukl.common import paths
from ukl.common.errors import UklError, UsageError
from ukl.image import cpio, image
from ukl.profile import analysis, data, flame, series, symbols
from ukl.qemu import command as qemu
from ukl.qemu import run as boot

SOURCE = paths.REPO_ROOT / "qemu" / "plugins" / "ukl_profile.c"
ET_EXEC = 2


@dataclass
class Request:
    """What to profile and how."""

    image: str
    out: Path
    # None: the whole run; "markers": every UKL_COUNT window; "N": window N.
    window: str | None = None
    # Count from each entry of the first function to the next of the second.
    between: tuple[str, str] | None = None
    program: Path | None = None     # an ordinary process's ELF (default: from the image)
    cpu: str = "max"
    mem: str = "512M"
    append: list[str] = field(default_factory=list)
    program_args: list[str] = field(default_factory=list)
    timeout: float | None = None
    top: int = 30
    echo: bool = True
    # The series: every `every` instructions of the run (0: none), the
    # calls and self instructions of the functions named in `track`.
    every: int = 0
    track: list[str] = field(default_factory=list)
    forwards: list[tuple[int, int]] = field(default_factory=list)
    # A host shell command run while the guest runs (a load generator
    # through the forwards); it waits for the guest's server itself.
    load: str | None = None


@dataclass(frozen=True)
class Result:
    exit_code: int
    profile: analysis.Profile
    out: Path


def default_dir(name: str) -> Path:
    return paths.build_root() / "profiles" / name


def program_elf(img: image.Image, out: Path) -> Path:
    """An ordinary process's program, taken from the image's initramfs (the
    image holds the exact file that ran)."""
    wanted = str(PurePosixPath(img.meta.program)).lstrip("/")
    for name, _mode, _owner, body in cpio.read_entries(img.initramfs.read_bytes()):
        if name == wanted:
            path = out / PurePosixPath(wanted).name
            path.write_bytes(body)
            return path
    raise UklError(f"{img.meta.program} is not in {img.initramfs}; give the program "
                   "with --program")


def _check_fixed_addresses(elf: Path) -> None:
    head = elf.read_bytes()[:18]
    if head[:4] != b"\x7fELF" or int.from_bytes(head[16:18], "little") != ET_EXEC:
        raise UklError(f"{elf} is not a static, position-dependent executable: its "
                       "functions' run-time addresses are not known (build it with "
                       "-static -no-pie, as `ukl build` does)")


def function_table(img: image.Image, req: Request) -> list[symbols.Function]:
    """The kernel's functions (and in a UKL image the application's, which
    are in vmlinux); for an ordinary process, its program's too."""
    kernel = symbols.from_elf(img.kernel, symbols.KERNEL)
    if img.meta.mode == "ukl" and req.program is None:
        return kernel
    if not img.meta.program and req.program is None:
        return kernel
    elf = req.program or program_elf(img, req.out)
    if not elf.is_file():
        raise UsageError(f"--program {elf}: no such file")
    _check_fixed_addresses(elf)
    return symbols.merge(kernel, symbols.from_elf(elf, symbols.APP))


def plugin_argument(plugin: Path, raw: Path, syms: Path, req: Request,
                    funcs: list[symbols.Function]) -> str:
    for p in (plugin, raw, syms):
        if "," in str(p):
            raise UklError(f"the plugin and its files need paths without commas: {p}")
    arg = f"{plugin},out={raw},syms={syms}"
    if req.window is not None:
        arg += f",window={req.window}"
    if req.between is not None:
        start, end = (symbols.address(funcs, name) for name in req.between)
        arg += f",from={start:x},to={end:x}"
    if req.every:
        tracked = series.indices(funcs, req.track)
        arg += f",every={req.every},track={':'.join(str(i) for i in tracked)}"
    return arg


def _boot(opts: qemu.RunOptions, req: Request, log_name: str) -> boot.Outcome:
    """Boot; with a load command, run it on the host meanwhile and wait for
    both (the command's failure is an error once the guest has stopped)."""
    if req.load is None:
        return boot.run(opts, log_name=log_name, timeout=req.timeout, echo=req.echo)
    guest = boot.Background(opts, log_name=log_name, timeout=req.timeout, echo=req.echo)
    try:
        load = subprocess.run(req.load, shell=True, stdin=subprocess.DEVNULL, check=False)
    finally:
        ended = guest.join()
    if ended is None:
        raise UklError("the guest did not run (see the messages above)")
    if load.returncode != 0:
        raise UklError(f"--load exited with status {load.returncode}: {req.load}")
    return ended


def profile(req: Request) -> Result:
    img = image.find(req.image)
    req.out.mkdir(parents=True, exist_ok=True)
    funcs = function_table(img, req)
    syms = req.out / "symbols.txt"
    symbols.write(funcs, syms)
    raw_path = req.out / "raw.tsv"
    raw_path.unlink(missing_ok=True)
    for stale in ("series.csv", "series.png"):
        (req.out / stale).unlink(missing_ok=True)
    if req.every:
        # Before the plugin's build and the boot: a wrong name or a missing
        # matplotlib is found in a second, not after the run.
        series.indices(funcs, req.track)
        series.require()
    plugin = counts.build_plugin(SOURCE)
    # norandmaps, as `ukl bench`: the same layout, the same counts, every boot.
    opts = qemu.RunOptions(kernel=img.kernel, initramfs=img.initramfs, smp=1, mem=req.mem,
                           cpu=req.cpu, icount=True, append=["norandmaps", *req.append],
                           program_args=req.program_args, forwards=list(req.forwards),
                           plugin=plugin_argument(plugin, raw_path, syms, req, funcs))
    outcome = _boot(opts, req, f"profile-{img.meta.name}")
    if outcome.problem:
        boot.report_problem(outcome)
    boot.report_complaints(outcome)
    raw = data.read(raw_path)
    names, kinds = symbols.names(funcs), symbols.kinds(funcs)
    prof = analysis.analyse(raw, names, kinds)
    write(prof, req, dict(zip(names, kinds)), img.meta.name, stacks_note(raw, funcs))
    if req.every:
        write_series(raw, names, req, img.meta.name)
    return Result(outcome.exit_code, prof, req.out)


def stacks_note(raw: data.Raw, funcs: list[symbols.Function]) -> str | None:
    """One line when the stacks do not follow context switches (the
    plugin found no stack switch to follow), else None."""
    if raw.switches != 0:
        return None
    why = ("its stack-pointer save and load were not found"
           if any(f.name == symbols.SWITCH for f in funcs)
           else "the kernel has no such function")
    return (f"the call stacks do not follow context switches ({symbols.SWITCH}: {why}): "
            "a task that resumes shows its frames under the previous task's")


def write(prof: analysis.Profile, req: Request, kinds: dict[str, str], name: str,
          note: str | None = None) -> None:
    """The profile's files; `note`, a line on what the stacks miss, is
    printed and heads profile.txt."""
    what = ("the whole run" if req.window is None and req.between is None
            else f"window {req.window}" if req.between is None
            else f"from {req.between[0]} to {req.between[1]}")
    head = f"{name}: {what}\n" + (f"note: {note}\n" if note else "")
    (req.out / "profile.txt").write_text(head + analysis.table(prof, req.top))
    if note:
        print(f"ukl: note: {note}", file=sys.stderr)
    (req.out / "flat.csv").write_text(analysis.flat_csv(prof))
    (req.out / "calltree.txt").write_text(prof.tree)
    (req.out / "stacks.folded").write_text(analysis.folded_text(prof))
    (req.out / "flame.svg").write_text(
        flame.render(prof.folded, kinds, f"{name}: {what}, {prof.total} instructions"))
    for problem in analysis.problems(prof):
        print(f"ukl: warning: {problem}", file=sys.stderr)


def write_series(raw: data.Raw, names: list[str], req: Request, name: str) -> None:
    """series.csv and series.png; a warning if the intervals do not add up
    to the profile (they do when the plugin is exact)."""
    (req.out / "series.csv").write_text(series.to_csv(raw, names))
    what = "" if req.window is None and req.between is None else ", in the window"
    series.plot(raw, names, f"{name}: calls per {raw.every / series.MILLION:g} million "
                f"instructions{what}", req.out / "series.png")
    ends = [row.end for row in raw.series]
    if ends[:-1] != [raw.every * (k + 1) for k in range(len(ends) - 1)]:
        print("ukl: warning: the series' intervals do not end at multiples of "
              f"{raw.every} instructions", file=sys.stderr)
    for slot, index in enumerate(raw.tracked):
        summed = sum(row.self_insns[slot] for row in raw.series)
        if summed != raw.funcs.get(index, (0, []))[0]:
            print(f"ukl: warning: {names[index]}'s intervals sum to {summed} instructions, "
                  f"its profile says {raw.funcs.get(index, (0, []))[0]}", file=sys.stderr)
