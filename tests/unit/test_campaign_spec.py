"""The campaign file: both examples parse; every error names the field a person must fix."""

from __future__ import annotations

from datetime import time
from pathlib import Path

import pytest

from replyguard.domain.campaign_spec import CampaignSpecError, parse_campaign
from replyguard.domain.schedule import Wait

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

GOOD = """
product = "Widgets"

[campaign]
name = "Test"
mailbox = "Dana@Example.test"
from_name = "Dana"
owner = "dana@example.test"
timezone = "America/New_York"
send_window = { days = ["mon", "fri"], start = "09:00", end = "17:00" }
daily_cap = 10

[[campaign.steps]]
wait = "0d"
subject = "Hello {{ company }}"
body = "Hi {{ first_name }}"

[[campaign.steps]]
wait = "2d"
body = "Again, {{ first_name }}"
"""


def variant(old: str, new: str) -> str:
    assert old in GOOD, old
    return GOOD.replace(old, new, 1)


def test_main_example_parses() -> None:
    spec = parse_campaign((EXAMPLES / "campaign.toml").read_text(encoding="utf-8"))
    assert spec.product == "Northwind Reports"
    assert spec.name == "Q1 reporting outreach"
    assert spec.mailbox == "dana@northwind-analytics.test"
    assert spec.timezone == "America/New_York"
    assert spec.window.days == frozenset(range(5))
    assert (spec.window.start, spec.window.end) == (time(9), time(17))
    assert spec.daily_cap == 150
    assert [s.wait for s in spec.steps] == [Wait(0), Wait(3), Wait(4)]
    assert (spec.from_name, spec.mailbox_timezone) == ("Dana Whitfield", None)
    assert [s.approval for s in spec.steps] == [False, False, True]
    assert spec.steps[0].subject == "Quick question about {{ company }}'s reporting"
    assert spec.steps[1].subject is None  # a follow-up in the same thread


def test_forecasting_example_parses() -> None:
    spec = parse_campaign((EXAMPLES / "campaign-forecasting.toml").read_text(encoding="utf-8"))
    assert spec.product == "Northwind Forecasting"
    assert spec.window.day_names() == ["mon", "tue", "wed", "thu"]
    assert (spec.window.start, spec.window.end) == (time(8, 30), time(16, 30))
    assert spec.timezone == "Europe/Berlin"
    assert len(spec.steps) == 2


def test_good_file_normalises_the_mailbox() -> None:
    spec = parse_campaign(GOOD)
    assert spec.mailbox == "dana@example.test"
    assert [s.position for s in spec.steps] == [1, 2]


def test_custom_csv_columns_are_allowed_when_known() -> None:
    source = variant("Hi {{ first_name }}", "Hi {{ first_name }} from {{ region }}")
    with pytest.raises(CampaignSpecError, match="region"):
        parse_campaign(source)
    assert parse_campaign(source, {"region"}).steps[0].body.endswith("{{ region }}")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('product = "x"\n[campaign\nname = "y"', "not valid TOML"),
        (variant('product = "Widgets"', ""), "file.product: missing"),
        (variant('product = "Widgets"', 'product = ""'), "file.product: expected a non-empty text"),
        (
            variant('product = "Widgets"', 'product = "Widgets"\nprodcut = "x"'),
            "file: unknown key(s) prodcut",
        ),
        (variant("daily_cap = 10", "daily_cap = 10\ndaly_cap = 3"), "campaign: unknown key(s) daly_cap"),
        (variant('wait = "2d"', 'wait = "2d"\naproval = true'), "campaign.steps[2]: unknown key(s) aproval"),
        (variant('start = "09:00"', 'start = "09:00", timezone = "UTC"'), "campaign.send_window: unknown"),
        (variant('"fri"]', '"fryday"]'), "campaign.send_window: unknown day(s) ['fryday']"),
        (variant('days = ["mon", "fri"]', 'days = "mon"'), "campaign.send_window.days: expected a list"),
        (variant('start = "09:00", end = "17:00"', 'start = "17:00", end = "09:00"'), "campaign.send_window"),
        (variant('start = "09:00", end = "17:00"', 'start = "09:00", end = "09:00"'), "must be before end"),
        (variant('start = "09:00"', 'start = "nine"'), "campaign.send_window: expected a local time"),
        (variant("daily_cap = 10", "daily_cap = 0"), "campaign.daily_cap: expected a whole number"),
        (variant("daily_cap = 10", "daily_cap = -3"), "campaign.daily_cap"),
        (variant("daily_cap = 10", "daily_cap = 2.5"), "campaign.daily_cap: expected a whole number"),
        (variant("daily_cap = 10", 'daily_cap = "10"'), "campaign.daily_cap"),
        (variant("daily_cap = 10", "daily_cap = true"), "campaign.daily_cap"),
        (variant('subject = "Hello {{ company }}"\n', ""), "campaign.steps[1].subject: missing"),
        (variant('wait = "2d"', 'wait = "two days"'), "campaign.steps[2].wait: expected a duration"),
        (variant('wait = "2d"', "wait = 2"), "campaign.steps[2].wait"),
        (variant('wait = "0d"', 'wait = ""'), "campaign.steps[1].wait"),
        (variant('body = "Again, {{ first_name }}"', 'body = ""'), "campaign.steps[2].body"),
        (variant('wait = "2d"', 'wait = "2d"\napproval = "yes"'), "campaign.steps[2].approval"),
        (variant('mailbox = "Dana@Example.test"', 'mailbox = "dana at example"'), "campaign.mailbox"),
        (variant('owner = "dana@example.test"', 'owner = "nobody"'), "campaign.owner"),
        (variant('timezone = "America/New_York"', 'timezone = "Eastern"'), "campaign.timezone"),
        (variant('name = "Test"', ""), "campaign.name: missing"),
        (GOOD[: GOOD.index("[[campaign.steps]]")], "campaign.steps: at least one"),
        ('product = "x"', "campaign: missing [campaign] table"),
        (variant('from_name = "Dana"', 'from_name = "Dana\\r\\nBcc: all@x.test"'), "campaign.from_name"),
        (variant('subject = "Hello {{ company }}"', 'subject = "Hi\\nBcc: x@y.test"'), "steps[1].subject"),
    ],
)
def test_errors_name_the_field(source: str, expected: str) -> None:
    with pytest.raises(CampaignSpecError) as info:
        parse_campaign(source)
    assert expected in str(info.value)


def test_mailbox_settings_may_be_left_out_or_stated_in_a_mailbox_table() -> None:
    # Left out: the mailbox must already exist (the service layer says so otherwise).
    bare = variant("daily_cap = 10", "").replace('from_name = "Dana"\n', "")
    spec = parse_campaign(bare)
    assert (spec.from_name, spec.daily_cap, spec.mailbox_timezone) == (None, None, None)
    table = bare + '\n[mailbox]\nfrom_name = "Dana D."\ndaily_cap = 40\ntimezone = "Europe/Berlin"\n'
    spec = parse_campaign(table)
    assert (spec.from_name, spec.daily_cap, spec.mailbox_timezone) == ("Dana D.", 40, "Europe/Berlin")
    assert parse_campaign(GOOD + "\n[mailbox]\ndaily_cap = 10\n").daily_cap == 10  # same value twice


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("[mailbox]\ndaily_cap = 20\n", "mailbox.daily_cap: 20 differs from campaign.daily_cap 10"),
        ('[mailbox]\nfrom_name = "Other"\n', "mailbox.from_name: 'Other' differs"),
        ("[mailbox]\ndaily_cap = 0\n", "mailbox.daily_cap: expected a whole number"),
        ('[mailbox]\ntimezone = "Mars/Base"\n', "mailbox.timezone"),
        ("[mailbox]\ncap = 3\n", "mailbox: unknown key(s) cap"),
        ('mailbox = "x"\n', "mailbox: expected a [mailbox] table"),
    ],
)
def test_mailbox_table_errors(extra: str, expected: str) -> None:
    source = GOOD + "\n" + extra if extra.startswith("[") else extra + GOOD
    with pytest.raises(CampaignSpecError) as info:
        parse_campaign(source)
    assert expected in str(info.value)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("{{ 1 / 0 }}", "campaign.steps[2].body: cannot be rendered: ZeroDivisionError"),
        (
            "{{ 'x' * 100000000 }}",
            "campaign.steps[2].body: repeating a text or list too large: more than 200,000 characters",
        ),
        (
            "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
            "campaign.steps[2].body: the template calls itself",
        ),
    ],
)
def test_every_template_is_tried_on_a_sample_lead(body: str, expected: str) -> None:
    with pytest.raises(CampaignSpecError) as info:
        parse_campaign(variant('body = "Again, {{ first_name }}"', f'body = "{body}"'))
    assert expected in str(info.value)
    assert "sample lead" in str(info.value)


def test_include_is_refused_when_the_file_is_read() -> None:
    with pytest.raises(CampaignSpecError, match=r"campaign\.steps\[2\]\.body: 'include' is not allowed"):
        parse_campaign(variant('body = "Again, {{ first_name }}"', "body = \"{% include 'x' %}\""))


def test_a_subject_that_renders_to_a_header_injection_is_caught_on_the_sample() -> None:
    with pytest.raises(CampaignSpecError, match=r"campaign\.steps\[1\]\.subject"):
        parse_campaign(variant("{{ company }}", "{{ company }}{{ '\\n' }}Bcc: x@y.test"))


def test_unknown_template_variable_names_the_variable_and_the_step() -> None:
    source = variant('body = "Again, {{ first_name }}"', 'body = "Again, {{ frist_name }}"')
    with pytest.raises(CampaignSpecError) as info:
        parse_campaign(source)
    message = str(info.value)
    assert "campaign.steps[2].body" in message
    assert "frist_name" in message
    assert "unknown template variable" in message


def test_unknown_variable_in_a_subject() -> None:
    with pytest.raises(CampaignSpecError, match=r"campaign\.steps\[1\]\.subject: unknown template variable"):
        parse_campaign(variant("{{ company }}", "{{ compnay }}"))


def test_template_syntax_error_names_the_step_and_line() -> None:
    source = variant('body = "Hi {{ first_name }}"', 'body = """\nHi\n{{ first_name }\n"""')
    with pytest.raises(CampaignSpecError) as info:
        parse_campaign(source)
    assert "campaign.steps[1].body: template syntax error on line" in str(info.value)


def test_the_toml_error_says_where() -> None:
    with pytest.raises(CampaignSpecError, match=r"line 3"):
        parse_campaign('product = "x"\n\n[campaign\n')
