"""The `ukl` command line: the front door for users.

    ukl setup                         install the Debian packages UKL needs
    ukl series prepare|status|export|reset COMPONENT
    ukl kernel build [FLAVOUR]        build vmlinux (incremental, ccache)
    ukl toolchain build               UKL glibc (+ support libraries) -> build/toolchain
    ukl build SOURCE... -o NAME       program + kernel -> build/images/NAME
    ukl build --debian PACKAGE        a Debian source package, built unchanged -> image
    ukl bench [GROUP...]              microbenchmarks, every config -> results/NAME
    ukl bench-apps [APP...]           Redis/memcached throughput, every config
    ukl matrix [--only A,B] [--resume] every UKL option combination: build + boot suite
    ukl image create NAME --program P  image from an existing static program
    ukl initramfs -o OUT [...]        just the initramfs
    ukl lint FILE...                  check objects for code unfit for CPL0/kernel link
    ukl run IMAGE [options] [-- ARGS] boot it; exit with the program's status
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, Sequence

from ukl.common.errors import UklError

if TYPE_CHECKING:
    from ukl.image.initramfs import InitramfsSpec

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one actionable line."""

    def error(self, message: str) -> NoReturn:
        raise UklError(f"{message} (see `{self.prog} --help`)")


def _add_image_contents(p: argparse.ArgumentParser) -> None:
    p.add_argument("--file", action="append", default=[], metavar="HOST[:GUEST]",
                   help="copy a host file into the image (default guest path /NAME)")
    p.add_argument("--helper", action="append", default=[], metavar="CMD",
                   help="shell command started in the background before the program")


def _add_kernel(p: argparse.ArgumentParser, default: str = "stock") -> None:
    p.add_argument("--kernel", default=default, metavar="FLAVOUR",
                   help=f"kernel flavour from kernel/flavours.ini (default: {default}); "
                   "a UKL flavour links the program into the kernel, any other runs "
                   "it as an ordinary process")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ukl", description="Unikernel Linux: build and run UKL images.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    sub.add_parser("setup", help="install the Debian packages (as root) and Python modules "
                   "UKL needs")

    p = sub.add_parser("series", help="patch series <-> git trees under build/src")
    p.add_argument("action", choices=["prepare", "status", "export", "reset"])
    p.add_argument("component", help="a section of sources.ini (linux, glibc) or 'all'")

    p = sub.add_parser("kernel", help="kernel builds")
    p.add_argument("action", choices=["build"])
    p.add_argument("flavour", nargs="?", default="stock")

    p = sub.add_parser("toolchain", help="the UKL toolchain (glibc sysroot, support libraries)")
    p.add_argument("action", choices=["build"])

    p = sub.add_parser("build", help="compile a program and make a bootable image")
    p.add_argument("sources", nargs="*", type=Path,
                   help="C or C++ source files, or one directory with a Makefile "
                   "(built unchanged with CC=ukl-cc CXX=ukl-c++)")
    p.add_argument("--debian", metavar="PACKAGE",
                   help="instead of sources: fetch Debian source package PACKAGE "
                   "(apt-get source) and build it with its own build system "
                   "(recipe: apps/debian/PACKAGE.ini)")
    p.add_argument("-o", "--output", metavar="NAME",
                   help="image name (default: the --debian package)")
    p.add_argument("--binary", metavar="PATH",
                   help="for a Makefile directory or --debian: the program it builds, "
                   "relative to the source tree (default: NAME, or the recipe's)")
    _add_kernel(p, default="ukl")
    _add_image_contents(p)

    p = sub.add_parser("bench-apps", help="application throughput (Redis, memcached), "
                       "every config, one run, under icount -> results/NAME/apps.*")
    p.add_argument("apps", nargs="*", metavar="APP", help="redis, memcached (default: all)")
    p.add_argument("--name", default="apps", help="results/NAME (default: apps)")
    p.add_argument("--configs", default="stock,ukl,ukl-byp", metavar="A,B",
                   help="kernel flavours, first is the baseline (default: stock,ukl,ukl-byp)")
    p.add_argument("--requests", type=int, default=20000,
                   help="requests per operation (default 20000)")

    p = sub.add_parser("matrix", help="every combination of the UKL options: build, boot "
                       "the base-model suite -> results/NAME/matrix.*")
    p.add_argument("--name", default="matrix", help="results/NAME (default: matrix)")
    p.add_argument("--only", default="", metavar="A,B",
                   help="just these combinations (e.g. ukl+byp,ukl+ret+rtc)")
    p.add_argument("--resume", action="store_true",
                   help="keep earlier results in results/NAME, skip combinations that passed")

    p = sub.add_parser("bench", help="LEBench-style microbenchmarks: every config, one run, "
                       "instruction counts under icount -> results/NAME/")
    p.add_argument("groups", nargs="*", metavar="GROUP",
                   help="benchmark groups (default all): floor file pipe udp unix tcp "
                   "page-fault stack-fault thread fork")
    p.add_argument("--name", default="latest", help="results/NAME (default: latest)")
    p.add_argument("--configs", default="stock,ukl", metavar="A,B",
                   help="kernel flavours, the first is the baseline (default: stock,ukl)")
    p.add_argument("--quick", action="store_true",
                   help="1,000 iterations instead of 10,000 (for tests)")
    p.add_argument("--replot", action="store_true",
                   help="only redraw the plots of results/NAME from its results.csv")

    p = sub.add_parser("image", help="images under build/images")
    p.add_argument("action", choices=["create"])
    p.add_argument("name")
    p.add_argument("--program", type=Path, help="static program the image runs "
                   "(omit for an interactive shell)")
    _add_kernel(p)
    _add_image_contents(p)

    p = sub.add_parser("initramfs", help="write an initramfs archive")
    p.add_argument("-o", "--output", required=True, type=Path)
    p.add_argument("--program", type=Path)
    _add_image_contents(p)

    p = sub.add_parser("lint", help="check objects/archives for code that cannot run in the "
                       "kernel (raw syscalls, red zone, 32-bit relocations, GOT/PLT/IFUNC)")
    p.add_argument("files", nargs="+", type=Path)

    p = sub.add_parser("run", help="boot an image under QEMU (args after -- go to the program)")
    p.add_argument("image", help="image name (build/images/NAME) or directory")
    p.add_argument("--smp", type=int, default=1, help="number of CPUs (default 1)")
    p.add_argument("--mem", default="512M", help="guest memory (default 512M)")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="stop the guest after this long (exit 124)")
    p.add_argument("--icount", action="store_true",
                   help="deterministic mode: -icount shift=0,sleep=off (rdtsc = instructions)")
    p.add_argument("--gdb", action="store_true",
                   help="start paused with a gdbstub; prints the gdb command to attach")
    p.add_argument("-p", "--port", action="append", default=[], metavar="HOST:GUEST",
                   help="forward TCP port HOST on 127.0.0.1 to GUEST in the guest "
                   "(adds a virtio-net NIC on QEMU user networking)")
    p.add_argument("--append", action="append", default=[], metavar="ARG",
                   help="extra kernel command-line argument (repeatable)")
    p.add_argument("--quiet-console", action="store_true",
                   help="do not echo the console (it is still logged)")
    return parser


def _spec(args: argparse.Namespace, program: Path | None) -> InitramfsSpec:
    from ukl.image.initramfs import InitramfsSpec, parse_file_arg
    return InitramfsSpec(program=program, files=[parse_file_arg(f) for f in args.file],
                         helpers=list(args.helper))


def _make_image(args: argparse.Namespace, name: str, program: Path | None) -> int:
    from ukl.image import image
    from ukl.kernel import build as kbuild
    spec = _spec(args, program)
    vmlinux = kbuild.build(args.kernel)
    img = image.create(name, vmlinux, args.kernel, spec)
    print(f"ukl: image {name} ready in {img.path}; boot it with `ukl run {name}`",
          file=sys.stderr)
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    """Sources or a Makefile directory -> image (see ukl.image.appbuild)."""
    from ukl.image import appbuild
    if args.debian and args.sources:
        raise UklError("give either source files or --debian PACKAGE, not both")
    if not args.debian and not args.sources:
        raise UklError("nothing to build: give source files, a Makefile directory "
                       "or --debian PACKAGE")
    args.output = args.output or args.debian
    if not args.output:
        raise UklError("name the image with -o NAME")
    if args.debian:
        img = appbuild.build_debian_image(args.output, args.kernel, args.debian,
                                          _spec(args, None), binary=args.binary)
    else:
        img = appbuild.build_image(args.output, args.kernel, list(args.sources),
                                   _spec(args, None), binary=args.binary)
    kind = "UKL image" if img.meta.mode == "ukl" else "image"
    print(f"ukl: {kind} {args.output} ready in {img.path}; boot it with "
          f"`ukl run {args.output}`", file=sys.stderr)
    return 0


def _cmd_series(args: argparse.Namespace) -> int:
    from ukl.sources import debian, series
    comps = list(debian.load().values()) if args.component == "all" else [
        debian.get(args.component)]
    for comp in comps:
        if args.action == "prepare":
            print(f"ukl: {comp.name} ready in {series.prepare(comp)}", file=sys.stderr)
        elif args.action == "reset":
            print(f"ukl: {comp.name} reset in {series.reset(comp)}", file=sys.stderr)
        elif args.action == "export":
            names = series.export(comp)
            print(f"ukl: exported {len(names)} patch(es) to {comp.series_dir}", file=sys.stderr)
        else:
            print(series.status(comp))
    return 0


def _cmd_run(args: argparse.Namespace, program_args: list[str]) -> int:
    from ukl.image import image
    from ukl.runner import qemu, run
    img = image.find(args.image)
    opts = qemu.RunOptions(kernel=img.kernel, initramfs=img.initramfs, smp=args.smp,
                           mem=args.mem, icount=args.icount, gdb=args.gdb,
                           append=list(args.append), program_args=program_args,
                           forwards=[qemu.parse_forward(p) for p in args.port])
    if args.timeout is not None and args.timeout <= 0:
        raise UklError("--timeout must be a positive number of seconds")
    timeout = None if args.gdb else args.timeout
    outcome = run.run(opts, log_name=img.meta.name, timeout=timeout,
                      echo=not args.quiet_console)
    if outcome.problem:
        run.report_problem(outcome)
    return outcome.exit_code


def _cmd_lint(files: list[Path]) -> int:
    from ukl.toolchain import lint
    failed = False
    for path in files:
        findings = lint.lint(path)
        if findings:
            failed = True
            print(lint.report(path, findings), file=sys.stderr)
        else:
            print(f"ukl lint: {path}: clean", file=sys.stderr)
    return 1 if failed else 0


def dispatch(args: argparse.Namespace, program_args: list[str]) -> int:
    if program_args and args.command != "run":
        raise UklError("arguments after '--' are only accepted by `ukl run`")
    if args.command == "setup":
        from ukl.host import packages, pymodules
        packages.ensure()
        source = {"debian": "from Debian packages", "pypi": "from PyPI",
                  "present": "already there"}[pymodules.ensure()]
        print("ukl: all required Debian packages are installed; Python modules for "
              f"{sys.executable}: {source}", file=sys.stderr)
        return 0
    if args.command == "series":
        return _cmd_series(args)
    if args.command == "kernel":
        from ukl.kernel import build as kbuild
        print(f"ukl: kernel {args.flavour}: {kbuild.build(args.flavour)}", file=sys.stderr)
        return 0
    if args.command == "toolchain":
        from ukl.toolchain import build as toolchain
        print(f"ukl: UKL toolchain ready in {toolchain.build()}", file=sys.stderr)
        return 0
    if args.command == "build":
        return _cmd_build(args)
    if args.command == "bench-apps":
        from ukl.bench import apps
        out = apps.bench_apps(args.name, list(args.apps),
                              [c for c in args.configs.split(",") if c], args.requests)
        print(f"ukl: results in {out} (apps.md, apps.csv, apps-meta.json)", file=sys.stderr)
        return 0
    if args.command == "matrix":
        from ukl.bench import matrix
        out = matrix.run_matrix(args.name, [c for c in args.only.split(",") if c], args.resume)
        print(f"ukl: results in {out} (matrix.md, matrix.csv)", file=sys.stderr)
        return 0
    if args.command == "bench":
        from ukl.bench import runner
        if args.replot:
            print(f"ukl: plots redrawn in {runner.replot(args.name)}", file=sys.stderr)
            return 0
        out = runner.bench(args.name, [c for c in args.configs.split(",") if c],
                           args.quick, list(args.groups))
        print(f"ukl: results in {out} (results.md, results.csv, meta.json)", file=sys.stderr)
        return 0
    if args.command == "image":
        return _make_image(args, args.name, args.program)
    if args.command == "lint":
        return _cmd_lint(args.files)
    if args.command == "initramfs":
        from ukl.image import initramfs
        initramfs.write(_spec(args, args.program), args.output)
        return 0
    return _cmd_run(args, program_args)


def split_program_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split at the first '--': ukl's own arguments, then the program's."""
    argv = list(argv)
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def main(argv: Sequence[str] | None = None) -> int:
    own, program_args = split_program_args(sys.argv[1:] if argv is None else argv)
    try:
        args, unknown = build_parser().parse_known_args(own)
        if unknown:
            raise UklError(f"unrecognized arguments: {' '.join(unknown)} "
                           f"(see `ukl {args.command} --help`)")
        return dispatch(args, program_args)
    except UklError as e:
        print(f"ukl: error: {e.message}", file=sys.stderr)
        if e.detail:
            print(e.detail.rstrip(), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("ukl: interrupted", file=sys.stderr)
        return 130
