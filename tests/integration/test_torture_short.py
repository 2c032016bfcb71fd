"""The short profile of the fault campaign (bench/torture.py), inside `make test`.

Worker processes send through a real SMTP server while replies race them and faults hit every
named point of the send path (SIGKILL, SIGSTOP past the lease, terminated database sessions,
failing and hanging SMTP answers). The checker must count zero broken promises — and, with the
guard deliberately broken, it must count some: a checker that cannot fail proves nothing.

What a run achieves depends on the machine (a loaded laptop sends fewer emails in the same 25
seconds), so nothing here asserts a floor in absolute numbers: the zero counts are zero out of
whatever the run did, and the run must merely have done each kind of thing at least once.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from bench.torture import PROFILES, run

from tests.conftest import pg_admin_url

pytestmark = [pytest.mark.postgres_only, pytest.mark.serial, pytest.mark.long]


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
    assert report["replies"]["committed"] > 0
    assert report["facts"]["accepted_by_oracle"] > 0
    assert sum(n for name, n in faults.items() if name.startswith("SIGKILL")) > 0
    assert sum(n for name, n in report["smtp_transactions"].items() if name != "accept") > 0
    # Several mailboxes' emails went over reused connections (RSET between messages).
    assert report["profile"]["mailboxes"] > 1 and report["profile"]["send_slots"] > 1
    assert report["smtp_sessions"]["rset (a reused connection)"] > 0


def test_the_checker_catches_a_broken_guard() -> None:
    # bench/broken_guard_worker.py: no lead lock, no re-check at send time. Every send stalls
    # a second before DATA, so replies that find a step in flight land in the window the
    # guard should have closed. No other faults: killed and stopped workers would only make
    # fewer sends, and this run is about the checker, not about surviving faults. (The stall
    # must stay under the harness's 2 s transport timeout, which covers the whole send.)
    quiet = {"sigkill_every": 1e9, "sigstop_every": 1e9, "terminate_every": 1e9, "failpoint_share": 0.0}
    # 60 leads: a stalled send is in flight whatever the size; fewer steps left to drain after.
    # On a loaded machine the workers start late: the run goes on (up to 50 s) until a reply
    # has found a send in flight, instead of ending with nothing raced.
    report = _short(
        broken_guard=True, leads=60, duration=10, stall_before_data="1.0@1.0", until_in_flight=1, **quiet
    )
    landed_in_flight = report["replies"]["found_a_step_in_flight"]
    assert landed_in_flight > 0, "no reply raced a send: the run proves nothing"
    assert report["zero_counts"]["sends started after the reply committed"] > 0
    assert report["ok"] is False
