"""The `ukl` command line: the front door for users.

One module per command (ukl/cli/VERB.py: SUMMARY, add_arguments(), run());
COMMANDS below says which, grouped by what users do, and `ukl --help`
shows them in those groups. A command's module is imported when it is
needed: `ukl setup` imports only its own, so that it runs on a new
machine before the Python modules it installs (python3-debian, ...) exist.
Exit status: what the command returns (`ukl run`: the guest program's), 2
for a usage error, 1 for a failure.
"""
from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys
from types import ModuleType
from typing import NoReturn, Sequence

from ukl.cli.args import Invocation
from ukl.common.errors import UklError, UsageError
from ukl.host import pymodules

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

# (group, [(command, module under ukl.cli)]), in the order `ukl --help`
# lists them.
COMMANDS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Get started", (("setup", "setup"),)),
    ("Build", (("build", "build"), ("image", "image"), ("initramfs", "initramfs"),
               ("lint", "lint"))),
    ("Run (in the foreground, or in the background with run -d)", (
        ("run", "run"), ("ps", "ps"), ("logs", "logs"), ("stop", "stop"), ("rm", "rm"))),
    ("Inspect and measure", (
        ("profile", "profile"), ("bench", "bench"), ("bench-apps", "bench_apps"),
        ("bench-net", "bench_net"), ("catalog", "catalog"))),
    ("Package", (("pkg", "pkg"),)),
    ("Develop UKL itself", (
        ("kernel", "kernel"), ("toolchain", "toolchain"), ("series", "series"),
        ("matrix", "matrix"), ("fuzz", "fuzz"), ("soak", "soak"))),
)
COMMAND_MODULES = {name: module for _, group in COMMANDS for name, module in group}


def load(command: str) -> ModuleType:
    """The module of COMMAND; a Python module that `ukl setup` installs and
    that is missing is one actionable line, not a traceback."""
    try:
        return importlib.import_module(f"ukl.cli.{COMMAND_MODULES[command]}")
    except ModuleNotFoundError as e:
        if e.name is None or e.name.split(".")[0] not in {m.name for m in pymodules.MODULES}:
            raise
        raise UklError(f"Python module '{e.name.split('.')[0]}' is missing for {sys.executable}: "
                       "run `bin/ukl setup` (as root) first") from e


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one actionable line."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def _summary(command: str) -> str:
    """A command's one-line summary; on a machine `ukl setup` has not
    prepared yet, what to do first."""
    try:
        summary: str = load(command).SUMMARY
        return summary
    except UklError:
        return "(run `bin/ukl setup` first: a Python module it installs is missing)"


def _grouped_help() -> str:
    lines = []
    for title, group in COMMANDS:
        lines.append(f"{title}:")
        lines += [f"  {name:12} {_summary(name)}" for name, _ in group]
        lines.append("")
    lines.append("`ukl COMMAND --help` for a command's options. Exit status: the "
                 "command's (`ukl run`: the program's), 2 for a usage error, 1 for a failure.")
    return "\n".join(lines)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or (ONLY) just one command's, which imports
    no other command's module."""
    epilog = None if only else _grouped_help()
    parser = _Parser(prog="ukl", description="Unikernel Linux: build and run UKL images.",
                     epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_Parser)
    for name in [only] if only else COMMAND_MODULES:
        try:
            module = load(name)
        except UklError:
            if only:
                raise
            # Listed still (`ukl --help` works before `ukl setup`); running
            # it says what is missing (main() loads it).
            sub.add_parser(name, description=_summary(name))
            continue
        # No help= here: `ukl --help` lists the commands in groups (the
        # epilog) instead of argparse's flat list.
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
        # The first word names the command when it is one; options before
        # it (none today) or none at all get the whole parser.
        only = own[0] if own and own[0] in COMMAND_MODULES else None
        args, unknown = build_parser(only).parse_known_args(own)
        if unknown:
            raise UsageError(f"unrecognized arguments: {' '.join(unknown)} "
                             f"(see `ukl {args.command} --help`)")
        module = load(args.command)
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
