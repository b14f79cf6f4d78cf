"""From the plugin's counts to what a reader wants: the flat profile (per
function: self and inclusive instructions, share of the total, privilege
transitions and the instructions that cost cycles), the call tree and the
folded stacks a flame graph is drawn from.

Self counts are exact (every instruction is charged to the function its
address lies in). Inclusive counts and stacks come from the plugin's
shadow call stack, which is exact while calls and returns pair up; see
qemu/plugins/ukl_profile.c for where they do not.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from ukl.profile.data import Raw

# The expensive instructions the flat profile's table shows (all columns go
# to the CSV).
SHOWN_EVENTS = ("syscall", "swapgs", "cr3_writes", "verw", "serialising")


@dataclass(frozen=True)
class Row:
    """One function of the flat profile."""

    name: str
    kind: str
    self_insns: int
    inclusive: int
    events: dict[str, int]

    @property
    def transitions(self) -> int:
        """Privilege transitions this function's code made: into the kernel
        from it (it was the user code running), out of the kernel from it."""
        return self.events.get("entries", 0) + self.events.get("exits", 0)


@dataclass(frozen=True)
class Profile:
    total: int
    passes: int
    overruns: int
    columns: list[str]
    rows: list[Row]              # by self instructions, most first
    folded: dict[str, int]       # "f1;f2;...;leaf" -> self instructions there
    tree: str                    # the call tree, as text

    @property
    def attributed(self) -> int:
        return sum(r.self_insns for r in self.rows)

    def row(self, name: str) -> Row | None:
        return next((r for r in self.rows if r.name == name), None)


def _paths(raw: Raw) -> dict[int, list[int]]:
    """Each node's function indices from the root down."""
    paths: dict[int, list[int]] = {0: []}
    for node_id, node in raw.nodes.items():   # parents come first
        paths[node_id] = [*paths[node.parent], node.func]
    return paths


def _subtotals(raw: Raw) -> dict[int, int]:
    """Each node's instructions with its descendants'."""
    sub = {node_id: node.insns for node_id, node in raw.nodes.items()}
    for node_id in sorted(raw.nodes, reverse=True):   # children after parents
        parent = raw.nodes[node_id].parent
        if parent:
            sub[parent] += sub[node_id]
    return sub


def analyse(raw: Raw, names: list[str], kinds: list[str], min_share: float = 0.002) -> Profile:
    """`names`, `kinds`: each function index's name and kind (symbols.names,
    symbols.kinds). The call tree shows contexts of at least `min_share` of
    the total."""
    paths = _paths(raw)
    sub = _subtotals(raw)
    inclusive = [0] * len(names)
    for node_id, node in raw.nodes.items():
        # Counted once at the outermost frame of a recursion.
        if node.func not in paths[node.parent]:
            inclusive[node.func] += sub[node_id]
    rows = []
    for index, (self_insns, events) in raw.funcs.items():
        rows.append(Row(names[index], kinds[index], self_insns, inclusive[index],
                        dict(zip(raw.columns[1:], events))))
    rows.sort(key=lambda r: (-r.self_insns, -r.inclusive, r.name))
    folded: dict[str, int] = {}
    for node_id, node in raw.nodes.items():
        if node.insns:
            key = ";".join(names[f] for f in paths[node_id])
            folded[key] = folded.get(key, 0) + node.insns
    return Profile(raw.total, raw.passes, raw.overruns, raw.columns, rows, folded,
                   _tree(raw, names, sub, max(1, int(raw.total * min_share))))


def _tree(raw: Raw, names: list[str], sub: dict[int, int], least: int) -> str:
    children: dict[int, list[int]] = {}
    for node_id, node in raw.nodes.items():
        if sub[node_id] >= least:
            children.setdefault(node.parent, []).append(node_id)
    total = max(1, raw.total)
    lines = [f"{'inclusive':>14} {'self':>12}  function (contexts of at least {least} "
             "instructions)"]
    stack = [(c, 0) for c in sorted(children.get(0, []), key=lambda c: sub[c])]
    while stack:
        node_id, depth = stack.pop()
        node = raw.nodes[node_id]
        lines.append(f"{sub[node_id]:>14} {node.insns:>12}  {'  ' * depth}{names[node.func]} "
                     f"({100 * sub[node_id] / total:.1f}%)")
        stack += [(c, depth + 1) for c in sorted(children.get(node_id, []), key=lambda c: sub[c])]
    return "\n".join(lines) + "\n"


def problems(profile: Profile) -> list[str]:
    """Why the profile does not add up (none, when the plugin is exact)."""
    found = []
    if profile.attributed != profile.total:
        found.append(f"the functions' instructions sum to {profile.attributed}, "
                     f"the window's total is {profile.total}")
    if sum(profile.folded.values()) != profile.total:
        found.append(f"the stacks' instructions sum to {sum(profile.folded.values())}, "
                     f"the window's total is {profile.total}")
    if profile.overruns:
        found.append(f"{profile.overruns} instruction deltas ran past their block")
    return found


def flat_csv(profile: Profile) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    events = profile.columns[1:]
    w.writerow(["function", "kind", "self", "self_share", "inclusive", "inclusive_share",
                "transitions", *events])
    total = max(1, profile.total)
    for r in profile.rows:
        w.writerow([r.name, r.kind, r.self_insns, f"{r.self_insns / total:.6f}", r.inclusive,
                    f"{r.inclusive / total:.6f}", r.transitions,
                    *(r.events.get(e, 0) for e in events)])
    return out.getvalue()


def table(profile: Profile, top: int = 30) -> str:
    """The flat profile's `top` functions by self instructions, as text."""
    total = max(1, profile.total)
    head = (f"{'self':>12} {'%':>6} {'inclusive':>12} {'%':>6} {'trans':>6} "
            + " ".join(f"{e[:7]:>7}" for e in SHOWN_EVENTS) + "  kind    function")
    lines = [f"{profile.total} instructions in {profile.passes} pass(es); "
             f"top {min(top, len(profile.rows))} of {len(profile.rows)} functions by self "
             "instructions", head]
    for r in profile.rows[:top]:
        lines.append(f"{r.self_insns:>12} {100 * r.self_insns / total:>6.2f} "
                     f"{r.inclusive:>12} {100 * r.inclusive / total:>6.2f} {r.transitions:>6} "
                     + " ".join(f"{r.events.get(e, 0):>7}" for e in SHOWN_EVENTS)
                     + f"  {r.kind:7} {r.name}")
    return "\n".join(lines) + "\n"


def folded_text(profile: Profile) -> str:
    """Brendan Gregg's folded format: "a;b;c COUNT" a line, sorted."""
    return "".join(f"{stack} {count}\n" for stack, count in sorted(profile.folded.items()))


def heaviest_stacks(profile: Profile, n: int = 10) -> str:
    total = max(1, profile.total)
    top = sorted(profile.folded.items(), key=lambda kv: -kv[1])[:n]
    return "".join(f"{count:>12} {100 * count / total:>6.2f}%  {stack}\n" for stack, count in top)
