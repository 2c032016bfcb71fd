"""Campaign actions over HTTP, on SQLite and PostgreSQL: a test send goes to the signed-in
person and to no one a form names; archiving needs its box ticked; the API pauses, resumes and
archives; per-step counts; an existing mailbox's settings are shown, used, and every
disagreement is said at once in the web's words; the form takes as many steps as needed."""

from __future__ import annotations

from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.adapters.transports.smtp import SmtpTransport
from replyguard.domain.access import Role
from replyguard.service_layer.workspace.accounts import add_user
from replyguard.service_layer.workspace.campaigns import find_campaign
from replyguard.service_layer.workspace.leads import find_lead
from tests.support.smtp_servers import RecordingSmtpServer
from tests.web.conftest import Site
from tests.web.rescue import ADA, ATLAS, ATLAS_CAMPAIGN, GRACE, campaign, live_workspace
from tests.web.support import PASSWORD, api_client, signed_in


def _ids(site: Site) -> tuple[int, int]:
    with site.alpha.app.uow() as uow:
        return find_campaign(uow, ATLAS_CAMPAIGN).id, find_lead(uow, ADA, ATLAS).id


def _status(site: Site) -> str:
    with site.alpha.app.uow() as uow:
        return find_campaign(uow, ATLAS_CAMPAIGN).status


def test_a_test_send_goes_to_the_signed_in_person_whatever_the_form_says(site: Site) -> None:
    app = site.alpha.app
    live_workspace(app)
    campaign_id, ada = _ids(site)
    with app.uow() as uow:  # a colleague whose own address is a lead's
        add_user(uow, GRACE, PASSWORD, name="Grace", role=Role.ADMIN)
        uow.commit()
    forged = {"to": ADA, "email": ADA, "recipient": ADA, "rcpt": ADA, "to_address": ADA, "cc": ADA}
    with RecordingSmtpServer() as server:
        app.use_transport(SmtpTransport(server.url(timeout=10)))
        with signed_in(site.base, site.alpha.email) as (page, csrf):
            sent = page.post(
                f"/campaigns/{campaign_id}/test-send",
                data={"position": "1", "lead": str(ada), "csrf_token": csrf, **forged},
            )
            assert sent.status_code == 303
            page.get(f"/campaigns/{campaign_id}")  # the flash is said once, on the next page
        with signed_in(site.base, GRACE) as (page, csrf):
            refused = page.post(
                f"/campaigns/{campaign_id}/test-send", data={"position": "1", "csrf_token": csrf}
            )
            assert refused.status_code == 303
            shown = page.get(f"/campaigns/{campaign_id}").text
            assert "a test is never sent to a lead" in shown
        with signed_in(site.base, site.bravo.email) as (page, csrf):  # another workspace
            form = {"position": "1", "csrf_token": csrf}
            other = page.post(f"/campaigns/{campaign_id}/test-send", data=form)
            assert other.status_code == 404
        [only] = server.accepted()
    assert only.rcpt_tos == (site.alpha.email,)
    message = only.message()
    assert message["To"] == site.alpha.email and message["Cc"] is None
    assert message["Subject"].startswith("[TEST] A question about Analytical Engines")
    with app.uow() as uow:
        events = uow.session.scalars(select(m.Event.data).where(m.Event.kind == "campaign_test_sent")).all()
        sent_steps = uow.session.scalar(select(func.count()).where(m.Step.state == "sent"))
    assert [e["to"] for e in events] == [site.alpha.email]
    assert sent_steps == 4  # the live workspace's first emails: no test became a step's send


def test_archive_needs_its_box_and_the_api_pauses_resumes_and_archives(site: Site) -> None:
    live_workspace(site.alpha.app)
    campaign_id, _ = _ids(site)
    with signed_in(site.base, site.alpha.email) as (page, csrf):
        unticked = page.post(f"/campaigns/{campaign_id}/archive", data={"csrf_token": csrf})
        assert unticked.status_code == 303
        assert "tick the box" in page.get(f"/campaigns/{campaign_id}").text
    assert _status(site) == "active"
    with api_client(site.base, site.alpha.token) as api:
        assert api.post(f"/api/v1/campaigns/{campaign_id}/pause").json()["status"] == "paused"
        again = api.post(f"/api/v1/campaigns/{campaign_id}/pause")
        assert again.status_code == 409 and "paused already" in again.text
        assert api.post(f"/api/v1/campaigns/{campaign_id}/resume").json()["status"] == "active"
        archived = api.post(f"/api/v1/campaigns/{campaign_id}/archive").json()
        assert (archived["status"], archived["cancelled"]) == ("archived", 6)
        enroll = api.post(f"/api/v1/campaigns/{campaign_id}/enroll", json={})
        assert enroll.status_code == 409 and "archived" in enroll.text
    with api_client(site.base, site.bravo.token) as other:
        assert other.post(f"/api/v1/campaigns/{campaign_id}/resume").status_code == 404


def test_step_counts_and_reply_rate(site: Site) -> None:
    live = live_workspace(site.alpha.app)
    live.reply(ADA, "Yes, tell me more.")
    campaign_id, _ = _ids(site)
    with api_client(site.base, site.alpha.token) as api:
        stats = api.get(f"/api/v1/campaigns/{campaign_id}/step-stats").json()
    assert stats[0] == {
        "position": 1, "sent": 3, "replied": 1, "out_of_office": 0, "bounced": 0, "reply_rate": 33.3
    }  # fmt: skip
    assert stats[1]["sent"] == 0 and stats[1]["reply_rate"] is None
    # The page reads the step counts once for its tabs and these figures: the same numbers.
    with signed_in(site.base, site.alpha.email) as (page, _csrf):
        html = page.get(f"/campaigns/{campaign_id}").text
    assert '<span class="tag">sent 3</span><span class="tag">replied 1</span>' in html
    assert "reply rate 33.3 %" in html
    # The reply figures are remembered between page loads until a reply arrives: a new one
    # shows at once, on the page and in the API.
    live.reply(GRACE, "Interesting, call me.")
    with signed_in(site.base, site.alpha.email) as (page, _csrf):
        assert "reply rate 66.7 %" in page.get(f"/campaigns/{campaign_id}").text
    with api_client(site.base, site.alpha.token) as api:
        assert api.get(f"/api/v1/campaigns/{campaign_id}/step-stats").json()[0]["replied"] == 2


def test_an_existing_mailbox_is_picked_with_its_settings_and_disagreements_are_said_at_once(
    site: Site,
) -> None:
    live_workspace(site.alpha.app)
    other = campaign("Atlas second", ATLAS, "sam@atlas.test", "Samuel")
    other = other.replace("daily_cap = 40", "daily_cap = 7")
    with signed_in(site.base, site.alpha.email) as (page, csrf):
        form = page.get("/campaigns/new?tab=form").text
        assert "sam@atlas.test</strong>: sends as “Sam Rivers”, at most 40 a day" in form
        refused = page.post("/campaigns/new", data={"source": other, "csrf_token": csrf})
        assert refused.status_code == 400
        assert "From name is &#39;Sam Rivers&#39; (this campaign says &#39;Samuel&#39;)" in refused.text
        assert "daily cap is 40 (this campaign says 7)" in refused.text
        assert "replyguard mailbox set" not in refused.text  # no command for a web user
        fields = {
            "csrf_token": csrf, "name": "Atlas third", "product": ATLAS, "owner": site.alpha.email,
            "timezone": "UTC", "days": "mon", "start": "09:00", "end": "17:00",
            "mailbox_pick": "sam@atlas.test", "mailbox": "typed@else.test", "from_name": "Typed",
            "daily_cap": "9999", "steps": "2", "step1_wait": "0d", "step1_subject": "Hi",
            "step1_body": "One.", "step2_wait": "1d", "step2_body": "Two.",
        }  # fmt: skip
        longer = page.post("/campaigns/new/form", data={**fields, "more": "1"})
        assert longer.status_code == 200 and 'name="step3_body"' in longer.text
        assert 'name="steps" value="3"' in longer.text and "Two." in longer.text
        created = page.post("/campaigns/new/form", data={**fields, "steps": "3", "step3_body": "Three."})
        assert created.status_code == 303, created.text
    with site.alpha.app.uow() as uow:
        third = find_campaign(uow, "Atlas third")
        mailbox = uow.session.get_one(m.Mailbox, third.mailbox_id)
        settings = (mailbox.address, mailbox.from_name, mailbox.daily_cap)
        steps = uow.session.scalar(select(func.count()).where(m.CampaignStep.campaign_id == third.id))
        typed = uow.session.scalar(select(m.Mailbox.id).where(m.Mailbox.address == "typed@else.test"))
    assert settings == ("sam@atlas.test", "Sam Rivers", 40)
    assert steps == 3 and typed is None


def test_an_edit_applies_only_what_was_shown_to_this_campaign(site: Site) -> None:
    live_workspace(site.alpha.app)
    campaign_id, _ = _ids(site)
    with site.alpha.app.uow() as uow:
        source = find_campaign(uow, ATLAS_CAMPAIGN).source
    edited = source.replace("one last note", "a final note")
    with signed_in(site.base, site.alpha.email) as (page, csrf):
        renamed = page.post(
            f"/campaigns/{campaign_id}/edit",
            data={"source": edited.replace(ATLAS_CAMPAIGN, "Beacon pilot"), "csrf_token": csrf},
        )
        assert renamed.status_code == 400 and "this page edits" in renamed.text
        shown = page.post(f"/campaigns/{campaign_id}/edit", data={"source": edited, "csrf_token": csrf})
        assert shown.status_code == 200 and "step 3 body" in shown.text
        forged = '[["step 3 body", "x", "y"]]'
        stale = page.post(
            f"/campaigns/{campaign_id}/edit",
            data={"source": edited, "shown": forged, "confirm": "1", "csrf_token": csrf},
        )
        assert stale.status_code == 400 and "changed since the differences were shown" in stale.text
    with site.alpha.app.uow() as uow:
        assert "one last note" in find_campaign(uow, ATLAS_CAMPAIGN).source  # nothing applied
