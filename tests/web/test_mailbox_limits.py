"""A mailbox's sending limits from the browser and the API (issue 24, item 5): the daily cap,
emails a minute and SMTP connections at once, which only the CLI could set. A limit left
empty (page) or 0 (API) is removed; a bad value changes nothing and says why; another
workspace's mailbox is not found. The worker reads the stored values at the point of send."""

from __future__ import annotations

from sqlalchemy import select

from replyguard.adapters.db import models as m
from tests.web.conftest import Site
from tests.web.rescue import live_workspace
from tests.web.support import api_client, signed_in


def _stored(site: Site, mailbox_id: int) -> tuple[int, int | None, int | None]:
    with site.alpha.app.engine.connect() as conn:
        row = conn.execute(
            select(m.Mailbox.daily_cap, m.Mailbox.per_minute, m.Mailbox.max_connections).where(
                m.Mailbox.id == mailbox_id
            )
        ).one()
    return row.daily_cap, row.per_minute, row.max_connections


def test_the_api_sets_and_removes_limits_and_refuses_bad_values(site: Site) -> None:
    live_workspace(site.alpha.app)
    with api_client(site.base, site.alpha.token) as api:
        mailbox = api.get("/api/v1/mailboxes").json()[0]
        assert (mailbox["per_minute"], mailbox["max_connections"]) == (None, None)
        path = f"/api/v1/mailboxes/{mailbox['id']}"
        changed = api.patch(path, json={"per_minute": 30, "max_connections": 2, "daily_cap": 40})
        assert changed.status_code == 200, changed.text
        shown = changed.json()
        assert (shown["daily_cap"], shown["per_minute"], shown["max_connections"]) == (40, 30, 2)
        assert _stored(site, mailbox["id"]) == (40, 30, 2)

        removed = api.patch(path, json={"per_minute": 0})
        assert removed.status_code == 200 and removed.json()["per_minute"] is None
        assert removed.json()["max_connections"] == 2  # what is left out stays

        bad_values = (
            {"daily_cap": 0},
            {"per_minute": -1},
            {"per_minute": 10**30},
            {"per_minute": "twelve"},
            {"timezone": "Mars/Olympus"},
            {"timezone": "Europe/Paris\r\nX-Evil: 1"},
            {"from_name": "Dana\r\nBcc: all@example.test"},
            {"cap": 3},
        )
        for bad in bad_values:
            refused = api.patch(path, json=bad)
            assert refused.status_code == 422, (bad, refused.text)
        assert "Mars/Olympus" in api.patch(path, json={"timezone": "Mars/Olympus"}).text
        assert _stored(site, mailbox["id"]) == (40, None, 2)
    with api_client(site.base, site.bravo.token) as other:
        assert other.patch(path, json={"per_minute": 1}).status_code == 404
    assert _stored(site, mailbox["id"]) == (40, None, 2)


def test_the_page_shows_and_changes_limits(site: Site) -> None:
    live_workspace(site.alpha.app)
    with site.alpha.app.engine.connect() as conn:
        mailbox_id = conn.execute(select(m.Mailbox.id)).scalars().first()
    assert mailbox_id is not None
    with signed_in(site.base, site.alpha.email) as (page, csrf):
        form = {"csrf_token": csrf, "daily_cap": "25", "per_minute": "12", "max_connections": "1"}
        saved = page.post(f"/mailboxes/{mailbox_id}/limits", data=form)
        assert saved.status_code == 303, saved.text
        html = page.get("/mailboxes").text
        assert "25 a day, 12 a minute, 1 connection at once" in html
        assert _stored(site, mailbox_id) == (25, 12, 1)

        refused = page.post(f"/mailboxes/{mailbox_id}/limits", data=form | {"per_minute": "ten"})
        assert refused.status_code == 400
        assert "Limits not saved: emails a minute must be a whole number, got &#39;ten&#39;" in refused.text
        assert _stored(site, mailbox_id) == (25, 12, 1)
        # Odd input: digits str.isdigit accepts but int() does not, non-ASCII digits, a number
        # too large for any limit, a negative one: each said in words, nothing changed.
        for odd in ("²", "١٢", "99999999999999999999999", "-3", "3.5", "1e3", " "):
            refused = page.post(f"/mailboxes/{mailbox_id}/limits", data=form | {"per_minute": odd})
            if odd.strip():
                assert refused.status_code == 400, (odd, refused.status_code)
                assert "invalid literal" not in refused.text
                # Longer than the field allows: refused by the form's bound, before our words.
                assert "Limits not saved: " in refused.text or len(odd) > 20, odd
            else:  # blank: no limit, as an empty field
                assert refused.status_code == 303
                page.post(f"/mailboxes/{mailbox_id}/limits", data=form)
        assert _stored(site, mailbox_id) == (25, 12, 1)

        cleared = page.post(
            f"/mailboxes/{mailbox_id}/limits", data=form | {"per_minute": "", "max_connections": ""}
        )
        assert cleared.status_code == 303
        assert _stored(site, mailbox_id) == (25, None, None)
        assert "a minute" not in page.get("/mailboxes").text.split('id="mailboxes"')[1].split("<details")[0]
