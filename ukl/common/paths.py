"""Where things live: the repository and its ignored build/ tree."""
from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def build_root() -> Path:
    """Root of all generated files; UKL_BUILD_DIR overrides (tests use it)."""
    override = os.environ.get("UKL_BUILD_DIR")
    return Path(override).resolve() if override else REPO_ROOT / "build"


def source_trees_dir() -> Path:
    return build_root() / "src"


def kernel_builds_dir() -> Path:
    return build_root() / "kernel"


def images_dir() -> Path:
    """Where images live (build/images); UKL_IMAGES_DIR overrides (each of
    the test suite's workers keeps its images apart)."""
    override = os.environ.get("UKL_IMAGES_DIR")
    return Path(override).resolve() if override else build_root() / "images"


def logs_dir() -> Path:
    return build_root() / "logs"
