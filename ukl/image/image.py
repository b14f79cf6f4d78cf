"""Image directories: build/images/NAME/{vmlinux, initramfs.cpio, image.json}.

An image is self-contained: the kernel is copied in, so rebuilding a kernel
flavour never changes an image that was already made.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from ukl.common import paths
from ukl.common.errors import UklError, UsageError
from ukl.image import initramfs

KERNEL_FILE = "vmlinux"
INITRAMFS_FILE = "initramfs.cpio"
META_FILE = "image.json"


@dataclass
class ImageMeta:
    name: str
    kernel_flavour: str
    # 'process': the program runs as an ordinary process on that kernel;
    # 'ukl': it is linked into the kernel and runs at CPL0.
    mode: str
    program: str


@dataclass
class Image:
    path: Path
    meta: ImageMeta

    @property
    def kernel(self) -> Path:
        return self.path / KERNEL_FILE

    @property
    def initramfs(self) -> Path:
        return self.path / INITRAMFS_FILE


def valid_name(name: str) -> bool:
    return bool(name) and all(c.isalnum() or c in "-_." for c in name) and name[0] != "."


def staged_kernel(name: str) -> Path:
    """Where a kernel build copies the vmlinux for image `name`
    (ukl.kbuild.build's `snapshot`), this process's own file in the
    image's directory: create() moves it in once the initramfs is
    written, so a build that fails leaves the old image whole."""
    if not valid_name(name):
        raise UsageError(f"bad image name {name!r}: use letters, digits, '-', '_' and '.'")
    return paths.images_dir() / name / f".{KERNEL_FILE}.{os.getpid()}"


def create(name: str, vmlinux: Path, flavour: str, spec: initramfs.InitramfsSpec,
           mode: str = "process") -> Image:
    """Image `name`: `vmlinux` (moved in if it is staged_kernel(name),
    else copied) and an initramfs made from `spec`."""
    staged = staged_kernel(name)
    out = staged.parent
    out.mkdir(parents=True, exist_ok=True)
    try:
        initramfs.write(spec, out / INITRAMFS_FILE)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    if vmlinux == staged:
        staged.replace(out / KERNEL_FILE)
    else:
        shutil.copyfile(vmlinux, out / KERNEL_FILE)
    meta = ImageMeta(name=name, kernel_flavour=flavour, mode=mode,
                     program=spec.program_guest_path())
    (out / META_FILE).write_text(json.dumps(asdict(meta), indent=2) + "\n")
    return Image(out, meta)


def find(ref: str) -> Image:
    """An image by name (under build/images) or by directory path."""
    candidates = [Path(ref)] if ("/" in ref or ref.startswith(".")) else [
        paths.images_dir() / ref]
    for path in candidates:
        meta_file = path / META_FILE
        if meta_file.is_file():
            meta = ImageMeta(**json.loads(meta_file.read_text()))
            image = Image(path, meta)
            for f in (image.kernel, image.initramfs):
                if not f.is_file():
                    raise UklError(f"image {path} is incomplete: {f.name} is missing; "
                                   "recreate it with `ukl build` or `ukl image create`")
            return image
    known = sorted(p.name for p in paths.images_dir().glob("*") if (p / META_FILE).is_file()) \
        if paths.images_dir().is_dir() else []
    shown = ", ".join(known[:8]) + (f" and {len(known) - 8} more (ls {paths.images_dir()})"
                                    if len(known) > 8 else "")
    hint = f"known images: {shown}" if known else "no images built yet"
    raise UsageError(f"no image '{ref}' ({hint}); create one with `ukl build SOURCE.c -o NAME`")


def all_images() -> list[Image]:
    """Every complete-looking image under build/images, by name."""
    root = paths.images_dir()
    if not root.is_dir():
        return []
    found = []
    for path in sorted(root.iterdir()):
        meta_file = path / META_FILE
        if path.is_dir() and meta_file.is_file():
            try:
                found.append(Image(path, ImageMeta(**json.loads(meta_file.read_text()))))
            except (ValueError, TypeError):
                continue    # not an image this version wrote: left alone
    return found


def size_bytes(img: Image) -> int:
    return sum(f.stat().st_size for f in img.path.iterdir() if f.is_file())


def named_dir(name: str) -> Path:
    """The directory of the image NAME under build/images, which must
    exist. By name only, so that a path given by mistake never reaches a
    directory of the user's."""
    if not valid_name(name):
        raise UsageError(f"bad image name {name!r}: give names from `ukl image ls`, "
                         "not paths")
    path = paths.images_dir() / name
    if not (path / META_FILE).is_file():
        raise UsageError(f"no image '{name}' (`ukl image ls` lists them)")
    return path


def remove(name: str) -> None:
    """Delete the image NAME (named_dir())."""
    shutil.rmtree(named_dir(name))
