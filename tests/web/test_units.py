"""Pure parts of the web workspace: the HTML sanitiser, the campaign form's TOML, the
timeline's sentences, and the supervisor of `replyguard up`."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from replyguard.domain.campaign_form import CampaignFields, StepFields, campaign_toml
from replyguard.domain.campaign_spec import CampaignSpecError, parse_campaign
from replyguard.domain.timeline import describe
from replyguard.entrypoints.supervisor import Component, Supervisor
from replyguard.entrypoints.web.sanitize import sanitize_email_html
from replyguard.entrypoints.web.thread_actions import BadDecision, decision_request

HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    '<a href="javascript:alert(1)">x</a>',
    '<a href=" JaVaScRiPt:alert(1)">x</a>',
    '<a href="data:text/html,<script>alert(1)</script>">x</a>',
    '<a href="/logout">x</a>',
    '<svg onload="alert(1)"><circle/></svg>',
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)></style></mglyph></table></mtext></math>",
    '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
    '<object data="evil.swf"></object><embed src="evil.swf">',
    '<form action="https://evil.test"><input name=p></form>',
    '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    '<base href="https://evil.test/">',
    '<div style="background-image:url(javascript:alert(1));position:fixed;top:0">x</div>',
    "<style>@import 'https://evil.test/x.css'; body{background:url(https://evil.test/t)}</style>",
    '<p style="behavior:url(x.htc);-moz-binding:url(x)">x</p>',
    '<img src="https://tracker.test/open.gif" srcset="https://tracker.test/2x.gif 2x">',
    '<link rel="stylesheet" href="https://evil.test/x.css">',
    "<!--<img src=x onerror=alert(1)>-->",
]


@pytest.mark.parametrize("payload", HOSTILE)
def test_hostile_html_comes_out_inert(payload: str) -> None:
    html = sanitize_email_html(payload).html.lower()
    for needle in (
        "<script", "onerror", "onload", "javascript:", "<svg", "<math", "<iframe", "<object", "<embed",
        "<form", "<meta", "<base", "<style", "<link", "url(", "position", "behavior", "data:", "href=\"/",
        "tracker.test", "evil.test", "srcset",
    ):  # fmt: skip
        assert needle not in html, (payload, html)


def test_mail_formatting_survives() -> None:
    html = (
        '<table width="600" bgcolor="#ffffff"><tr><td align="center" style="color:#333;font-size:14px">'
        '<font color="red">Hi</font> <b>there</b>, <a href="https://example.test/a">a link</a> and '
        '<a href="mailto:x@example.test">mail</a></td></tr></table>'
    )
    out = sanitize_email_html(html).html
    for kept in ('width="600"', 'bgcolor="#ffffff"', "color:#333", "font-size:14px", '<font color="red">'):
        assert kept in out
    assert 'href="https://example.test/a"' in out and 'rel="noopener noreferrer nofollow"' in out
    assert 'href="mailto:x@example.test"' in out


def test_remote_images_are_blocked_and_counted_unless_asked_for() -> None:
    html = '<img src="https://t.test/a.gif"><img src="http://t.test/b.gif" alt="logo"><img src="cid:x">'
    blocked = sanitize_email_html(html)
    assert blocked.blocked_images == 2 and "t.test" not in blocked.html and 'alt="logo"' in blocked.html
    allowed = sanitize_email_html(html, remote_images=True)
    assert allowed.blocked_images == 0 and allowed.html.count("t.test") == 2 and "cid:" not in allowed.html


def fields(**changes: object) -> CampaignFields:
    base = {
        "product": "Atlas",
        "name": "Atlas launch",
        "mailbox": "sam@atlas.test",
        "from_name": "Sam",
        "owner": "sam@atlas.test",
        "timezone": "Europe/Paris",
        "days": ["mon", "wed"],
        "start": "09:00",
        "end": "17:00",
        "daily_cap": "40",
        "steps": [
            StepFields("0d", "Hello {{ first_name }}", 'Hi {{ first_name }},\r\nsay "yes" \\ no"""\n', False),
            StepFields("3d", "", "Following up.", True),
            StepFields("", "", "   ", False),  # an unused row of the form
        ],
    }
    return CampaignFields(**{**base, **changes})  # type: ignore[arg-type]


def test_the_campaign_form_writes_toml_that_parses_to_the_same_campaign() -> None:
    spec = parse_campaign(campaign_toml(fields()))
    assert (spec.product, spec.name, spec.timezone, spec.daily_cap) == (
        "Atlas",
        "Atlas launch",
        "Europe/Paris",
        40,
    )
    assert spec.window.day_names() == ["mon", "wed"]
    assert len(spec.steps) == 2
    assert spec.steps[0].body == 'Hi {{ first_name }},\nsay "yes" \\ no"""'
    assert spec.steps[1].subject is None and spec.steps[1].approval


def test_a_field_cannot_inject_toml_keys() -> None:
    sneaky = fields(name='x"\ndaily_cap = 99999\n[campaign.extra]\ny = "')
    spec = parse_campaign(campaign_toml(sneaky))
    assert spec.daily_cap == 40 and spec.name.startswith('x"')


def test_the_campaign_forms_errors_are_the_files_errors() -> None:
    with pytest.raises(CampaignSpecError, match=r"campaign\.daily_cap"):
        parse_campaign(campaign_toml(fields(daily_cap="lots")))
    with pytest.raises(CampaignSpecError, match=r"campaign\.steps\[2\]\.wait"):
        parse_campaign(
            campaign_toml(
                fields(steps=[StepFields("0d", "Hi", "a", False), StepFields("soon", "", "b", False)])
            )
        )


@pytest.mark.parametrize(
    ("kind", "data", "actor", "words"),
    [
        ("step_approved", {"by": "ann@alpha.test"}, "ann@alpha.test", "approved a step"),
        (
            "reply_recorded",
            {"kind": "human_reply", "state_before": "active", "state_after": "replied"},
            "the lead",
            "replied; lead active → replied",
        ),
        (
            "steps_cancelled",
            {"count": 2, "reason": "reply:human_reply", "in_flight": 1},
            "replyguard",
            "2 queued steps cancelled",
        ),
        (
            "send_refused",
            {"reason": "the lead is replied", "cancelled": True},
            "worker",
            "refused to send: the lead is replied; step cancelled",
        ),
        (
            "lead_state_set",
            {"by": "person", "before": "replied", "after": "active", "why": "asked to resume"},
            "person",
            "replied → active: asked to resume",
        ),
        (
            "lead_assigned",
            {"by": "ann@alpha.test", "before": None, "after": "ben@alpha.test"},
            "ann@alpha.test",
            "gave the person to ben@alpha.test",
        ),
        ("something_new", {}, "replyguard", "something new"),
        ("steps_cancelled", {"count": "many"}, "replyguard", "0 queued steps cancelled"),
    ],
)
def test_each_event_reads_as_who_did_what(kind: str, data: dict[str, object], actor: str, words: str) -> None:
    who, what = describe(kind, data)
    assert who == actor and words in what


def test_a_failing_component_is_restarted_and_the_others_go_on() -> None:
    runs: list[int] = []
    second_run = threading.Event()

    def flaky(stop: threading.Event) -> None:
        runs.append(1)
        if len(runs) == 1:
            raise RuntimeError("IMAP server went away")
        second_run.set()
        stop.wait()

    steady_started = threading.Event()

    def steady(stop: threading.Event) -> None:
        steady_started.set()
        stop.wait()

    supervisor = Supervisor([Component("flaky", flaky), Component("steady", steady)], first_pause=0.01)
    supervisor.start()
    assert second_run.wait(30) and steady_started.wait(30)
    supervisor.stop.set()
    assert supervisor.join(30) == [] and supervisor.failed == []


def test_an_essential_component_that_ends_stops_everything() -> None:
    def web(stop: threading.Event) -> None:
        raise SystemExit(1)  # what uvicorn does when it cannot serve

    def worker(stop: threading.Event) -> None:
        stop.wait()

    supervisor = Supervisor([Component("web", web, essential=True), Component("worker", worker)])
    supervisor.start()
    assert supervisor.stop.wait(30)
    assert supervisor.join(30) == [] and supervisor.failed == ["web"]


@pytest.mark.parametrize(
    ("typed", "zone", "meant"),
    [
        ("2026-12-09T09:00", "America/New_York", datetime(2026, 12, 9, 14, 0, tzinfo=UTC)),
        ("2026-12-09T09:00", "Europe/Berlin", datetime(2026, 12, 9, 8, 0, tzinfo=UTC)),
        ("2026-12-09T09:00", "", datetime(2026, 12, 9, 9, 0, tzinfo=UTC)),  # no zone named: UTC
        ("2026-12-09T09:00+01:00", "America/New_York", datetime(2026, 12, 9, 8, 0, tzinfo=UTC)),
    ],
)
def test_a_snooze_time_is_read_in_the_zone_the_form_names(typed: str, zone: str, meant: datetime) -> None:
    now = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)
    request = decision_request("snooze", "ann@alpha.test", now, until_at=typed, zone=zone)
    assert request.until_at == meant


def test_an_unknown_zone_is_one_clear_error() -> None:
    now = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)
    with pytest.raises(BadDecision, match="unknown time zone 'Mars/Olympus'"):
        decision_request("snooze", "ann@alpha.test", now, until_at="2026-12-09T09:00", zone="Mars/Olympus")


def test_a_small_count_is_a_visible_bar_next_to_a_large_cap() -> None:
    import re

    from replyguard.entrypoints.web.svg import MIN_BAR, Series, stacked_bars

    svg = str(stacked_bars(["a", "b"], [Series("campaign", "sent", [1, 0])], limit=100, title="t"))
    heights = [float(h) for h in re.findall(r'<rect [^>]*height="([\d.]+)"', svg)]
    assert heights == [MIN_BAR]  # 1 of 100 would be 1.3 units tall: too thin to see; 0 draws nothing
    assert "a: 1 sent" in svg  # the exact count is in the bar's title


def test_the_form_has_as_many_step_rows_as_it_said() -> None:
    from replyguard.entrypoints.web.pages.campaign_new import MAX_FORM_STEPS, step_count

    assert step_count({}) == 2
    assert step_count({"steps": "7"}) == 7
    assert step_count({"step9_body": "x"}) == 9
    assert step_count({"steps": "100000"}) == MAX_FORM_STEPS
