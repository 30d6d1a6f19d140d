"""Imports run one way: DEVELOPERS.md's layer list, checked against every import in kafkapy/.

Each module imports from its own layer or a lower one (a higher number in the list), at
module level, inside functions and under TYPE_CHECKING alike; and the module-level imports
form no cycle.  The layers are read from DEVELOPERS.md itself, so the document and the
code cannot drift apart.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "kafkapy"
APART = ("kafkapy.pipeline", "kafkapy.__main__")   # the Spark job and `python -m`: no layer


def _layers() -> list[tuple[int, str]]:
    """(layer number, module prefix) from the numbered list under '## Layers'."""
    text = (ROOT / "DEVELOPERS.md").read_text()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    prefixes = []
    for number, rest in re.findall(r"^(\d+)\. (.+(?:\n {3,}.+)*)", section, re.M):
        for path in re.findall(r"`([\w/.]+)`", rest):
            name = path.removeprefix("kafkapy/").removesuffix("/").removesuffix(".py")
            prefixes.append((int(number), "kafkapy." + name.replace("/", ".")))
    return prefixes


LAYERS = _layers()


def _layer(module: str) -> int | None:
    found = [(len(prefix), number) for number, prefix in LAYERS
             if module == prefix or module.startswith(prefix + ".")]
    return max(found)[1] if found else None


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(path: Path, name: str):
    """(imported module, line, at module level) for each kafkapy import in ``path``."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top_level = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for target in targets:
            if target.startswith("kafkapy"):
                yield target, node.lineno, id(node) in top_level


def _resolve(target: str, modules: dict[str, Path]) -> str | None:
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def _graph():
    modules = _modules()
    edges = {}
    for name, path in modules.items():
        for target, line, top in _imports(path, name):
            resolved = _resolve(target, modules)
            if resolved and resolved != name:
                edges.setdefault(name, {}).setdefault(resolved, (line, top))
    return modules, edges


def test_every_module_has_a_layer():
    modules, _ = _graph()
    assert [m for m in modules if _layer(m) is None and not m.startswith(APART)
            and m != "kafkapy"] == []


def test_imports_go_to_the_same_layer_or_below():
    _, edges = _graph()
    upward = [f"{source}:{line} imports {target}"
              for source, targets in edges.items() if not source.startswith(APART)
              for target, (line, _) in targets.items()
              if target != "kafkapy" and not _is_own_package(source, target)
              and (_layer(target) or 99) < (_layer(source) or 0)]
    assert upward == []


def _is_own_package(source: str, target: str) -> bool:
    """A module reaching its own package's ``__init__`` (a submodule of it) is not a floor."""
    return source.startswith(target + ".")


def test_module_level_imports_form_no_cycle():
    _, edges = _graph()
    graph = {s: [t for t, (_, top) in ts.items() if top and not _is_own_package(s, t)]
             for s, ts in edges.items()}
    cycles = []
    state: dict[str, int] = {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert cycles == []


def test_the_layer_list_is_read():
    """The document's list is what the other tests check: ten layers, handlers above
    the coordinators, the protocol at the bottom."""
    numbers = dict((prefix, number) for number, prefix in LAYERS)
    assert max(numbers.values()) == 10
    assert numbers["kafkapy.handlers"] < numbers["kafkapy.coordinator"] < numbers["kafkapy.protocol"]
