"""The ukl package's import graph: each layer imports only the layers below
it (or modules of its own package), and no module imports itself back
through others. Every import counts, function-local ones too: a lazy import
hides a loop, it does not remove it."""
from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

# Bottom to top. A module's layer is its top-level package under ukl/ (or
# the top-level module itself).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("common",),                                # paths, errors, processes, stamps
    ("sources", "host"),                        # Debian sources + series; host packages
    ("toolchain", "kbuild", "image", "qemu"),   # sysroot, kernels, images, booting
    ("app",),                                   # compiling applications
    ("pipeline", "results"),                    # program + flavour -> image; results/
    ("bench", "matrix", "fuzz", "soak", "catalog"),  # recorded runs
    ("profile",),                               # profiles, on bench's plugin builder
    ("cli",),                                   # the command line
    ("__main__",),                              # python3 -m ukl
)
LAYER = {part: i for i, parts in enumerate(LAYERS) for part in parts}


def _module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _imports(path: Path, name: str, modules: set[str]) -> set[str]:
    """The ukl modules `path` imports (`from ukl.x import y` counts as
    ukl.x.y when that is a module, else as ukl.x)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[:len(package.split(".")) - node.level + 1],
                                 *([base] if base else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in modules else base)
    return {m for m in found if m in modules and m != name}


def graph() -> dict[str, set[str]]:
    files = sorted((REPO / "ukl").rglob("*.py"))
    modules = {_module_name(f) for f in files}
    return {_module_name(f): _imports(f, _module_name(f), modules) for f in files}


def _layer(module: str) -> int:
    part = module.split(".")[1] if "." in module else ""
    assert part in LAYER, f"{module}: add its package to LAYERS in {__file__}"
    return LAYER[part]


def test_every_import_goes_down_or_stays_in_its_package() -> None:
    upward = []
    for module, imported in graph().items():
        if module == "ukl":
            continue
        for other in imported:
            same_package = other.split(".")[:2] == module.split(".")[:2]
            if other != "ukl" and not same_package and _layer(other) >= _layer(module):
                upward.append(f"{module} -> {other}")
    assert not upward, "imports that do not go down a layer:\n" + "\n".join(sorted(upward))


def test_no_import_loops() -> None:
    edges = graph()
    loops = []
    state: dict[str, int] = {}

    def visit(module: str, stack: list[str]) -> None:
        state[module] = 1
        for other in sorted(edges[module]):
            if other == module.rpartition(".")[0]:
                continue  # a module's own package __init__ (no code of its own)
            if state.get(other) == 1:
                loops.append(" -> ".join([*stack[stack.index(other):], other]))
            elif other not in state:
                visit(other, [*stack, other])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert not loops, "import loops:\n" + "\n".join(loops)


def test_the_graph_sees_lazy_imports(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from ukl.cli import main\n")
    assert _imports(source, "ukl.common.m", {"ukl.cli", "ukl.common.m"}) == {"ukl.cli"}
