"""The package follows the data (docs/architecture.md): imports point down the layers only, form no cycle, and an
import placed inside a function says why (it may only delay a heavy dependency, never dodge a cycle)."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pipeline"

# Bottom to top. A module may import its own part and any lower layer; parts of one layer are siblings that know
# nothing of each other (the writing direction and the checks meet only in `flows`; reading uses both, since it
# reads untrusted input safely and keeps the canonical rules that writing follows).
LAYERS = [
    {"settings", "errors"},
    {"budget"},
    {"saxon"},
    {"xslt"},
    {"unpack"},
    {"invoice"},
    {"write", "check"},
    {"read", "pdf"},
    {"flows"},
    {"storage"},
    {"jobs"},
    {"service"},
    {"cli"},
    {"__main__"},
]
RANK = {part: n for n, parts in enumerate(LAYERS) for part in parts}


def _modules() -> dict[str, Path]:
    mods = {}
    for f in PACKAGE.rglob("*.py"):
        parts = f.relative_to(PACKAGE.parent).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return mods


MODULES = _modules()


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The package's own modules an import statement loads."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = module.split(".")
        if node.level:
            package = base if MODULES[module].name == "__init__.py" else base[:-1]
            base_name = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
        else:
            base_name = node.module or ""
        submodules = [f"{base_name}.{a.name}" for a in node.names if f"{base_name}.{a.name}" in MODULES]
        names = submodules if len(submodules) == len(node.names) else [base_name] + submodules
    return {n for n in names if n in MODULES and n != module}


def _imports() -> list[tuple[str, str, int, bool, str]]:
    """(importer, imported, line, inside a function, source line) for every import of an own module."""
    found = []
    for module, path in MODULES.items():
        text = path.read_text("utf-8")
        lines = text.splitlines()
        tree = ast.parse(text)
        nested = {id(n) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                  for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(module, node):
                    found.append((module, target, node.lineno, id(node) in nested, lines[node.lineno - 1]))
    return found


IMPORTS = _imports()


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_module_belongs_to_a_layer():
    assert {_part(m) for m in MODULES} - set(RANK) == {"__init__"}  # the package's lazy public names sit above all


def test_imports_point_down_the_layers():
    upward = [f"{a} -> {b} (line {line})" for a, b, line, _, _ in IMPORTS
              if _part(a) in RANK and _part(b) != _part(a) and RANK[_part(b)] >= RANK[_part(a)]]
    assert upward == []


def test_the_import_graph_has_no_cycle():
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for a, b, *_ in IMPORTS:
        if not (MODULES[a].name == "__init__.py" and b.startswith(a + ".")):  # a package exporting its own names
            edges[a].add(b)
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def visit(module: str, path: list[str]) -> list[str] | None:
        state[module] = 1
        for nxt in sorted(edges[module]):
            if state.get(nxt) == 1:
                return path + [module, nxt]
            if nxt not in state:
                cycle = visit(nxt, path + [module])
                if cycle:
                    return cycle
        state[module] = 2
        return None

    for module in sorted(MODULES):
        if module not in state:
            cycle = visit(module, [])
            assert cycle is None, " -> ".join(cycle[cycle.index(cycle[-1]):])


def test_an_import_inside_a_function_says_why():
    silent = [f"{a} line {line}: {src.strip()}" for a, _, line, inside, src in IMPORTS if inside and "#" not in src]
    assert silent == []
