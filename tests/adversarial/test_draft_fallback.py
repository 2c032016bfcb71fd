"""Issue 21, item 1: a `[campaign.drafts]` template never makes a reply unopenable.

Before, `{{ 1/0 }}` in a campaign's draft gave a 500 on the thread page and the API, and
`threads show` exited 70; a size bomb cost 1.6 GB per view. Such a template can still be
stored: by a campaign created before the trial render covered drafts, or by one that only fails
on some lead's data (the trial render uses a sample lead). Each is shown here on the thread
page, in the API and by `threads show`: the built-in draft for the intent, with a note that
names the template and why.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.campaign_spec import CampaignSpecError, parse_campaign
from replyguard.domain.intent import Intent
from tests.support.cli import run_cli
from tests.web.conftest import Site, quick_password_hashes, site
from tests.web.rescue import ADA, ATLAS_CAMPAIGN, campaign, live_workspace
from tests.web.support import api_client, signed_in

__all__ = ["quick_password_hashes", "site"]

BROKEN = {
    "division by zero": ("{{ 1 / 0 }}", "ZeroDivisionError"),
    "size bomb": (
        "{% set ns = namespace(x='ab') %}{% for i in range(64) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}"
        "{{ ns.x }}",
        "size limit",
    ),
    "loop bomb": ("{% for a in range(1000) %}{% for b in range(1000) %}{% endfor %}{% endfor %}", "budget"),
    # The sample lead is "Alex" (4 letters): this passes the trial render, fails for "Ada".
    "fails on the lead's data only": ("{{ 100 // (first_name | length - 3) }}", "ZeroDivisionError"),
}


def _toml_string(template: str) -> str:
    return '"' + template.replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.mark.parametrize("case", list(BROKEN), ids=list(BROKEN))
def test_a_failing_draft_template_falls_back_on_every_reader(site: Site, case: str, tmp_path: Path) -> None:
    template, why = BROKEN[case]
    live = live_workspace(site.alpha.app)
    live.reply(ADA, "Sounds interesting, could we talk on Tuesday?")
    thread_id = live.thread_of(ADA)
    with site.alpha.app.uow() as uow:
        campaign = uow.session.scalars(select(m.Campaign).where(m.Campaign.name == ATLAS_CAMPAIGN)).one()
        table = "".join(f"{i.value} = {_toml_string(template)}\n" for i in Intent)
        campaign.source = campaign.source + "\n[campaign.drafts]\n" + table
        uow.commit()

    with api_client(site.base, site.alpha.token) as api:
        tracemalloc.start()  # the server runs in this process: its memory is counted too
        try:
            detail = api.get(f"/api/v1/threads/{thread_id}")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert detail.status_code == 200, detail.text
    assert peak < 50_000_000, f"{peak:,} bytes for one view"
    draft = detail.json()["draft"]
    assert draft["source"] == "template"
    assert draft["note"].startswith("campaign.drafts.") and why in draft["note"], draft["note"]
    assert "built-in draft" in draft["note"]
    assert draft["body"].startswith("Hi Ada,")

    with signed_in(site.base, site.alpha.email) as (client, _csrf):
        page = client.get(f"/threads/{thread_id}")
    assert page.status_code == 200
    assert 'id="draft-note"' in page.text and "built-in draft" in page.text

    app = site.alpha.app
    env = {
        "REPLYGUARD_DATABASE_URL": app.engine.url.render_as_string(hide_password=False),
        "REPLYGUARD_WORKSPACE": app.workspace,
        "COLUMNS": "1000",
    }
    shown = run_cli(["threads", "show", str(thread_id)], env=env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "Note: campaign.drafts." in shown.stdout and "Hi Ada," in shown.stdout


def test_the_trial_render_refuses_the_same_templates_at_create() -> None:
    source = campaign(ATLAS_CAMPAIGN, "Atlas", "sam@atlas.test", "Sam Rivers")
    for case, (template, why) in BROKEN.items():
        if case == "fails on the lead's data only":
            parse_campaign(source + f"\n[campaign.drafts]\ninterested = {_toml_string(template)}\n")
            continue
        with pytest.raises(CampaignSpecError, match=r"^campaign\.drafts\.interested: ") as info:
            parse_campaign(source + f"\n[campaign.drafts]\ninterested = {_toml_string(template)}\n")
        assert why in str(info.value)
