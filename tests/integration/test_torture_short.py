"""The short profile of the fault campaign (bench/torture.py), inside `make test`.

Worker processes send through a real SMTP server while replies race them and faults hit every
named point of the send path (SIGKILL, SIGSTOP past the lease, terminated database sessions,
failing and hanging SMTP answers). The checker must count zero broken promises — and, with the
guard deliberately broken, it must count some: a checker that cannot fail proves nothing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from bench.torture import PROFILES, run

from tests.conftest import pg_admin_url

pytestmark = [pytest.mark.postgres_only, pytest.mark.serial]


def _short(**changes: Any) -> dict[str, Any]:
    admin = pg_admin_url()
    if admin is None:
        pytest.skip("PostgreSQL not reachable")
    return run(replace(PROFILES["short"], **changes), seed=11, admin_url=admin)


def test_the_short_fault_campaign_breaks_no_promise() -> None:
    report = _short()
    assert report["zero_counts"] == dict.fromkeys(report["zero_counts"], 0), report["examples"]
    # The campaign really ran: replies raced sends, workers died, the server misbehaved.
    faults = report["faults"]
    assert report["replies"]["committed"] >= 40
    assert report["facts"]["accepted_by_oracle"] >= 150
    assert sum(n for name, n in faults.items() if name.startswith("SIGKILL")) >= 3
    assert faults.get("pg_terminate_backend of a worker session", 0) >= 1
    assert sum(n for name, n in report["smtp_transactions"].items() if name != "accept") >= 5


def test_the_checker_catches_a_broken_guard() -> None:
    # REPLYGUARD_UNSAFE_SKIP_RECHECK=1 in the workers: no lead lock, no re-check at send time.
    report = _short(unsafe_skip_recheck=True)
    assert report["zero_counts"]["sends started after the reply committed"] > 0
    assert report["ok"] is False
