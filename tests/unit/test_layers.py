"""Dependencies point inward: each layer imports only what is below it.

domain ← service_layer ← entrypoints, with adapters beside the service layer, `settings`
below everything that reads it, and the composition root (`bootstrap`) above the service
layer and the adapters (the entry points call it). Read from the source: every `import`,
including the ones inside functions, `from replyguard import service_layer`, relative imports
and `importlib.import_module("...")`; an import whose target the test cannot read (a computed
name) is an offence of its own. Every module of the package belongs to exactly one room below,
so a module added outside them fails until someone says what it may import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "replyguard"

#: What each room must never import (module prefixes). A room is a folder of the package or
#: one of its top-level modules.
_ABOVE_DOMAIN = ("replyguard.adapters", "replyguard.service_layer", "replyguard.entrypoints")
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "domain": (
        *_ABOVE_DOMAIN,
        "replyguard.bootstrap",
        "replyguard.settings",
        "sqlalchemy",
        "fastapi",
        "starlette",
        "smtplib",
        "imaplib",
        "imapclient",
        "aiosmtpd",
        "httpx",
    ),
    "adapters": ("replyguard.service_layer", "replyguard.entrypoints", "replyguard.bootstrap"),
    "service_layer": ("replyguard.entrypoints", "replyguard.bootstrap", "fastapi", "starlette", "typer"),
    "migrations": ("replyguard.service_layer", "replyguard.entrypoints", "replyguard.bootstrap"),
    "settings": (*_ABOVE_DOMAIN, "replyguard.bootstrap"),
    "bootstrap": ("replyguard.entrypoints",),
    "entrypoints": (),
    "__init__": ("replyguard.",),  # `import replyguard` stays light: the version, nothing else
    "__main__": ("replyguard.adapters", "replyguard.service_layer", "replyguard.bootstrap"),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def room_of(path: Path) -> str | None:
    """The room of a module: its folder under the package, or its own name at the top."""
    first = path.relative_to(PACKAGE).parts[0]
    name = first.removesuffix(".py")
    return name if name in FORBIDDEN else None


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    """The module an ImportFrom names, with a relative one resolved against `path`."""
    if node.level == 0:
        return node.module or ""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package.pop()  # a module's package is its parent; a package's is itself
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


_DYNAMIC = {("importlib", "import_module"), ("", "__import__"), ("", "import_module")}


def imports_of(path: Path, source: str | None = None) -> list[tuple[int, str]]:
    """(line, module) for every import in the file; `<dynamic>` for one the test cannot read."""
    text = path.read_text(encoding="utf-8") if source is None else source
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(path, node)
            found.append((node.lineno, module))
            # `from replyguard import service_layer` imports the module replyguard.service_layer.
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names if alias.name != "*"]
        elif isinstance(node, ast.Call):
            func = node.func
            owner = (
                func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
            )
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            if (owner, name) in _DYNAMIC:
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    found.append((node.lineno, first.value))
                else:
                    found.append((node.lineno, "<dynamic>"))
    return found


def offences_in(path: Path, source: str | None = None) -> list[str]:
    room = room_of(path)
    where = path.relative_to(PACKAGE)
    if room is None:
        return [f"{where} is in no room of the layer map (tests/unit/test_layers.py FORBIDDEN)"]
    banned = FORBIDDEN[room]
    return [
        f"{where}:{line} imports {name}"
        for line, name in imports_of(path, source)
        if name == "<dynamic>"
        or any(name == b.rstrip(".") or name.startswith(b if b.endswith(".") else b + ".") for b in banned)
    ]


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "versions" not in p.relative_to(PACKAGE).parts)


@pytest.mark.parametrize("room", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_above_it(room: str) -> None:
    offences = [o for path in _modules() if room_of(path) == room for o in offences_in(path)]
    assert offences == []


def test_every_module_is_in_a_room() -> None:
    assert [str(p.relative_to(PACKAGE)) for p in _modules() if room_of(p) is None] == []


#: Violations planted in a module of each room, each of which the reader above must report.
PLANTED = [
    ("service_layer/x.py", "from replyguard import entrypoints\n"),
    ("service_layer/x.py", "from replyguard.entrypoints.cli import app\n"),
    ("service_layer/x.py", "def f():\n    import replyguard.bootstrap\n"),
    ("service_layer/sub/x.py", "from ...entrypoints import web\n"),
    ("service_layer/x.py", "from ..bootstrap import App\n"),
    ("service_layer/x.py", "import importlib\nimportlib.import_module('replyguard.entrypoints.web')\n"),
    ("service_layer/x.py", "__import__('replyguard.bootstrap')\n"),
    ("service_layer/x.py", "import importlib\nimportlib.import_module('replyguard.' + 'entrypoints')\n"),
    ("domain/x.py", "from . import states\nfrom .. import settings\n"),
    ("domain/x.py", "from sqlalchemy.orm import Session\n"),
    ("adapters/db/x.py", "from ...service_layer.uow import UnitOfWork\n"),
    ("settings.py", "from replyguard.adapters.db import engine\n"),
    ("bootstrap.py", "from replyguard.entrypoints.web import install\n"),
    ("orphan.py", "import os\n"),
]


@pytest.mark.parametrize(("where", "source"), PLANTED)
def test_the_reader_catches_a_planted_violation(where: str, source: str) -> None:
    assert offences_in(PACKAGE / where, source) != []


def test_the_reader_lets_allowed_imports_pass() -> None:
    allowed = "from . import uow\nfrom ..domain import states\nfrom replyguard import domain\n"
    assert offences_in(PACKAGE / "service_layer" / "x.py", allowed) == []


#: The command line calls services; it builds no query and opens no session of its own.
#: (`sqlalchemy.exc` for the errors it reports and `sqlalchemy.engine` for reading a URL are fine.)
CLI_NEVER = ("sqlalchemy", "sqlalchemy.orm", "sqlalchemy.sql", "replyguard.adapters.db.models")


def test_the_cli_does_not_query_the_database() -> None:
    offences = []
    for path in sorted((PACKAGE / "entrypoints" / "cli").rglob("*.py")):
        offences += [
            f"{path.name}:{line} imports {name}"
            for line, name in imports_of(path)
            if name in CLI_NEVER or name.startswith(("sqlalchemy.orm.", "sqlalchemy.sql."))
        ]
        offences += [
            f"{path.name}:{node.lineno} reaches into a session"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Attribute) and node.attr == "session"
        ]
    assert offences == []
