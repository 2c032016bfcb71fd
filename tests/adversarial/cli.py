"""The real command line, in process, against a test's database and clock."""

from __future__ import annotations

from click.testing import Result
from typer.testing import CliRunner

from replyguard.bootstrap import App
from replyguard.entrypoints.cli.app import app as cli


def run_cli(app: App, *args: str) -> Result:
    url = app.engine.url.render_as_string(hide_password=False)
    return CliRunner().invoke(
        cli,
        ["--db", url, "--now", app.clock.now().isoformat(), *args],
        env={"COLUMNS": "200"},
        catch_exceptions=False,
    )
