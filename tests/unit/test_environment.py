"""Only the composition root reads the environment: `settings.py` parses every variable and
`bootstrap.py` takes what it parsed. Any other module of the package that reads the
environment — `os.environ`, `os.getenv`, `os.environb`, `getpass.getuser()` (which reads
LOGNAME and USER), Typer's `envvar=` on an option — would let two processes, or two parts of
one, disagree about a setting. Read from the source with the AST, so a comment or a string
naming a variable is fine and any spelling of the access is not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "replyguard"
ALLOWED = {"settings.py", "bootstrap.py"}
_OS_READS = {"environ", "environb", "getenv", "getenvb"}


def environment_reads(source: str) -> list[int]:
    """Lines of `source` that read the process environment."""
    found: list[int] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in {("os", a) for a in _OS_READS} | {("getpass", "getuser")}:
                found.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module in ("os", "getpass"):
            if any(alias.name in _OS_READS | {"getuser"} for alias in node.names):
                found.append(node.lineno)
        elif isinstance(node, ast.keyword) and node.arg in ("envvar", "auto_envvar_prefix"):
            found.append(node.value.lineno)
    return found


def test_only_settings_and_bootstrap_read_the_environment() -> None:
    offences = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if str(path.relative_to(PACKAGE)) not in ALLOWED and "versions" not in path.parts
        for line in environment_reads(path.read_text(encoding="utf-8"))
    ]
    assert offences == []


@pytest.mark.parametrize(
    "source",
    [
        "import os\nurl = os.environ.get('REPLYGUARD_PUBLIC_URL')\n",
        "import os\nurl = os.environ['REPLYGUARD_PUBLIC_URL']\n",
        "import os\nurl = os.getenv('REPLYGUARD_PUBLIC_URL')\n",
        "from os import environ\nurl = environ.get('X')\n",
        "from os import getenv as g\n",
        "import getpass\nwho = getpass.getuser()\n",
        "import typer\nopt = typer.Option('--imap', envvar='REPLYGUARD_IMAP_URL')\n",
        "def f():\n    import os\n    return dict(os.environ)\n",
    ],
)
def test_the_check_catches_a_planted_read(source: str) -> None:
    assert environment_reads(source) != []


def test_a_variable_named_in_text_is_not_a_read() -> None:
    assert environment_reads('"""Set REPLYGUARD_PUBLIC_URL (os.environ)."""\nhelp = "env X"\n') == []
