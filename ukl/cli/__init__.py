"""The `ukl` command line: the front door for users.

One module per command (ukl/cli/VERB.py: SUMMARY, add_arguments(), run());
COMMANDS below says which, grouped by what users do, and `ukl --help`
shows them in those groups. Exit status: what the command returns (`ukl
run`: the guest program's), 2 for a usage error, 1 for a failure.
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
from types import ModuleType
from typing import NoReturn, Sequence

from ukl.cli import bench, bench_apps, bench_net, build, catalog, fuzz, image, initramfs, kernel
from ukl.cli import lint
from ukl.cli import logs, matrix, pkg, profile, ps, rm, run, series, setup, soak, stop
from ukl.cli import toolchain
from ukl.cli.args import Invocation
from ukl.common.errors import UklError, UsageError

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

# (group, [(command, module)]), in the order `ukl --help` lists them.
COMMANDS: tuple[tuple[str, tuple[tuple[str, ModuleType], ...]], ...] = (
    ("Get started", (("setup", setup),)),
    ("Build", (("build", build), ("image", image), ("initramfs", initramfs), ("lint", lint))),
    ("Run (in the foreground, or in the background with run -d)", (
        ("run", run), ("ps", ps), ("logs", logs), ("stop", stop), ("rm", rm))),
    ("Inspect and measure", (
        ("profile", profile), ("bench", bench), ("bench-apps", bench_apps),
        ("bench-net", bench_net), ("catalog", catalog))),
    ("Package", (("pkg", pkg),)),
    ("Develop UKL itself", (
        ("kernel", kernel), ("toolchain", toolchain), ("series", series), ("matrix", matrix),
        ("fuzz", fuzz), ("soak", soak))),
)
MODULES = {name: module for _, group in COMMANDS for name, module in group}


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one actionable line."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def _grouped_help() -> str:
    lines = []
    for title, group in COMMANDS:
        lines.append(f"{title}:")
        lines += [f"  {name:12} {module.SUMMARY}" for name, module in group]
        lines.append("")
    lines.append("`ukl COMMAND --help` for a command's options. Exit status: the "
                 "command's (`ukl run`: the program's), 2 for a usage error, 1 for a failure.")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ukl", description="Unikernel Linux: build and run UKL images.",
                     epilog=_grouped_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_Parser)
    for _, group in COMMANDS:
        for name, module in group:
            # No help= here: `ukl --help` lists the commands in groups
            # (the epilog) instead of argparse's flat list.
            p = sub.add_parser(name, description=module.__doc__,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
            module.add_arguments(p)
    return parser


def split_program_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split at the first '--': ukl's own arguments, then the program's."""
    argv = list(argv)
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own, program_args = split_program_args(argv)
    try:
        args, unknown = build_parser().parse_known_args(own)
        if unknown:
            raise UsageError(f"unrecognized arguments: {' '.join(unknown)} "
                             f"(see `ukl {args.command} --help`)")
        module = MODULES[args.command]
        if program_args and not getattr(module, "TAKES_PROGRAM_ARGS", False):
            raise UsageError("arguments after '--' are only accepted by `ukl run`, "
                             "`ukl profile` and `ukl pkg --iso`")
        inv = Invocation(command_line=shlex.join(["ukl", *argv]), program_args=program_args)
        status: int = module.run(args, inv)
        return status
    except UklError as e:
        print(f"ukl: error: {e.message}", file=sys.stderr)
        if e.detail:
            print(e.detail.rstrip(), file=sys.stderr)
        return EXIT_USAGE if isinstance(e, UsageError) else EXIT_FAILURE
    except KeyboardInterrupt:
        print("ukl: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of stdout went away (`ukl image ls | head`): not an
        # error. Point stdout at /dev/null so that the interpreter's own
        # flush at exit does not complain about the pipe again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
