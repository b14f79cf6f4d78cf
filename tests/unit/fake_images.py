"""Image directories for tests of the tool's checks, without a kernel
build: what `ukl run` and `ukl image` read of an image."""
from __future__ import annotations

import json
from pathlib import Path


def fake_image(where: Path, name: str, flavour: str = "plain", mode: str = "process",
               kernel_config: str | None = None, build: Path | None = None) -> Path:
    """An image directory `where`/`name` with empty (or small) files, of the
    kernel flavour `flavour`; with `kernel_config`, that flavour's .config
    under `build` (UKL_BUILD_DIR) is written too."""
    image = where / name
    image.mkdir(parents=True)
    for f in ("vmlinux", "initramfs.cpio"):
        (image / f).write_bytes(b"x" * 1024)
    (image / "image.json").write_text(json.dumps(
        {"name": name, "kernel_flavour": flavour, "mode": mode,
         "program": "/UKL" if mode == "ukl" else ""}))
    if kernel_config is not None:
        assert build is not None
        config = build / "kernel" / flavour / ".config"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(kernel_config)
    return image
