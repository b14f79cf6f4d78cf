"""What the ukl_profile plugin writes at exit (qemu/plugins/ukl_profile.c):

    # ukl_profile 1
    total  N  passes  P  overruns  O  switches  S
    functions  F
    columns  self  entries  exits  syscall ...
    f  INDEX  SELF  EVENT...          one per function that ran or counted
    n  ID  PARENT  FUNC  INSNS        calling contexts, parents first
    series  EVERY  FUNC...            with every= and track=: the tracked functions
    s  K  END  CALLS  SELF ...        interval K, ending after instruction END:
                                      per tracked function, calls and self

Function indices are lines of the syms= file, then the unknown user and
unknown kernel buckets; node 0 is the root (no function). S: the context
switches whose shadow stacks the plugin followed (0: it found no
__switch_to_asm to follow, the stacks are one per vCPU).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ukl.common.errors import UklError

HEADER = "# ukl_profile 1"


@dataclass(frozen=True)
class Node:
    parent: int
    func: int
    insns: int


@dataclass(frozen=True)
class Interval:
    end: int                      # the run's instructions when it ended
    calls: list[int]              # per tracked function, in `Raw.tracked` order
    self_insns: list[int]


@dataclass
class Raw:
    total: int
    passes: int
    overruns: int
    nfuncs: int
    columns: list[str]
    # function index -> (self instructions, event counts in `columns` order)
    funcs: dict[int, tuple[int, list[int]]] = field(default_factory=dict)
    # node id -> Node; 0, the root, is implicit
    nodes: dict[int, Node] = field(default_factory=dict)
    # The series (every= and track=): interval length, tracked functions'
    # indices, the intervals in order; 0 and empty without one.
    every: int = 0
    tracked: list[int] = field(default_factory=list)
    series: list[Interval] = field(default_factory=list)
    # Context switches followed; None from a plugin that did not say.
    switches: int | None = None


def parse(text: str) -> Raw:
    lines = text.splitlines()
    if not lines or lines[0] != HEADER:
        raise ValueError("not a ukl_profile output (no header)")
    head = {}
    raw = None
    columns: list[str] = []
    for number, line in enumerate(lines[1:], 2):
        parts = line.split("\t")
        try:
            if parts[0] == "total":
                head = {parts[i]: int(parts[i + 1]) for i in range(0, len(parts), 2)}
            elif parts[0] == "functions":
                head["functions"] = int(parts[1])
            elif parts[0] == "columns":
                columns = parts[1:]
                raw = Raw(head["total"], head["passes"], head["overruns"], head["functions"],
                          columns, switches=head.get("switches"))
            elif parts[0] == "f" and raw is not None:
                index = int(parts[1])
                if not 0 <= index < raw.nfuncs:
                    raise ValueError(f"function {index} out of range")
                raw.funcs[index] = (int(parts[2]), [int(p) for p in parts[3:]])
            elif parts[0] == "n" and raw is not None:
                node_id, parent, func, insns = (int(p) for p in parts[1:5])
                if parent != 0 and parent not in raw.nodes:
                    raise ValueError(f"node {node_id} before its parent {parent}")
                raw.nodes[node_id] = Node(parent, func, insns)
            elif parts[0] == "series" and raw is not None:
                raw.every = int(parts[1])
                raw.tracked = [int(p) for p in parts[2:]]
            elif parts[0] == "s" and raw is not None and raw.every:
                raw.series.append(_interval(parts, raw))
            else:
                raise ValueError(f"unexpected {parts[0]!r}")
        except (KeyError, IndexError, ValueError) as e:
            raise ValueError(f"line {number}: {e}") from e
    if raw is None:
        raise ValueError("no columns line")
    return raw


def _interval(parts: list[str], raw: Raw) -> Interval:
    values = [int(p) for p in parts[1:]]
    if len(values) != 2 + 2 * len(raw.tracked):
        raise ValueError(f"an interval with {len(values)} fields, not "
                         f"{2 + 2 * len(raw.tracked)}")
    if values[0] != len(raw.series):
        raise ValueError(f"interval {values[0]} out of order")
    return Interval(values[1], values[2::2], values[3::2])


def read(path: Path) -> Raw:
    if not path.is_file():
        raise UklError(f"the ukl_profile plugin wrote no {path} (did QEMU start?)")
    try:
        return parse(path.read_text())
    except ValueError as e:
        raise UklError(f"{path}: {e}") from e
