"""The campaign file (TOML) as a validated, immutable value.

Errors name the field (`campaign.steps[2].wait: ...`) so a person can fix the file without
reading code. Unknown keys are errors too: a typo must not silently drop a setting.

The sender name, the daily cap and the day the cap counts in belong to the *mailbox*, which
several campaigns may share. A file states them in an optional `[mailbox]` table, or (as the
examples do) as `from_name` and `daily_cap` in `[campaign]`; the service layer checks them
against the mailbox (`service_layer/workspace/campaigns.py`). Every template is rendered once on a
sample lead, so an error is reported with its step and field before any lead is enrolled.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from replyguard.domain.addresses import (
    InvalidAddress,
    UnsafeHeaderValue,
    check_header_value,
    normalize_address,
)
from replyguard.domain.drafts import DRAFT_FIELDS
from replyguard.domain.intent import Intent
from replyguard.domain.schedule import ScheduleError, SendWindow, Wait, load_zone
from replyguard.domain.templates import STANDARD_FIELDS, TemplateError, check_variables, render


class CampaignSpecError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class StepSpec:
    position: int  # 1-based
    wait: Wait
    subject: str | None  # None: a follow-up in the thread of the previous subject
    body: str
    approval: bool


@dataclass(frozen=True, slots=True)
class CampaignSpec:
    product: str
    name: str
    mailbox: str
    from_name: str | None  # the mailbox's sender name, if this file states it
    owner: str
    timezone: str  # the zone of leads whose own zone is unknown
    window: SendWindow
    daily_cap: int | None  # the mailbox's daily cap, if this file states it
    steps: tuple[StepSpec, ...]
    mailbox_timezone: str | None = None  # the day the mailbox's cap counts in, if stated
    #: Draft templates by intent (`[campaign.drafts]`), replacing the defaults of domain/drafts.py.
    drafts: tuple[tuple[str, str], ...] = ()
    #: An address the team owns, for `replyguard audit` (optional; `--canary` overrides it).
    canary: str | None = None


_TOP_KEYS = {"product", "campaign", "mailbox"}
_MAILBOX_KEYS = {"from_name", "daily_cap", "timezone"}
_CAMPAIGN_KEYS = {
    "name",
    "mailbox",
    "from_name",
    "owner",
    "timezone",
    "send_window",
    "daily_cap",
    "steps",
    "drafts",
    "canary",
}
_WINDOW_KEYS = {"days", "start", "end"}
_STEP_KEYS = {"wait", "subject", "body", "approval"}


def _unknown(where: str, data: dict[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise CampaignSpecError(
            f"{where}: unknown key(s) {', '.join(extra)} (allowed: {', '.join(sorted(allowed))})"
        )


def _text(data: dict[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    value = data.get(key)
    if value is None:
        if required:
            raise CampaignSpecError(f"{where}.{key}: missing")
        return None
    if not isinstance(value, str) or not value.strip():
        raise CampaignSpecError(f"{where}.{key}: expected a non-empty text, got {value!r}")
    return value


def parse_campaign(source: str, extra_fields: set[str] | None = None, *, trial: bool = True) -> CampaignSpec:
    """The validated campaign. With `trial` (the default), every template is also rendered once
    on a sample lead (`trial_render`): that may spend a whole render budget per template, so
    the service layer does it before it opens a transaction (`campaigns.check_campaign`) and
    parses again without `trial` inside one."""
    try:
        data = tomllib.loads(source)
    except tomllib.TOMLDecodeError as exc:
        raise CampaignSpecError(f"not valid TOML: {exc}") from exc
    try:
        return _build(data, extra_fields or set(), trial=trial)
    except (ScheduleError, InvalidAddress, UnsafeHeaderValue, TemplateError) as exc:
        raise CampaignSpecError(str(exc)) from exc


def _build(data: dict[str, Any], extra_fields: set[str], *, trial: bool) -> CampaignSpec:
    _unknown("file", data, _TOP_KEYS)
    product = _text(data, "product", "file")
    campaign = data.get("campaign")
    if not isinstance(campaign, dict):
        raise CampaignSpecError("campaign: missing [campaign] table")
    _unknown("campaign", campaign, _CAMPAIGN_KEYS)
    where = "campaign"
    name = _text(campaign, "name", where)
    mailbox = _field(normalize_address, campaign, "mailbox", where)
    owner = _field(normalize_address, campaign, "owner", where)
    timezone = _field(_zone_name, campaign, "timezone", where)
    assert product and name  # _text raises otherwise
    from_name, cap, mailbox_zone = _mailbox_settings(campaign, data.get("mailbox"))
    window = _window(campaign.get("send_window"))
    steps = _steps(campaign.get("steps"), extra_fields)
    drafts = _drafts(campaign.get("drafts"), extra_fields)
    canary = _field(normalize_address, campaign, "canary", where) if "canary" in campaign else None
    spec = CampaignSpec(
        product.strip(),
        name.strip(),
        mailbox,
        from_name,
        owner,
        timezone,
        window,
        cap,
        steps,
        mailbox_zone,
        drafts,
        canary,
    )
    if trial:
        trial_render(spec, extra_fields)
    return spec


def _mailbox_settings(campaign: dict[str, Any], table: Any) -> tuple[str | None, int | None, str | None]:
    """The mailbox's settings this file states: `[mailbox]`, or `from_name` and `daily_cap` in
    `[campaign]` (the older place). Saying one thing twice with two values is an error."""
    if table is None:
        table = {}
    if not isinstance(table, dict):
        raise CampaignSpecError("mailbox: expected a [mailbox] table")
    _unknown("mailbox", table, _MAILBOX_KEYS)
    values: dict[str, Any] = {}
    for key, check in (("from_name", _sender_name), ("daily_cap", _cap)):
        found = {w: d[key] for w, d in (("campaign", campaign), ("mailbox", table)) if key in d}
        for where, value in found.items():
            values[key] = check(f"{where}.{key}", value)
        if len(set(map(repr, found.values()))) > 1:
            raise CampaignSpecError(
                f"mailbox.{key}: {found['mailbox']!r} differs from campaign.{key} {found['campaign']!r};"
                " state it once"
            )
    zone = _field(_zone_name, table, "timezone", "mailbox") if "timezone" in table else None
    return values.get("from_name"), values.get("daily_cap"), zone


def _sender_name(where: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise CampaignSpecError(f"{where}: expected a non-empty text, got {value!r}")
    check_header_value(where, value)
    return value


def _cap(where: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise CampaignSpecError(f"{where}: expected a whole number of at least 1, got {value!r}")
    return value


#: The sample lead every template is rendered on once when a campaign is created or changed.
SAMPLE_LEAD: dict[str, str] = {
    "first_name": "Alex",
    "last_name": "Sample",
    "full_name": "Alex Sample",
    "company": "Example Company",
    "title": "Head of Examples",
    "email": "alex.sample@example.com",
    "timezone": "UTC",
    "owner": "owner@example.com",
}


def trial_render(spec: CampaignSpec, extra_fields: set[str]) -> None:
    """Render every subject, body and draft once on a sample lead that has every field: a
    template that fails even then (division by zero, a limit of the budget...) is a file error."""
    values = {**SAMPLE_LEAD, **dict.fromkeys(extra_fields, "sample")}
    assert set(STANDARD_FIELDS) <= set(values)
    for step in spec.steps:
        where = f"campaign.steps[{step.position}]"
        for field, source in (("subject", step.subject), ("body", step.body)):
            if source is None:
                continue
            try:
                text = render(source, values, f"{where}.{field}")
                if field == "subject":
                    check_header_value(f"{where}.subject (rendered)", text)
            except (TemplateError, UnsafeHeaderValue) as exc:
                raise CampaignSpecError(f"{exc} (tried on a sample lead)") from exc
    draft_values = {**values, **dict.fromkeys(DRAFT_FIELDS - set(values), "sample")}
    for intent, source in spec.drafts:
        try:
            render(source, draft_values, f"campaign.drafts.{intent}", blanks=True)
        except TemplateError as exc:
            raise CampaignSpecError(f"{exc} (tried on a sample reply)") from exc


def _drafts(raw: Any, extra_fields: set[str]) -> tuple[tuple[str, str], ...]:
    """`[campaign.drafts]`: intent name = template. Validated like the steps' templates."""
    if raw is None:
        return ()
    where = "campaign.drafts"
    if not isinstance(raw, dict):
        raise CampaignSpecError(
            f'{where}: expected a table like {{ interested = "Hi {{{{ first_name }}}}..." }}'
        )
    _unknown(where, raw, {i.value for i in Intent})
    drafts = []
    for intent in sorted(raw):
        text = _text(raw, intent, where)
        assert text is not None
        check_variables(text, f"{where}.{intent}", extra_fields | DRAFT_FIELDS)
        drafts.append((intent, text))
    return tuple(drafts)


def draft_templates(source: str) -> dict[str, str]:
    """The `[campaign.drafts]` templates of a stored campaign file, by intent, read without the
    rest of the file's checks (a thread page reads them on every view). What does not read as
    a table of texts is left out: the built-in draft is used for that intent."""
    try:
        campaign = tomllib.loads(source).get("campaign")
    except tomllib.TOMLDecodeError:
        return {}
    raw = campaign.get("drafts") if isinstance(campaign, dict) else None
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(v, str) and k in {i.value for i in Intent}}


def _zone_name(name: str) -> str:
    load_zone(name)
    return name


def _field(convert: Callable[[str], str], data: dict[str, Any], key: str, where: str) -> str:
    raw = _text(data, key, where)
    assert raw is not None
    try:
        return convert(raw)
    except (InvalidAddress, ScheduleError, UnsafeHeaderValue) as exc:
        raise CampaignSpecError(f"{where}.{key}: {exc}") from exc


def _window(raw: Any) -> SendWindow:
    where = "campaign.send_window"
    if not isinstance(raw, dict):
        raise CampaignSpecError(
            f'{where}: expected a table like {{ days = [...], start = "09:00", end = "17:00" }}'
        )
    _unknown(where, raw, _WINDOW_KEYS)
    days = raw.get("days")
    if not isinstance(days, list) or not all(isinstance(d, str) for d in days):
        raise CampaignSpecError(f'{where}.days: expected a list of day names like ["mon", "tue"]')
    try:
        return SendWindow.parse(days, str(raw.get("start", "")), str(raw.get("end", "")))
    except ScheduleError as exc:
        raise CampaignSpecError(f"{where}: {exc}") from exc


def _steps(raw: Any, extra_fields: set[str]) -> tuple[StepSpec, ...]:
    if not isinstance(raw, list) or not raw:
        raise CampaignSpecError("campaign.steps: at least one [[campaign.steps]] is required")
    steps: list[StepSpec] = []
    for index, item in enumerate(raw, start=1):
        where = f"campaign.steps[{index}]"
        if not isinstance(item, dict):
            raise CampaignSpecError(f"{where}: expected a table")
        _unknown(where, item, _STEP_KEYS)
        try:
            wait = Wait.parse(str(item.get("wait", "")))
        except ScheduleError as exc:
            raise CampaignSpecError(f"{where}.wait: {exc}") from exc
        subject = _text(item, "subject", where, required=index == 1)
        body = _text(item, "body", where)
        assert body is not None
        approval = item.get("approval", False)
        if not isinstance(approval, bool):
            raise CampaignSpecError(f"{where}.approval: expected true or false, got {approval!r}")
        if subject is not None:
            check_header_value(f"{where}.subject", subject)
            check_variables(subject, f"{where}.subject", extra_fields)
        check_variables(body, f"{where}.body", extra_fields)
        steps.append(StepSpec(index, wait, subject, body, approval))
    return tuple(steps)
