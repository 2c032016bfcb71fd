"""`replyguard --help` stays fast (issue 25): what it imports, and what Typer evaluates on every
start. Timing it here would be flaky on a shared machine; these check the causes instead."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import typer

from replyguard.entrypoints.cli.app import app

#: Prints the help, then the modules it loaded (on stderr, one a line).
PROBE = """
import sys
sys.argv = ["replyguard", "--help"]
from replyguard.entrypoints.cli.launcher import main
try:
    main()
except SystemExit:
    pass
sys.stderr.write("\\n".join(sorted(sys.modules)))
"""

#: What only a command that runs needs: the layers under the CLI, the database, the web stack.
HEAVY = ("replyguard.bootstrap", "replyguard.service_layer", "replyguard.domain", "replyguard.adapters")
HEAVY += ("sqlalchemy", "alembic", "fastapi", "starlette", "uvicorn", "pydantic", "psycopg")


def test_help_imports_no_layer_under_the_cli_nor_the_database_or_web_stack() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    assert "Usage: replyguard" in done.stdout
    loaded = done.stderr.splitlines()
    assert [name for name in loaded if name.startswith(HEAVY)] == []


def _callbacks(instance: typer.Typer) -> Iterator[Callable[..., Any]]:
    if instance.registered_callback is not None and instance.registered_callback.callback is not None:
        yield instance.registered_callback.callback
    for command in instance.registered_commands:
        assert command.callback is not None
        yield command.callback
    for group in instance.registered_groups:
        assert group.typer_instance is not None
        yield from _callbacks(group.typer_instance)


def test_typer_reads_no_string_annotation() -> None:
    """A module with `from __future__ import annotations` leaves its commands' annotations as
    strings, which Typer compiles and evaluates four times per command on every start (app.py)."""
    callbacks = list(_callbacks(app))
    assert len(callbacks) > 50  # every command, the groups' callbacks too
    stringly = [
        f"{f.__module__}.{f.__qualname__}"
        for f in callbacks
        if any(isinstance(a, str) for a in f.__annotations__.values())
    ]
    assert stringly == []
