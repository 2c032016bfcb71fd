"""Dependencies point inward: each layer imports only what is below it.

domain ← service_layer ← entrypoints, with adapters beside the service layer and the
composition root (`bootstrap`) above all of them. Read from the source (every `import`,
including the ones inside functions), so a new module cannot quietly reach up a layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "replyguard"

#: What each layer must never import (module prefixes).
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "domain": (
        "replyguard.adapters",
        "replyguard.service_layer",
        "replyguard.entrypoints",
        "replyguard.bootstrap",
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
}


def imports_of(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_above_it(layer: str) -> None:
    offences = [
        f"{path.relative_to(PACKAGE)}:{line} imports {name}"
        for path in sorted((PACKAGE / layer).rglob("*.py"))
        for line, name in imports_of(path)
        if any(name == banned or name.startswith(banned + ".") for banned in FORBIDDEN[layer])
    ]
    assert offences == []


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
