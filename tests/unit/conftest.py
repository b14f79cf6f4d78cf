"""Unit tests isolate themselves in a build tree of their own (UKL_BUILD_DIR)."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_worker_images_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under `make test`, a worker's images directory (UKL_IMAGES_DIR, set
    by tests/conftest.py) is outside the build tree a unit test makes with
    UKL_BUILD_DIR: images go under that tree, as they do for a user."""
    monkeypatch.delenv("UKL_IMAGES_DIR", raising=False)
