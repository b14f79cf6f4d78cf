"""What the ukl_profile plugin writes at exit (qemu/plugins/ukl_profile.c):

    # ukl_profile 1
    total  N  passes  P  overruns  O
    functions  F
    columns  self  entries  exits  syscall ...
    f  INDEX  SELF  EVENT...          one per function that ran or counted
    n  ID  PARENT  FUNC  INSNS        calling contexts, parents first

Function indices are lines of the syms= file, then the unknown user and
unknown kernel buckets; node 0 is the root (no function).
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
                          columns)
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
            else:
                raise ValueError(f"unexpected {parts[0]!r}")
        except (KeyError, IndexError, ValueError) as e:
            raise ValueError(f"line {number}: {e}") from e
    if raw is None:
        raise ValueError("no columns line")
    return raw


def read(path: Path) -> Raw:
    if not path.is_file():
        raise UklError(f"the ukl_profile plugin wrote no {path} (did QEMU start?)")
    try:
        return parse(path.read_text())
    except ValueError as e:
        raise UklError(f"{path}: {e}") from e
