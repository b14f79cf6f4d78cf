"""`ukl pkg NAME --oci DIR | --oci-archive FILE | --iso FILE`: package an
image for running elsewhere.

--oci DIR          an OCI image layout (umoci) with urunc's annotations
                   (com.urunc.unikernel.*); the kernel, initramfs and
                   image.json are in /unikernel, so after `umoci unpack`
                   `ukl run BUNDLE/rootfs/unikernel` boots it
--oci-archive FILE the same layout as one tar file (skopeo)
--iso FILE         a bootable ISO for BIOS and EFI machines (GRUB); the
                   console is the first serial port; arguments after --
                   go on its kernel command line to the program

A target that exists is never overwritten.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ukl.cli.args import Invocation
from ukl.common.errors import UsageError
from ukl.image import image, iso, oci
from ukl.qemu import command as qemu

SUMMARY = "package an image: an OCI image for urunc (--oci), a bootable ISO (--iso)"
TAKES_PROGRAM_ARGS = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("image", help="image name (build/images/NAME) or directory")
    p.add_argument("--oci", type=Path, metavar="DIR",
                   help="write an OCI image layout into the new directory DIR")
    p.add_argument("--oci-archive", type=Path, metavar="FILE",
                   help="write an OCI archive (a tar of the layout) to the new file FILE")
    p.add_argument("--iso", type=Path, metavar="FILE",
                   help="write a bootable ISO (BIOS and EFI, GRUB) to the new file FILE")


def run(args: argparse.Namespace, inv: Invocation) -> int:
    given = (("--oci", args.oci), ("--oci-archive", args.oci_archive), ("--iso", args.iso))
    targets = [(opt, path) for opt, path in given if path is not None]
    if not targets:
        raise UsageError("say what to make: --oci DIR, --oci-archive FILE or --iso FILE")
    if inv.program_args and args.iso is None:
        raise UsageError("arguments after '--' go on an ISO's kernel command line: use them "
                         "with --iso (an OCI image's program gets them from its runtime)")
    # The command line `ukl run` gives the kernel (serial console, panic
    # handling), with the program's arguments after `--` as init takes them.
    cmdline = qemu.BASE_CMDLINE + (["--", *inv.program_args] if inv.program_args else [])
    # Every target is checked before anything is made, so that a bad one
    # does not leave the others half done.
    for opt, path in targets:
        oci.check_new_target(path, opt)
    img = image.find(args.image)
    if args.iso is not None:
        # The limits `ukl run` checks (length, init's argument count), and
        # grub.cfg's: all before anything is made.
        qemu.kernel_cmdline(qemu.RunOptions(kernel=img.kernel, initramfs=img.initramfs,
                                            program_args=list(inv.program_args)))
        iso.grub_cfg(img.meta.name, cmdline)
    for opt, path in targets:
        if opt == "--oci":
            oci.write_layout(img, path)
            print(f"ukl: OCI image layout in {path} (oci:{path}:{oci.TAG}); unpack it with "
                  f"`umoci unpack --rootless --image {path}:{oci.TAG} BUNDLE`", file=sys.stderr)
        elif opt == "--oci-archive":
            oci.write_archive(img, path)
            print(f"ukl: OCI archive {path} (oci-archive:{path}:{oci.TAG})", file=sys.stderr)
        else:
            iso.write(img, path, cmdline)
            print(f"ukl: bootable ISO {path}; its console is the first serial port",
                  file=sys.stderr)
    return 0
