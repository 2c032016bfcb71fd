"""One composition root: what the web writes, it writes with the process's own settings, and a
process on a simulated clock says so.

The web opened its units of work without settings (`Scoped(engine, clock)`), and a unit of work
fell back to `Settings()`: with REPLYGUARD_PUBLIC_URL set, a command line write linked to it but
a web write linked to http://localhost:8000 — a thread opened by a failed render during a web
lead import sent its owner a link nobody could open.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.entrypoints.http import create_app
from replyguard.service_layer.sending.worker import Worker
from replyguard.settings import Settings
from tests.support.cli import clean_env, run_cli
from tests.support.scenario import csv_of, enroll_all, lead_state
from tests.support.sequences import RecordingTransport, campaign_file, notices, setup, steps_toml
from tests.web.support import api_client, serving, tenant

PUBLIC = "https://rg.example.com"


def test_a_web_import_links_its_notice_to_the_public_url(app: App, clock: FixedClock) -> None:
    app.settings = Settings(public_url=PUBLIC)  # what REPLYGUARD_PUBLIC_URL gives the process
    steps = steps_toml(
        ("0d", "Hello {{ first_name }}", "Hi.", False), ("1d", None, "{{ first_name * 2000 }}", False)
    )
    setup(app, campaign_file("C", steps=steps), [{"email": "bo@corp.test", "first_name": "Bo"}])
    enroll_all(app, "C")
    clock.advance(timedelta(hours=4))
    Worker(app, RecordingTransport(clock)).run_once()
    ann = tenant(app, app.workspace, "ann@corp.test")
    # The corrected file no longer renders step 2: the lead is held and her owner told.
    corrected = csv_of([{"email": "bo@corp.test", "first_name": "W" * 150}])
    with serving(create_app(app)) as base, api_client(base, ann.token) as api:
        imported = api.post(
            "/api/v1/leads/import", data={"product": "P"}, files={"file": ("l.csv", corrected, "text/csv")}
        )
    assert imported.status_code == 200, imported.text
    assert lead_state(app, "bo@corp.test", "P") == "held"
    [told] = notices(app, "render_failed")
    assert told.payload["thread"]["url"].startswith(f"{PUBLIC}/threads/")


def test_a_one_shot_command_says_when_its_clock_came_from_the_environment(app: App, tmp_path: Path) -> None:
    url = app.engine.url.render_as_string(hide_password=False)
    typed = run_cli(
        ["--db", url, "--now", "2026-12-07T09:00:00Z", "campaign", "list"], env=clean_env(), cwd=tmp_path
    )
    assert typed.returncode == 0 and typed.stderr == ""  # typed on its own line: the person knows
    inherited = run_cli(
        ["--db", url, "campaign", "list"], env=clean_env(REPLYGUARD_NOW="2026-12-07T09:00:00Z"), cwd=tmp_path
    )
    assert inherited.returncode == 0
    assert inherited.stderr.splitlines() == [
        "warning: simulated clock (REPLYGUARD_NOW): it is 2026-12-07T09:00:00+00:00 here, not the "
        "real time; every time this process records comes from it"
    ]
    real = run_cli(["--db", url, "campaign", "list"], env=clean_env(), cwd=tmp_path)
    assert real.returncode == 0 and real.stderr == ""
