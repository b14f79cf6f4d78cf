"""`ukl image create NAME [--program P]`: an image of an existing program;
`ukl image ls [--json]`, `ukl image rm NAME...`: the images under
build/images."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ukl import pipeline
from ukl.cli.args import Invocation, add_image_contents, add_kernel, image_spec
from ukl.cli.args import print_table
from ukl.common.errors import UsageError
from ukl.image import image
from ukl.kbuild import flavour
from ukl.qemu import instances

SUMMARY = ("make an image from an existing static program (no program: a shell); "
           "list or remove images")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["create", "ls", "rm"])
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="create: the new image's name; rm: the images to remove")
    p.add_argument("--program", type=Path, help="create: static program the image runs "
                   "(omit for an interactive shell)")
    p.add_argument("--json", action="store_true", help="ls: one JSON array")
    add_kernel(p, default="stock")
    add_image_contents(p)


def run(args: argparse.Namespace, inv: Invocation) -> int:
    if args.action == "ls":
        if args.names:
            raise UsageError("`ukl image ls` takes no names")
        return _list(args.json)
    if args.action == "rm":
        if not args.names:
            raise UsageError("`ukl image rm NAME...`: name the images (`ukl image ls`)")
        return _remove(args.names)
    if len(args.names) != 1:
        raise UsageError("`ukl image create NAME`: give one name")
    name = args.names[0]
    img = pipeline.image_from_program(name, flavour.get(args.kernel),
                                      image_spec(args, args.program))
    print(f"ukl: image {name} ready in {img.path}; boot it with `ukl run {name}`",
          file=sys.stderr)
    return 0


def _list(as_json: bool) -> int:
    rows = [{"name": img.meta.name if img.meta.name == img.path.name else img.path.name,
             "flavour": img.meta.kernel_flavour, "mode": img.meta.mode,
             "size_mib": round(image.size_bytes(img) / 2**20, 1),
             "modified": time.strftime("%Y-%m-%d %H:%M",
                                       time.gmtime(img.path.stat().st_mtime))}
            for img in image.all_images()]
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    print_table([("NAME", "FLAVOUR", "MODE", "MiB", "MODIFIED (UTC)")] +
                [(str(r["name"]), str(r["flavour"]), str(r["mode"]), str(r["size_mib"]),
                  str(r["modified"])) for r in rows])
    return 0


def _remove(names: list[str]) -> int:
    # All checked before any is removed: one bad name removes nothing.
    for name in names:
        users = [i.name for i in instances.all_instances()
                 if i.image == name and instances.is_running(i)]
        if users:
            raise UsageError(f"image {name} is in use by instance {users[0]}; "
                             f"`ukl stop {users[0]}` first")
        image.named_dir(name)
    for name in names:
        image.remove(name)
        print(f"ukl: removed image {name}", file=sys.stderr)
    return 0
