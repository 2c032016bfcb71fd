"""The REST API end to end: a campaign from TOML, a CSV import with a bad row, enrolling,
approving, the lead's timeline, inbound messages and tokens — over real HTTP, on SQLite and
PostgreSQL."""

from __future__ import annotations

import httpx

from tests.web.conftest import Site
from tests.web.support import api_client

CAMPAIGN = """
product = "Atlas"
[campaign]
name = "Atlas launch"
mailbox = "sam@atlas.test"
from_name = "Sam"
owner = "sam@atlas.test"
timezone = "UTC"
send_window = { days = ["mon", "tue", "wed", "thu", "fri"], start = "09:00", end = "17:00" }
daily_cap = 50
[[campaign.steps]]
wait = "0d"
subject = "Hello {{ first_name }}"
body = "Hi {{ first_name }}."
approval = true
[[campaign.steps]]
wait = "2d"
body = "Following up."
"""
CSV = "email,first_name,company\nada@one.test,Ada,One\nnot-an-email,Bad,Row\ngrace@two.test,Grace,Two 100%\n"


def test_a_campaign_from_toml_to_an_approved_step_on_the_lead_timeline(site: Site) -> None:
    with api_client(site.base, site.alpha.token) as api:
        created = api.post("/api/v1/campaigns", json={"toml": CAMPAIGN})
        assert created.status_code == 201 and created.json()["created"] is True
        again = api.post("/api/v1/campaigns", json={"toml": CAMPAIGN})
        assert again.status_code == 201 and again.json()["created"] is False
        campaign_id = created.json()["campaign_id"]

        imported = api.post(
            "/api/v1/leads/import",
            data={"product": "Atlas", "create_product": "true"},
            files={"file": ("leads.csv", CSV, "text/csv")},
        )
        assert imported.status_code == 200
        assert imported.json()["created"] == 2
        assert imported.json()["errors"] == [
            {"line": 3, "message": "not a valid email address: 'not-an-email'"}
        ]

        enrolled = api.post(f"/api/v1/campaigns/{campaign_id}/enroll", json={})
        assert enrolled.json() == {"enrolled": 2, "already": 0, "skipped": []}
        detail = api.get(f"/api/v1/campaigns/{campaign_id}").json()
        assert detail["queue"]["awaiting_approval"] == 2 and detail["queue"]["scheduled"] == 2

        waiting = api.get(
            f"/api/v1/campaigns/{campaign_id}/queue", params={"state": "awaiting_approval"}
        ).json()
        ada = next(r for r in waiting["items"] if r["to_address"] == "ada@one.test")
        approved = api.post(f"/api/v1/campaigns/{campaign_id}/approve", json={"step_ids": [ada["step_id"]]})
        assert approved.json() == {"approved": 1}
        detail = api.get(f"/api/v1/campaigns/{campaign_id}").json()
        assert detail["queue"]["awaiting_approval"] == 1 and detail["queue"]["scheduled"] == 3

        timeline = api.get(f"/api/v1/leads/{ada['lead_id']}/timeline").json()
        approval = next(e for e in timeline if e["kind"] == "step_approved")
        assert approval["actor"] == "api token tests default" and approval["step_position"] == 1
        assert [e["kind"] for e in timeline][-1] == "enrolled"  # newest first

        for path in ("sends-per-day", "activity", "cancel-reasons"):
            assert api.get(f"/api/v1/campaigns/{campaign_id}/{path}").status_code == 200


def test_a_campaign_file_with_an_error_is_refused_with_the_field_named(site: Site) -> None:
    with api_client(site.base, site.alpha.token) as api:
        response = api.post("/api/v1/campaigns", json={"toml": CAMPAIGN.replace('"2d"', '"two days"')})
        assert response.status_code == 422
        assert response.json()["detail"].startswith("campaign.steps[2].wait:")
        assert api.get("/api/v1/campaigns").json() == []


def test_lead_search_takes_percent_and_underscore_literally(site: Site) -> None:
    with api_client(site.base, site.alpha.token) as api:
        api.post(
            "/api/v1/leads/import",
            data={"product": "Atlas", "create_product": "true"},
            files={"file": ("l.csv", CSV, "text/csv")},
        )

        def emails(q: str) -> list[str]:
            return sorted(r["email"] for r in api.get("/api/v1/leads", params={"q": q}).json()["items"])

        assert emails("") == ["ada@one.test", "grace@two.test"]
        assert emails("GRACE") == ["grace@two.test"]
        assert emails("100%") == ["grace@two.test"]
        assert emails("%") == ["grace@two.test"]  # only the company that has a % in it
        assert emails("_") == []


def test_an_inbound_message_is_listed_and_its_html_comes_back_sanitised(site: Site) -> None:
    from replyguard.service_layer.inbound.ingest import ingest_raw

    raw = (
        b"From: Someone <someone@elsewhere.test>\r\nTo: sam@atlas.test\r\nSubject: Hi there\r\n"
        b"Message-ID: <m1@elsewhere.test>\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: text/html; charset=utf-8\r\n\r\n"
        b'<p onclick="steal()">Hello<script>alert(1)</script><img src="https://tracker.test/p.gif"></p>\r\n'
    )
    stored = ingest_raw(site.alpha.app, raw, "file")
    with api_client(site.base, site.alpha.token) as api:
        listed = api.get("/api/v1/inbound", params={"status": "unmatched"}).json()["items"]
        assert [(m["id"], m["subject"], m["sender"]) for m in listed] == [
            (stored.inbound_id, "Hi there", "Someone <someone@elsewhere.test>")
        ]
        shown = api.get(f"/api/v1/inbound/{stored.inbound_id}").json()
        loaded = api.get(f"/api/v1/inbound/{stored.inbound_id}", params={"remote_images": True}).json()
    assert shown["html"].strip() == "<p>Hello<img></p>" and shown["blocked_images"] == 1
    assert loaded["html"].strip() == '<p>Hello<img src="https://tracker.test/p.gif"></p>'


def test_a_token_can_make_and_revoke_tokens_and_a_revoked_one_stops_working(site: Site) -> None:
    with api_client(site.base, site.alpha.token) as api:
        made = api.post("/api/v1/tokens", json={"name": "ci", "scope": "write"})
        assert made.status_code == 201
        secret, token_id = made.json()["secret"], made.json()["token"]["id"]
        assert all("secret" not in t for t in api.get("/api/v1/tokens").json())
    with api_client(site.base, secret) as ci:
        assert ci.get("/api/v1/me").json()["token_name"] == "ci"
        assert ci.post(f"/api/v1/tokens/{token_id}/revoke").json()["revoked_at"] is not None
        assert ci.get("/api/v1/me").status_code == 401
    with httpx.Client(timeout=60, base_url=site.base) as anonymous:
        assert anonymous.get("/api/v1/me").status_code == 401
