"""Draft answers a person may edit and send: one template per intent, overridable per campaign.

A draft is only text. Nothing in replyguard sends it on its own (PRODUCT.md invariant 6):
`service_layer/person_send.py` sends what a person submits, and nothing else calls it.
Templates are sandboxed Jinja2 over the fields in `DRAFT_FIELDS`; a campaign may replace any of
them under `[campaign.drafts]` (keys are intent names, see `domain/intent.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from jinja2 import TemplateError
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

from replyguard.domain.addresses import check_header_value
from replyguard.domain.inbound.subjects import normalize_subject
from replyguard.domain.intent import Intent
from replyguard.domain.templates import STANDARD_FIELDS

DRAFT_FIELDS: frozenset[str] = STANDARD_FIELDS | {
    "sender",
    "product",
    "referral_name",
    "referral_address",
    "date",
    "subject",
}

DEFAULT_TEMPLATES: dict[str, str] = {
    Intent.INTERESTED: (
        "Hi {{ first_name }},\n\nthank you, glad to hear it. Would Tuesday at 10:00 or Thursday at 15:00 "
        "work for a 20 minute call? Happy to adapt to your calendar.\n\nBest,\n{{ sender }}\n"
    ),
    Intent.QUESTION: (
        "Hi {{ first_name }},\n\nthanks for asking. [Your answer here.]\n\n"
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

_ENV = SandboxedEnvironment(autoescape=False, keep_trailing_newline=True)


@dataclass(frozen=True, slots=True)
class Draft:
    subject: str
    body: str
    source: str  # "template", "campaign" (a campaign's own template) or "model"


def reply_subject(subject: str | None) -> str:
    """`Re: <their subject>`, with one Re: however many prefixes it had; CR/LF refused."""
    base = normalize_subject(subject or "") or "your message"
    return check_header_value("subject", f"Re: {base}")[:900]


def template_draft(
    intent: Intent, values: Mapping[str, str], overrides: Mapping[str, str] | None = None
) -> Draft:
    """The draft for `intent`: the campaign's template when it has one, else ours."""
    own = (overrides or {}).get(intent.value)
    source = own if own is not None else DEFAULT_TEMPLATES[intent]
    known = {name: values.get(name, "") or "" for name in DRAFT_FIELDS}
    subject = reply_subject(values.get("subject"))
    try:
        body = _ENV.from_string(source).render(**known)
    except (TemplateError, SecurityError):
        # A campaign template that the sandbox refuses at render time: ours instead.
        body = _ENV.from_string(DEFAULT_TEMPLATES[intent]).render(**known)
        return Draft(subject, body, "template")
    return Draft(subject, body, "campaign" if own is not None else "template")
