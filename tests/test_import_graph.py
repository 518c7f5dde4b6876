"""The import graph of ``ragjudge`` has no circle: a module never imports, however indirectly,
a module that imports it back; nor does a package (``ragjudge.<name>``, a subpackage or a
top-level module): the packages stand in ``LAYERS``, and a package imports only packages of the
layers below its own, never one of its own layer or above.

Every import counts: module level, inside functions (a lazy import is still a dependency) and
under ``TYPE_CHECKING`` (types are vocabulary; ``protocols.py`` must not need the sweep's).
The package root is left out: it is the public facade, importing nothing at run time (PEP 562
lazy names), and modules read only ``__version__`` from it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "ragjudge"


def modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """module -> the ragjudge modules it imports (the nearest existing module of each name)."""
    mods = modules()

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name if name and name != "ragjudge" else None

    graph: dict[str, set[str]] = {m: set() for m in mods if m != "ragjudge"}
    for mod in graph:
        path = mods[mod]
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                names = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names
                ]
            for name in names:
                target = known(name)
                if target is not None and target != mod:
                    graph[mod].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_detector_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_import_graph_has_no_circle():
    graph = import_graph()
    assert len(graph) > 150 and "ragjudge.store.base" in graph["ragjudge.store.sql"]
    found = circles(graph)
    detail = [
        " ; ".join(f"{a} -> {b}" for a in comp for b in sorted(graph[a] & set(comp)))
        for comp in found
    ]
    assert not found, "import circles:\n" + "\n".join(detail)


def test_protocols_and_schema_import_nothing_above_them():
    graph = import_graph()
    assert graph["ragjudge.protocols"] <= {"ragjudge.schema"}, graph["ragjudge.protocols"]
    assert graph["ragjudge.schema"] <= {"ragjudge.errors"}, graph["ragjudge.schema"]


LAYERS: list[set[str]] = [
    {"errors", "heap", "home", "schema", "text"},
    {"protocols", "stats", "resources", "render", "userconfig"},
    {"adapters", "embedding", "io", "prompts"},
    {"llm", "metrics"},
    {"store", "retrieval"},
    {"generate", "judges"},
    {"testset", "report", "calibrate"},
    {"sweep", "testing"},
    {"distributed", "ui"},
    {"api"},
    {"cli"},
    {"__main__"},
]
"""The layers of the house, bottom first (docs/architecture.md): vocabulary and utilities, the
data and model plumbing, the LLM client, the run store and retrieval, generation and judging
(side by side: neither needs the other), what is built from judges, the sweep, what drives
sweeps, the public API, the command line and its `python -m` entry."""


def package_of(module: str) -> str:
    """``ragjudge.judges.llm.base`` -> ``judges``; ``ragjudge.prompts`` -> ``prompts``."""
    return module.split(".")[1]


def package_graph(graph: dict[str, set[str]]) -> dict[str, dict[str, list[str]]]:
    """package -> the packages it imports -> the module imports that make the edge."""
    out: dict[str, dict[str, list[str]]] = {}
    for mod, targets in graph.items():
        edges = out.setdefault(package_of(mod), {})
        for target in sorted(targets):
            if package_of(target) != package_of(mod):
                edges.setdefault(package_of(target), []).append(f"{mod} -> {target}")
    return out


def layer_violations(
    packages: dict[str, dict[str, list[str]]], layers: list[set[str]]
) -> list[str]:
    """Every import from a package to one of its own layer or a layer above, named by module."""
    rank = {name: i for i, layer in enumerate(layers) for name in layer}
    return [
        f"{a} (layer {rank[a]}) imports {b} (layer {rank[b]}): {', '.join(why)}"
        for a in sorted(packages)
        for b, why in sorted(packages[a].items())
        if rank[b] >= rank[a]
    ]


def test_the_layer_check_finds_an_upward_import_and_a_package_circle():
    graph = {
        "ragjudge.generate.extractive": {"ragjudge.judges.items"},
        "ragjudge.judges.ragas": {"ragjudge.generate.chat"},
        "ragjudge.judges.items": set(),
        "ragjudge.generate.chat": {"ragjudge.llm.types"},
        "ragjudge.llm.types": set(),
    }
    packages = package_graph(graph)
    assert circles({a: set(b) for a, b in packages.items()}) == [["generate", "judges"]]
    found = layer_violations(packages, [{"llm"}, {"generate", "judges"}])
    assert found == [
        "generate (layer 1) imports judges (layer 1): "
        "ragjudge.generate.extractive -> ragjudge.judges.items",
        "judges (layer 1) imports generate (layer 1): "
        "ragjudge.judges.ragas -> ragjudge.generate.chat",
    ]
    assert layer_violations(package_graph(graph), [{"llm"}, {"generate"}, {"judges"}]) == [
        "generate (layer 1) imports judges (layer 2): "
        "ragjudge.generate.extractive -> ragjudge.judges.items"
    ]


def test_the_packages_have_no_circle_and_import_only_layers_below():
    packages = package_graph(import_graph())
    named = {name for layer in LAYERS for name in layer}
    assert set(packages) <= named, f"packages in no layer: {sorted(set(packages) - named)}"
    assert sum(len(layer) for layer in LAYERS) == len(named), "a package stands in two layers"
    found = circles({a: set(b) for a, b in packages.items()})
    assert not found, f"package circles: {found}"
    violations = layer_violations(packages, LAYERS)
    assert not violations, "imports running up or across a layer:\n" + "\n".join(violations)
