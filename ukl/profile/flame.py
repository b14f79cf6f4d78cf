"""A flame graph (SVG) from folded stacks.

Drawn here, in about a hundred lines: Debian 12 packages no flame-graph
renderer (flamegraph.pl is not in the archive, inferno is not packaged for
bookworm), and a PyPI one would be a new dependency for little work. The
picture follows Brendan Gregg's: the root at the bottom, each frame as wide
as its inclusive instructions, children above their caller in name order,
a tooltip (<title>) with the count and share. Colours say whose code a
frame is: the application's, the kernel's, or unknown.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

WIDTH = 1200
FRAME = 16
MARGIN = 10
TOP = 40
FONT = 11
CHAR = 6.6          # an average glyph's width at FONT, for truncating labels
MIN_WIDTH = 0.3     # frames narrower than this (pixels) are left out
ROOT = "all"


@dataclass
class _Frame:
    name: str
    count: int = 0
    children: dict[str, _Frame] = field(default_factory=dict)


def _tree(folded: dict[str, int]) -> _Frame:
    root = _Frame(ROOT)
    for stack, count in folded.items():
        node = root
        node.count += count
        for name in stack.split(";"):
            node = node.children.setdefault(name, _Frame(name))
            node.count += count
    return root


def _depth(frame: _Frame) -> int:
    return 1 + max((_depth(c) for c in frame.children.values()), default=0)


def _colour(name: str, kind: str) -> str:
    """Warm for the kernel, cool for the application, grey for unknown code;
    the hue varies a little by name so that neighbours differ."""
    jitter = zlib.crc32(name.encode()) % 40
    if kind == "app":
        return f"rgb({60 + jitter},{140 + jitter},{215})"
    if kind == "kernel":
        return f"rgb({225},{100 + jitter * 2},{40 + jitter})"
    return f"rgb({170 + jitter},{170 + jitter},{170 + jitter})"


def render(folded: dict[str, int], kinds: dict[str, str], title: str) -> str:
    """The SVG text. `kinds`: function name -> "app", "kernel" or other."""
    root = _tree(folded)
    depth = _depth(root)
    height = TOP + depth * FRAME + MARGIN * 2
    scale = (WIDTH - 2 * MARGIN) / max(1, root.count)
    out = [
        '<?xml version="1.0" standalone="no"?>',
        f'<svg version="1.1" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" xmlns="http://www.w3.org/2000/svg">',
        f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#f8f8f8"/>',
        f'<text x="{WIDTH // 2}" y="24" font-size="16" font-family="Verdana" '
        f'text-anchor="middle">{escape(title)}</text>',
    ]

    def draw(frame: _Frame, x: float, level: int) -> None:
        w = frame.count * scale
        if w < MIN_WIDTH:
            return
        y = height - MARGIN - (level + 1) * FRAME
        share = 100 * frame.count / max(1, root.count)
        label = f"{frame.name} ({frame.count} instructions, {share:.2f}%)"
        kind = kinds.get(frame.name, "")
        out.append(f'<g><title>{escape(label)}</title>'
                   f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{FRAME - 1}" '
                   f'fill={quoteattr(_colour(frame.name, kind))} rx="2"/>')
        fits = int((w - 6) / CHAR)
        if fits >= 3:
            text = frame.name if len(frame.name) <= fits else frame.name[:fits - 2] + ".."
            out.append(f'<text x="{x + 3:.2f}" y="{y + FRAME - 4}" font-size="{FONT}" '
                       f'font-family="Verdana">{escape(text)}</text>')
        out.append("</g>")
        cx = x
        for name in sorted(frame.children):
            child = frame.children[name]
            draw(child, cx, level + 1)
            cx += child.count * scale

    draw(root, MARGIN, 0)
    out.append("</svg>")
    return "\n".join(out) + "\n"
