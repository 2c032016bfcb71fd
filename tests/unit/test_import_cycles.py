"""No two modules of the domain or the service layer import each other, directly or round a
circle, counting the imports inside functions (the way cycles used to hide: `ingest` and
`quarantine` imported each other that way). Imports under `if TYPE_CHECKING:` are for the type
checker only and do not count. The rooms of the service layer and what each may use are in
docs/architecture.md."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tests.unit.test_layers import PACKAGE, module_name

CHECKED = ("domain", "service_layer")


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in _runtime_imports_of(child))
            continue
        yield from _runtime_imports_of(node)


def _runtime_imports_of(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    else:
        yield from _runtime_imports(node)


def graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """module -> the modules of `sources` it imports. `from package import name` is an import
    of the submodule when `name` is one, else of the package."""
    edges: dict[str, set[str]] = {}
    for name, text in sources.items():
        targets = edges.setdefault(name, set())
        for node in _runtime_imports(ast.parse(text)):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names if alias.name in sources}
                continue
            module = node.module or ""
            for alias in node.names:
                if f"{module}.{alias.name}" in sources:
                    targets.add(f"{module}.{alias.name}")
                elif module in sources:
                    targets.add(module)
        targets.discard(name)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _sources() -> dict[str, str]:
    return {
        module_name(path): path.read_text(encoding="utf-8")
        for room in CHECKED
        for path in sorted((PACKAGE / room).rglob("*.py"))
    }


def test_no_module_of_the_domain_or_the_service_layer_is_in_an_import_cycle() -> None:
    assert cycles(graph(_sources())) == []


def test_a_cycle_through_a_function_local_import_is_found() -> None:
    """The planted cycle: the shape ingest and quarantine had."""
    sources = _sources()
    sources["replyguard.service_layer.inbound.ingest"] += (
        "\n\ndef later():\n    from replyguard.service_layer.inbound.quarantine import retry\n"
    )
    assert ["replyguard.service_layer.inbound.ingest", "replyguard.service_layer.inbound.quarantine"] in (
        cycles(graph(sources))
    )


def test_an_import_for_the_type_checker_only_is_no_cycle() -> None:
    sources = {
        "a": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from b import B\n",
        "b": "from a import A\n",
    }
    assert cycles(graph(sources)) == []
    sources["a"] += "from b import C\n"
    assert cycles(graph(sources)) == [["a", "b"]]
