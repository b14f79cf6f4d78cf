"""`ukl pkg NAME --oci DIR`: an image as an OCI image layout for urunc.

The layout is made by Debian's umoci (and, for an archive, skopeo), not by
hand-written manifests, so that digests, media types and the index are
what the OCI tools themselves produce and read. Its one layer holds the
image directory under /unikernel (vmlinux, initramfs.cpio, image.json:
`ukl run` boots that directory as it is) and urunc.json at the root.

urunc (github.com/urunc-dev/urunc, formerly nubificus/urunc) runs such an
image's kernel under a hypervisor; it learns what to boot from annotations
whose names are the constants in its pkg/unikontainers/config.go
(annotType, annotBinary, annotHypervisor, annotInitrd, ...), documented in
its docs/package/index.md. Because some container engines do not pass an
image's annotations on, urunc also reads them from /urunc.json in the
root file system, each value base64-encoded (the same document); bima and
bunny, urunc's own packers, write both, and so does this module.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
from pathlib import Path

from ukl.common.errors import UklError, UsageError
from ukl.common.proc import run_quiet
from ukl.image import image

# The tag the layout's one image carries: `oci:DIR:latest`.
TAG = "latest"
# Where the image directory goes in the container's root file system.
GUEST_DIR = "/unikernel"
URUNC_JSON = "urunc.json"
# urunc's annotation names (pkg/unikontainers/config.go, see above).
ANNOT_TYPE = "com.urunc.unikernel.unikernelType"
ANNOT_HYPERVISOR = "com.urunc.unikernel.hypervisor"
ANNOT_BINARY = "com.urunc.unikernel.binary"
ANNOT_CMDLINE = "com.urunc.unikernel.cmdline"
ANNOT_INITRD = "com.urunc.unikernel.initrd"
# urunc's unikernel type for a Linux kernel with an initrd, and the
# monitor that boots an ELF vmlinux (QEMU's PVH entry, as `ukl run` does).
UNIKERNEL_TYPE = "linux"
HYPERVISOR = "qemu"
# What the kernel starts from the initramfs: the image's init, which runs
# the program with its default arguments (ukl/image/init.sh).
INIT_COMMAND = "/init"


def urunc_annotations(img: image.Image) -> dict[str, str]:
    """urunc's annotations for `img`, with paths inside the container."""
    return {
        ANNOT_TYPE: UNIKERNEL_TYPE,
        ANNOT_HYPERVISOR: HYPERVISOR,
        ANNOT_BINARY: f"{GUEST_DIR}/{image.KERNEL_FILE}",
        ANNOT_INITRD: f"{GUEST_DIR}/{image.INITRAMFS_FILE}",
        ANNOT_CMDLINE: INIT_COMMAND,
        # Not urunc's: which ukl image this is, for people and scripts.
        "org.opencontainers.image.title": img.meta.name,
        "dev.ukl.image.kernel-flavour": img.meta.kernel_flavour,
        "dev.ukl.image.mode": img.meta.mode,
    }


def urunc_json(annots: dict[str, str]) -> str:
    """The /urunc.json document: urunc's annotations, values base64."""
    return json.dumps({k: base64.b64encode(v.encode()).decode()
                       for k, v in sorted(annots.items()) if k.startswith("com.urunc.")},
                      indent=2) + "\n"


def require_tool(name: str, package: str = "") -> str:
    """The path of host tool `name`, from Debian package `package` (default:
    the same name), which `ukl setup` installs (ukl/host/packages.py)."""
    path = shutil.which(name)
    if path is None:
        raise UklError(f"{name} is not installed; run `ukl setup` as root (or "
                       f"`apt-get install {package or name}`)")
    return path


def check_new_target(target: Path, option: str) -> None:
    """A target that exists is never overwritten or added to."""
    if target.exists() or target.is_symlink():
        what = "directory" if target.is_dir() else "file"
        raise UsageError(f"{option} {target}: the {what} exists and is never overwritten; "
                         "give a new path or remove it first")
    if not target.parent.is_dir():
        raise UsageError(f"{option} {target}: directory {target.parent} does not exist")


def _umoci(*args: str | Path) -> str:
    return run_quiet([require_tool("umoci"), *[str(a) for a in args]],
                     what=f"umoci {args[0]}")


def _build_layout(img: image.Image, layout: Path, work: Path) -> None:
    """The layout at `layout` (which must not exist), using `work` as scratch."""
    ref = f"{layout}:{TAG}"
    _umoci("init", "--layout", layout)
    _umoci("new", "--image", ref)
    # --rootless: no root needed, and files keep the user's ownership.
    bundle = work / "bundle"
    _umoci("unpack", "--rootless", "--image", ref, bundle)
    rootfs = bundle / "rootfs"
    where = rootfs / GUEST_DIR.lstrip("/")
    where.mkdir(mode=0o755)
    for name in (image.KERNEL_FILE, image.INITRAMFS_FILE, image.META_FILE):
        shutil.copyfile(img.path / name, where / name)
        (where / name).chmod(0o644)
    annots = urunc_annotations(img)
    (rootfs / URUNC_JSON).write_text(urunc_json(annots))
    _umoci("repack", "--image", ref, bundle)
    # Both places urunc may be handed them from: the manifest's annotations
    # and the configuration's labels (what Containerfile LABELs become).
    settings: list[str] = ["--architecture", "amd64", "--os", "linux",
                           "--clear", "config.cmd", "--clear", "config.entrypoint"]
    for key, value in annots.items():
        settings += ["--config.label", f"{key}={value}",
                     "--manifest.annotation", f"{key}={value}"]
    _umoci("config", "--image", ref, *settings)
    # umoci config leaves the pre-config manifest behind as garbage.
    _umoci("gc", "--layout", layout)


def write_layout(img: image.Image, target: Path) -> Path:
    """Image `img` as an OCI image layout in the new directory `target`."""
    check_new_target(target, "--oci")
    require_tool("umoci")
    with tempfile.TemporaryDirectory(prefix=".ukl-oci-", dir=target.parent) as tmp:
        # Built aside and renamed in place: a failed build leaves nothing
        # at `target`, and a path that appears meanwhile is not replaced.
        layout = Path(tmp) / "layout"
        _build_layout(img, layout, Path(tmp))
        _rename_new(layout, target, "--oci")
    return target


def write_archive(img: image.Image, target: Path) -> Path:
    """Image `img` as an OCI archive (a tar of the layout) in the new file `target`."""
    check_new_target(target, "--oci-archive")
    require_tool("umoci")
    skopeo = require_tool("skopeo")
    with tempfile.TemporaryDirectory(prefix=".ukl-oci-", dir=target.parent) as tmp:
        layout = Path(tmp) / "layout"
        _build_layout(img, layout, Path(tmp))
        archive = Path(tmp) / "image.tar"
        run_quiet([skopeo, "copy", "--quiet", f"oci:{layout}:{TAG}",
                   f"oci-archive:{archive}:{TAG}"], what="skopeo copy")
        _rename_new(archive, target, "--oci-archive")
    return target


def _rename_new(source: Path, target: Path, option: str) -> None:
    """Move `source` to `target` only if nothing is there yet."""
    try:
        if source.is_dir():
            # rename(2) replaces an empty directory: make sure there is none.
            target.mkdir()
            target.rmdir()
            source.rename(target)
        else:
            # link(2) never replaces what is there.
            os.link(source, target)
            source.unlink()
    except FileExistsError:
        raise UsageError(f"{option} {target}: appeared while the package was being made; "
                         "it was left alone (give a new path)") from None
