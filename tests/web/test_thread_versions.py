"""Issue 20 through the HTTP API: the thread's ETag is its version; a decision or an answer
names it (If-Match or `version`) and is refused with 409 and what changed if the thread moved;
only the actions the thread offers are taken (409 with why)."""

from __future__ import annotations

from typing import Any

from tests.support.scenario import lead_state
from tests.web.conftest import Site
from tests.web.rescue import ADA, ATLAS, GRACE, live_workspace
from tests.web.support import api_client


def test_a_decision_on_a_stale_etag_is_409_with_what_changed(site: Site) -> None:
    live = live_workspace(site.alpha.app)
    live.reply(GRACE, "Please send me the pricing next week.")
    thread = live.thread_of(GRACE)
    with api_client(site.base, site.alpha.token) as api:
        shown = api.get(f"/api/v1/threads/{thread}")
        etag = shown.headers["ETag"]
        assert etag == f'"{shown.json()["version"]}"'
        missing = api.post(f"/api/v1/threads/{thread}/decisions", json={"action": "resume"})
        assert missing.status_code == 428
        live.reply(GRACE, "We signed with a competitor; do not follow up.", name="Grace Hopper")
        stale = api.post(
            f"/api/v1/threads/{thread}/decisions", json={"action": "resume"}, headers={"If-Match": etag}
        )
        assert stale.status_code == 409, stale.text
        detail = stale.json()["detail"]
        assert detail["error"] == "version_changed" and detail["seen"] < detail["version"]
        assert any("do not follow up" in c["summary"] for c in detail["changes"])
        assert lead_state(live.app, GRACE, ATLAS) == "replied"
        fresh = api.get(f"/api/v1/threads/{thread}").headers["ETag"]
        stopped = api.post(
            f"/api/v1/threads/{thread}/decisions", json={"action": "stop"}, headers={"If-Match": fresh}
        )
        assert stopped.status_code == 200 and stopped.json()["version"] > int(fresh.strip('"'))
        # After a stop, resume is not offered: refused with why, whatever the version says.
        version = stopped.json()["version"]
        again = api.post(f"/api/v1/threads/{thread}/decisions", json={"action": "resume", "version": version})
        assert again.status_code == 409 and "restart" in again.json()["detail"]
        assert "resume" not in api.get(f"/api/v1/threads/{thread}").json()["actions"]
    assert lead_state(live.app, GRACE, ATLAS) == "stopped"


def test_a_second_answer_to_the_same_version_is_409_unless_on_purpose(site: Site) -> None:
    live = live_workspace(site.alpha.app)
    live.reply(ADA, "How much is it for a team of 12?")
    thread = live.thread_of(ADA)
    with api_client(site.base, site.alpha.token) as api:
        etag = api.get(f"/api/v1/threads/{thread}").headers["ETag"]
        assert api.post(f"/api/v1/threads/{thread}/send", json={"body": "40 EUR."}).status_code == 428
        first = api.post(
            f"/api/v1/threads/{thread}/send", json={"body": "40 EUR."}, headers={"If-Match": etag}
        )
        assert first.status_code == 200 and first.json()["state"] == "sent"
        second = api.post(
            f"/api/v1/threads/{thread}/send",
            json={"body": "It is 40 EUR a seat."},
            headers={"If-Match": etag},
        )
        assert second.status_code == 409 and "answered at" in str(second.json()["detail"])
        now = api.get(f"/api/v1/threads/{thread}")
        assert now.json()["waiting_on_them"] and "send_reply" not in now.json()["actions"]
        another = api.post(
            f"/api/v1/threads/{thread}/send",
            json={"body": "And the invoice.", "another": True},
            headers={"If-Match": now.headers["ETag"]},
        )
        assert another.status_code == 200, another.text


def test_a_restart_is_confirmed_on_its_own(site: Site) -> None:
    live = live_workspace(site.alpha.app)
    live.reply(GRACE, "Not now, thanks.")
    thread = live.thread_of(GRACE)
    with api_client(site.base, site.alpha.token) as api:

        def decide(body: dict[str, object]) -> Any:
            etag = api.get(f"/api/v1/threads/{thread}").headers["ETag"]
            return api.post(f"/api/v1/threads/{thread}/decisions", json=body, headers={"If-Match": etag})

        assert decide({"action": "stop"}).status_code == 200
        unconfirmed = decide({"action": "restart"})
        assert unconfirmed.status_code == 409 and "confirm" in unconfirmed.json()["detail"]
        assert lead_state(live.app, GRACE, ATLAS) == "stopped"
        restarted = decide({"action": "restart", "confirm": True})
        assert restarted.status_code == 200 and restarted.json()["message"].startswith("restarted")
    assert lead_state(live.app, GRACE, ATLAS) == "active"
