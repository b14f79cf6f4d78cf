"""Patch series <-> git working tree.

A component's tree (build/src/NAME) is a git repository whose first commit,
tagged `debian-base`, is the pristine Debian source; each patch of the series
is one commit on top. Developers edit and commit in that tree, then
`ukl series export NAME` writes the commits back as the series, so nobody
edits .patch files by hand.

State kept in the tree's git config:
  ukl.debianversion  Debian version the base commit was extracted from
  ukl.seriesdigest   digest of the series that was applied or exported
  ukl.appliedhead    the commit that series corresponds to
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from ukl.common import paths
from ukl.common.errors import UklError
from ukl.common.proc import run_logged, run_quiet
from ukl.sources.debian import Component, record_version, require_tarball

BASE_TAG = "debian-base"
SERIES_FILE = "series"
# The cover letter's text (first line: the subject; then the body), kept
# beside the series; export writes COVER_PATCH from it with the series'
# shortlog and diffstat.
COVER_TEXT = "cover-letter.txt"
COVER_PATCH = "0000-cover-letter.patch"
# Fixed identity and dates make the base commit reproducible and keep git
# from asking for a user configuration on a fresh machine.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "UKL series",
    "GIT_AUTHOR_EMAIL": "ukl@localhost",
    "GIT_COMMITTER_NAME": "UKL series",
    "GIT_COMMITTER_EMAIL": "ukl@localhost",
}


def _git(tree: Path, *args: str, what: str = "git") -> str:
    env = dict(os.environ, **_GIT_ENV)
    return run_quiet(["git", "-C", str(tree), *args], what=what, env=env)


def read_series(series_dir: Path) -> list[Path]:
    """Patch files named by the series file, in order; comments and blanks skipped."""
    series = series_dir / SERIES_FILE
    if not series.is_file():
        raise UklError(f"no series file: {series}")
    patches = []
    for raw in series.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        patch = series_dir / line
        if not patch.is_file():
            raise UklError(f"{series} names {line}, which does not exist")
        patches.append(patch)
    return patches


def series_digest(series_dir: Path) -> str:
    h = hashlib.sha256()
    for patch in read_series(series_dir):
        h.update(patch.name.encode() + b"\0")
        h.update(patch.read_bytes())
    return h.hexdigest()


def _config(tree: Path, key: str) -> str:
    try:
        return _git(tree, "config", "--get", key).strip()
    except UklError:
        return ""


def _set_config(tree: Path, **values: str) -> None:
    for key, value in values.items():
        _git(tree, "config", f"ukl.{key}", value)


def _is_dirty(tree: Path) -> bool:
    return bool(_git(tree, "status", "--porcelain", "--untracked-files=normal").strip())


def _ignored_new_files(tree: Path) -> list[str]:
    """Untracked files that .gitignore hides: new sources a commit missed
    (builds happen outside the tree, so there are no build outputs here)."""
    return _git(tree, "ls-files", "--others", "--ignored", "--exclude-standard").split()


def _head(tree: Path) -> str:
    return _git(tree, "rev-parse", "HEAD").strip()


def _unexported_commits(tree: Path) -> list[str]:
    applied = _config(tree, "ukl.appliedhead")
    if not applied:
        return []
    out = _git(tree, "log", "--format=%h %s", f"{applied}..HEAD")
    return out.splitlines()


def unexported_commits(comp: Component) -> list[str]:
    """Commits in comp's tree that its series does not hold yet (none
    before the tree exists)."""
    if not (comp.tree / ".git").is_dir():
        return []
    return _unexported_commits(comp.tree)


def _create_tree(comp: Component, version: str) -> None:
    """Extract the pristine tarball into a fresh git repository."""
    comp.tree.parent.mkdir(parents=True, exist_ok=True)
    log = paths.logs_dir() / f"extract-{comp.name}.log"
    with tempfile.TemporaryDirectory(dir=comp.tree.parent, prefix=f".{comp.name}-") as tmp:
        run_logged(["tar", "--no-same-owner", "-xf", comp.tarball, "-C", tmp],
                   label=f"extract {comp.package} {version}", log_path=log)
        extracted = Path(tmp) / comp.topdir
        if not extracted.is_dir():
            raise UklError(f"{comp.tarball} did not unpack to {comp.topdir}/")
        git_env = dict(os.environ, **_GIT_ENV)
        steps = [
            ["git", "init", "-q", "-b", "main", str(extracted)],
            ["git", "-C", str(extracted), "config", "gc.auto", "0"],
            ["git", "-C", str(extracted), "add", "-A", "-f"],
            ["git", "-C", str(extracted), "commit", "-q", "--no-verify",
             "-m", f"{comp.package} {version} (pristine Debian source)"],
            ["git", "-C", str(extracted), "tag", BASE_TAG],
        ]
        for cmd in steps:
            run_logged(cmd, label=f"import {comp.name} into git", log_path=log, env=git_env,
                       append=True)
        if comp.tree.exists():
            shutil.rmtree(comp.tree)
        extracted.rename(comp.tree)
    _set_config(comp.tree, debianversion=version)


def _apply_series(comp: Component, version: str) -> None:
    """Reset to the pristine base and apply every patch, naming any that fails."""
    _git(comp.tree, "reset", "-q", "--hard", BASE_TAG)
    for patch in read_series(comp.series_dir):
        try:
            _git(comp.tree, "am", "-q", "--whitespace=nowarn",
                 "--committer-date-is-author-date", str(patch),
                 what=f"applying {patch.name}")
        except UklError as e:
            _git(comp.tree, "am", "--abort")
            _git(comp.tree, "reset", "-q", "--hard", BASE_TAG)
            _set_config(comp.tree, seriesdigest="", appliedhead="")
            raise UklError(
                f"patch {patch.name} does not apply to {comp.package} {version} "
                f"(series last exported against {comp.recorded_version}); "
                f"rebase it in {comp.tree} and run `ukl series export {comp.name}`",
                detail=e.detail) from e
    _set_config(comp.tree, seriesdigest=series_digest(comp.series_dir),
                appliedhead=_head(comp.tree))


def _refuse_to_lose_work(comp: Component, action: str) -> None:
    if _is_dirty(comp.tree):
        raise UklError(
            f"{comp.tree} has uncommitted changes and would be {action}; commit them "
            f"and run `ukl series export {comp.name}`, or discard them with "
            f"`ukl series reset {comp.name}`")
    extra = _unexported_commits(comp.tree)
    if extra:
        raise UklError(
            f"{comp.tree} has {len(extra)} commit(s) not in {comp.series_dir} and would be "
            f"{action}; run `ukl series export {comp.name}` first, or "
            f"`ukl series reset {comp.name}` to drop them")


def prepare(comp: Component, version: str | None = None) -> Path:
    """Make sure comp.tree exists and carries the current series.

    `version` is the Debian version of comp.tarball (looked up with dpkg when
    not given). Returns the tree. Never discards commits or edits made in it.
    """
    version = version or require_tarball(comp)
    if version != comp.recorded_version:
        print(f"ukl: note: {comp.package} {version} is installed; the series was "
              f"last exported against {comp.recorded_version}", file=sys.stderr)
    fresh = not (comp.tree / ".git").is_dir() or not _config(comp.tree, "ukl.debianversion")
    if not fresh and _config(comp.tree, "ukl.debianversion") != version:
        _refuse_to_lose_work(comp, "re-extracted for the new Debian version")
        fresh = True
    if fresh:
        _create_tree(comp, version)
        _apply_series(comp, version)
        return comp.tree
    if _config(comp.tree, "ukl.seriesdigest") == series_digest(comp.series_dir):
        extra = _unexported_commits(comp.tree)
        if extra:
            print(f"ukl: note: building {comp.tree} with {len(extra)} commit(s) not yet "
                  f"exported (`ukl series export {comp.name}`)", file=sys.stderr)
        return comp.tree
    _refuse_to_lose_work(comp, "reset to the changed series")
    _apply_series(comp, version)
    return comp.tree


def reset(comp: Component, version: str | None = None) -> Path:
    """Discard local edits and commits; the tree becomes base + series again."""
    if not (comp.tree / ".git").is_dir():
        return prepare(comp, version)
    version = version or require_tarball(comp)
    if _config(comp.tree, "ukl.debianversion") != version:
        _create_tree(comp, version)
    if (comp.tree / ".git" / "rebase-apply").exists():
        _git(comp.tree, "am", "--abort")
    _git(comp.tree, "clean", "-q", "-fdx")
    _apply_series(comp, version)
    return comp.tree


def export(comp: Component) -> list[str]:
    """Write the tree's commits since the base back as the series. Returns patch names."""
    if not (comp.tree / ".git").is_dir():
        raise UklError(f"no tree at {comp.tree}; run `ukl series prepare {comp.name}`")
    if _is_dirty(comp.tree):
        raise UklError(f"{comp.tree} has uncommitted changes; commit them first")
    hidden = _ignored_new_files(comp.tree)
    if hidden:
        raise UklError(f"{comp.tree}: new file(s) that .gitignore hides from `git add`, so in "
                       f"no patch: {', '.join(hidden[:5])}; add them with `git add -f` and "
                       f"commit (Debian's kernel .gitignore ignores every new top-level path)")
    with tempfile.TemporaryDirectory() as tmp:
        # --zero-commit and --no-signature keep the files stable across
        # re-exports: only real changes show up in the project's diff.
        _git(comp.tree, "format-patch", "-q", "--no-numbered", "--zero-commit", "--no-signature",
             "-o", tmp, f"{BASE_TAG}..HEAD",
             what="git format-patch")
        new = sorted(Path(tmp).glob("*.patch"))
        comp.series_dir.mkdir(parents=True, exist_ok=True)
        for old in comp.series_dir.glob("*.patch"):
            old.unlink()
        for patch in new:
            shutil.copy(patch, comp.series_dir / patch.name)
    cover = comp.series_dir / COVER_TEXT
    if cover.is_file():
        (comp.series_dir / COVER_PATCH).write_text(cover_letter(comp, cover.read_text(),
                                                                len(new)))
    header = ("# Patch series, applied in order on the pristine Debian source.\n"
              "# Managed by `ukl series export`; do not edit patches by hand.\n")
    names = [p.name for p in new]
    (comp.series_dir / SERIES_FILE).write_text(header + "".join(n + "\n" for n in names))
    _set_config(comp.tree, seriesdigest=series_digest(comp.series_dir),
                appliedhead=_head(comp.tree))
    record_version(comp, _config(comp.tree, "ukl.debianversion"))
    return names


def cover_letter(comp: Component, text: str, count: int) -> str:
    """The series' cover letter, as `git format-patch --cover-letter` lays
    it out: our subject and body, then the shortlog and the diffstat. Its
    author and date are the last commit's, so a re-export without changes
    writes the same file."""
    subject, _, body = text.strip().partition("\n")
    author = _git(comp.tree, "log", "-1", "--format=%an <%ae>%n%aD", what="git log")
    who, date = author.strip().split("\n")
    shortlog = _git(comp.tree, "shortlog", f"{BASE_TAG}..HEAD", what="git shortlog")
    stat = _git(comp.tree, "diff", "--stat=72", "--summary", f"{BASE_TAG}..HEAD",
                what="git diff --stat")
    return (f"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
            f"From: {who}\nDate: {date}\nSubject: [PATCH 0/{count}] {subject.strip()}\n\n"
            f"{body.strip()}\n\n{shortlog.rstrip()}\n\n{stat.rstrip()}\n")


def status(comp: Component) -> str:
    if not (comp.tree / ".git").is_dir():
        return f"{comp.name}: not prepared (run `ukl series prepare {comp.name}`)"
    lines = [f"{comp.name}: {comp.tree}",
             f"  base:   {comp.package} {_config(comp.tree, 'ukl.debianversion')}",
             f"  series: {len(read_series(comp.series_dir))} patch(es) in {comp.series_dir}"]
    if _config(comp.tree, "ukl.seriesdigest") != series_digest(comp.series_dir):
        lines.append("  the series changed since it was applied: `ukl series prepare` updates")
    extra = _unexported_commits(comp.tree)
    if extra:
        lines.append(f"  {len(extra)} commit(s) not exported:")
        lines += [f"    {c}" for c in extra]
    if _is_dirty(comp.tree):
        lines.append("  uncommitted changes present")
    return "\n".join(lines)
