"""Draft answers a person may edit and send: one template per intent, overridable per campaign.

A draft is only text. Nothing in replyguard sends it on its own (PRODUCT.md invariant 6):
`service_layer/rescue/person_send.py` sends what a person submits, and nothing else calls it.
Templates are rendered by the same budgeted sandbox as the steps (`domain/templates.py`) over
the fields in `DRAFT_FIELDS`; a campaign may replace any of them under `[campaign.drafts]` (keys
are intent names, see `domain/intent.py`). A campaign's template that fails when a thread is
viewed (an error, a limit of the budget) never stops the thread from being read: the built-in
draft for the intent is shown instead, with a note that says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from replyguard.domain.addresses import check_header_value
from replyguard.domain.inbound.subjects import normalize_subject
from replyguard.domain.intent import Intent
from replyguard.domain.templates import STANDARD_FIELDS, TemplateError, render

DRAFT_FIELDS: frozenset[str] = STANDARD_FIELDS | {
    "sender",
    "product",
    "referral_name",
    "referral_address",
    "date",
    "subject",
    "their_time",  # the day (and time) they suggested, as "Thursday at 10:00": see proposed_time
    "asked",  # what their question is about ("pricing"), named in the draft's first line
}

DEFAULT_TEMPLATES: dict[str, str] = {
    Intent.INTERESTED: (
        "Hi {{ first_name }},\n\nthank you, glad to hear it. {% if their_time %}{{ their_time }} "
        "works for me: I will send you an invitation for a 20 minute call.{% else %}Would Tuesday "
        "at 10:00 or Thursday at 15:00 work for a 20 minute call? Happy to adapt to your "
        "calendar.{% endif %}\n\nBest,\n{{ sender }}\n"
    ),
    Intent.QUESTION: (
        "Hi {{ first_name }},\n\nthanks for asking{% if asked %} about {{ asked }}{% endif %}. "
        "[Your answer{% if asked %} on {{ asked }}{% endif %} here.]\n\n"
        "Happy to walk you through it on a short call if that helps.\n\nBest,\n{{ sender }}\n"
    ),
    Intent.REFERRAL: (
        "Hi {{ first_name }},\n\nthank you for pointing me to {{ referral_name or referral_address }}; "
        "I will reach out to them directly.\n\nBest,\n{{ sender }}\n"
    ),
    Intent.LATER: (
        "Hi {{ first_name }},\n\nunderstood, thank you. I will get back to you"
        "{% if date %} around {{ date }}{% else %} later{% endif %}.\n\nBest,\n{{ sender }}\n"
    ),
    Intent.NOT_INTERESTED: (
        "Hi {{ first_name }},\n\nthank you for letting me know. I will not follow up again.\n\n"
        "All the best,\n{{ sender }}\n"
    ),
    Intent.UNSUBSCRIBE: (
        "Hi {{ first_name }},\n\nyou will not hear from us again. Sorry for the trouble.\n\n{{ sender }}\n"
    ),
    Intent.WRONG_PERSON: (
        "Hi {{ first_name }},\n\nthanks for the reply, and sorry for the misdirected note. Who at "
        "{{ company }} would be the right person to talk to about this?\n\nBest,\n{{ sender }}\n"
    ),
    Intent.OUT_OF_OFFICE: (
        "Hi {{ first_name }},\n\nno rush; I will follow up when you are back.\n\nBest,\n{{ sender }}\n"
    ),
    Intent.OTHER: "Hi {{ first_name }},\n\nthank you for your reply. \n\nBest,\n{{ sender }}\n",
}


@dataclass(frozen=True, slots=True)
class Draft:
    subject: str
    body: str
    source: str  # "template", "campaign" (a campaign's own template) or "model"
    #: Set when the campaign's own template failed and the built-in one is shown instead.
    note: str = ""


_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_PROPOSAL = re.compile(
    r"\b(?P<day>" + "|".join(_DAYS) + r"|tomorrow)\b"
    r"(?:[ ,]+(?P<at>at|around|@)?\s*(?P<hour>[01]?\d|2[0-3])(?:[:.](?P<minute>[0-5]\d))?\s*"
    r"(?P<half>am\b|pm\b|a\.m\.|p\.m\.)?)?",
    re.IGNORECASE,
)


def proposed_time(text: str) -> str:
    """The first day they suggested, with its time when they gave one ("Thursday at 10:00",
    "Friday"), read from their own words (quoted lines left out); "" when they named none. The
    draft then follows their proposal instead of offering other days."""
    own = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(">"))
    found = _PROPOSAL.search(own[:4000])
    if found is None:
        return ""
    day = found["day"].capitalize()
    # A bare number after the day is a date ("Thursday 20 March"), not a time.
    if found["hour"] is None or not (found["at"] or found["minute"] or found["half"]):
        return day
    hour, minute = int(found["hour"]), int(found["minute"] or 0)
    half = (found["half"] or "").replace(".", "").lower()
    if half == "pm" and hour < 12:
        hour += 12
    elif half == "am" and hour == 12:
        hour = 0
    return f"{day} at {hour:02d}:{minute:02d}"


def reply_subject(subject: str | None) -> str:
    """`Re: <their subject>`, with one Re: however many prefixes it had; CR/LF refused."""
    base = normalize_subject(subject or "") or "your message"
    return check_header_value("subject", f"Re: {base}")[:900]


def template_draft(
    intent: Intent, values: Mapping[str, str], overrides: Mapping[str, str] | None = None
) -> Draft:
    """The draft for `intent`: the campaign's template when it has one and it renders, else ours
    (with a note naming why the campaign's was not used)."""
    own = (overrides or {}).get(intent.value)
    known = {name: values.get(name, "") or "" for name in DRAFT_FIELDS}
    subject = reply_subject(values.get("subject"))
    if own is not None:
        try:
            return Draft(
                subject, render(own, known, f"campaign.drafts.{intent.value}", blanks=True), "campaign"
            )
        except TemplateError as exc:
            return builtin_draft(intent, known, subject, note=f"{exc}. The built-in draft is shown instead.")
    return builtin_draft(intent, known, subject)


def builtin_draft(intent: Intent, values: Mapping[str, str], subject: str, *, note: str = "") -> Draft:
    """Our own draft for `intent`; its templates print only the fields they are given."""
    known = {name: values.get(name, "") or "" for name in DRAFT_FIELDS}
    return Draft(
        subject,
        render(DEFAULT_TEMPLATES[intent], known, f"draft {intent.value}", blanks=True),
        "template",
        note,
    )
