"""What the package imports is what pyproject.toml declares, and SQLite needs no PostgreSQL
driver.

A module imported by the package but installed only because something else needs it (pydantic
through FastAPI, markupsafe through Jinja2) works until that other package stops needing it:
every third-party import of src/replyguard must name a declared distribution. psycopg is the
`postgres` extra: `pip install replyguard` runs a SQLite workspace without it, which a
subprocess with psycopg hidden proves.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "replyguard"


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = {extra: {_name(r) for r in reqs} for extra, reqs in project["optional-dependencies"].items()}
    return {_name(r) for r in project["dependencies"]}, extras


def third_party_imports() -> dict[str, list[str]]:
    """Top-level module -> where the package imports it (absolute imports only)."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in ("replyguard", "__future__"):
                    continue
                found.setdefault(top, []).append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def undeclared(
    imports: dict[str, list[str]], runtime: set[str], distributions: dict[str, list[str]]
) -> list[str]:
    return [
        f"{module} ({', '.join(where[:2])}) comes from {sorted(distributions.get(module, ['?']))}"
        for module, where in sorted(imports.items())
        if not {_name(d) for d in distributions.get(module, [])} & runtime
    ]


def test_every_third_party_import_is_a_declared_dependency() -> None:
    runtime, extras = declared()
    distributions = importlib.metadata.packages_distributions()
    assert undeclared(third_party_imports(), runtime | extras["postgres"], distributions) == []


def test_the_check_catches_an_import_only_a_dependency_brings() -> None:
    runtime, _extras = declared()
    distributions = importlib.metadata.packages_distributions()
    planted = {"markupsafe": ["planted.py:1"], "pydantic_core": ["planted.py:2"]}
    assert len(undeclared(planted, runtime - {"markupsafe"}, distributions)) == 2


def test_psycopg_is_an_extra_and_the_dev_extra_has_it() -> None:
    runtime, extras = declared()
    assert "psycopg" not in runtime
    assert "psycopg" in extras["postgres"] and "psycopg" in extras["dev"]


#: Run in a fresh interpreter: psycopg cannot be imported at all, as in a SQLite-only install.
HIDDEN = """
import importlib.abc, sys

class NoPsycopg(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "psycopg" or name.startswith(("psycopg.", "psycopg_")):
            raise ModuleNotFoundError(f"No module named {name!r} (hidden by the test)", name=name)
        return None

sys.meta_path.insert(0, NoPsycopg())
sys.argv = ["replyguard", *sys.argv[1:]]
from replyguard.entrypoints.cli.launcher import main
main()
"""


def _replyguard(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-c", HIDDEN, *args],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_a_sqlite_workspace_runs_without_psycopg(tmp_path: Path) -> None:
    examples = ROOT / "examples"
    db = f"sqlite:///{tmp_path / 'rg.db'}"
    steps = [
        ("init",),
        ("campaign", "create", str(examples / "campaign.toml")),
        ("leads", "import", str(examples / "leads.csv"), "--product", "Northwind Reports"),
        ("--now", "2026-12-07T06:00:00Z", "enroll", "--campaign", "Q1 reporting outreach"),
        ("--now", "2026-12-07T16:00:00Z", "--transport", f"maildir:{tmp_path / 'out'}", "worker", "--once"),
        (
            "--now",
            "2026-12-07T16:05:00Z",
            "reply",
            "record",
            "--lead",
            "priya@fernhollow.test",
            "--product",
            "Northwind Reports",
        ),
        ("leads", "show", "priya@fernhollow.test", "--json"),
    ]
    for args in steps:
        done = _replyguard(tmp_path, "--db", db, *args)
        assert done.returncode == 0, (args, done.stderr)
    assert '"reply_state": "replied"' in done.stdout
    # The hiding works: asking for PostgreSQL names the missing extra in one line.
    refused = _replyguard(tmp_path, "--db", "postgresql://nobody@127.0.0.1:1/none", "leads", "list")
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.strip().splitlines() == [
        "error: PostgreSQL needs the psycopg driver: pip install 'replyguard[postgres]'"
    ]


def _pins(lock: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements" / lock).read_text(encoding="utf-8").splitlines():
        requirement = line.split("#", 1)[0].strip()
        if requirement:
            name, _, version = requirement.partition("==")
            pins[_name(name)] = version.strip()
    return pins


def test_the_runtime_lock_is_the_dev_lock_without_the_tools() -> None:
    """`make run` installs requirements/runtime.lock (the demo needs no test tools): every
    declared dependency is in it, at the version the suite runs with (dev.lock)."""
    runtime_pins, dev_pins = _pins("runtime.lock"), _pins("dev.lock")
    runtime, extras = declared()
    assert runtime <= set(runtime_pins), runtime - set(runtime_pins)
    drifted = {name: (v, dev_pins.get(name)) for name, v in runtime_pins.items() if dev_pins.get(name) != v}
    assert not drifted, f"runtime.lock and dev.lock disagree (run `make lock`): {drifted}"
    tools = extras["dev"] - runtime
    assert not tools & set(runtime_pins), f"test tools in the runtime lock: {tools & set(runtime_pins)}"
