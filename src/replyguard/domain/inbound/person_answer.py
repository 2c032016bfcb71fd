"""An automatic message that carries a person's answer: a helpdesk or CRM tool sending what an
agent typed, marked `Auto-Submitted: auto-generated` like every message the tool sends.

Contract: `person_answer(new_text, subject, replying=...)` returns evidence when the message
answers something (it has In-Reply-To or References) and its new text reads as interest, a
meeting or a question in words (the intent phrase families), with none of the wording only a
responder uses ("this is an automated reply", "your ticket was received"). A bare question
mark is not enough: ticket receipts ask "Need help?". The message stays an auto-reply; the
reply policy holds the lead for a person when it came in our thread, because a missed answer
costs more than a held lead.
"""

from __future__ import annotations

from replyguard.domain.inbound import phrases

_ANSWERS = frozenset({"interested", "question"})
# What a ticket receipt says about itself, in the languages of the intent phrases.
_RECEIPT = phrases.compile_lower(
    r"\b(?:ticket|case|request|inquiry|enquiry|anfrage|demande|solicitud|richiesta|zgłoszenie)\b"
    r"[^.\n]{0,40}\b(?:received|created|opened|logged|erhalten|eingegangen|reçue|recibida|ricevuta|"
    r"przyjęte|otrzymali)|\bwe (?:have )?received your\b|\bhelp ?(?:centre|center)\b|"
    r"\bknowledge ?base\b|\bticket (?:number|id|#)"
)


def person_answer(new_text: str, subject: str, *, replying: bool) -> str | None:
    """`auto:reads-as-person:<intent>` when the new text reads as a person's answer, else None."""
    head = new_text[:1500]
    lowered = head.lower()
    if (
        not replying
        or not head.strip()
        or phrases.first_match(phrases.AUTO_BODY, lowered)
        or _RECEIPT.search(lowered)
    ):
        return None
    # Imported here: domain.intent reads domain.inbound's phrases, whose package imports this.
    from replyguard.domain.intent import detect_intent  # noqa: PLC0415 (domain.intent imports this package)

    found = detect_intent(head, subject)
    if found.intent.value not in _ANSWERS or found.evidence == ("intent:question-mark",):
        return None
    return f"auto:reads-as-person:{found.intent.value}"
