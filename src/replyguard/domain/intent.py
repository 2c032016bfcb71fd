"""The intent of a human reply, by offline rules: what the person who answered wants.

Contract: `detect_intent(text, subject, sent=..., own_addresses=...)` reads only the sender's
new text (quotes and signature already stripped) and returns one `IntentResult`. Rules are
phrase families in en, de, fr, es, nl, it, pt, sv and pl (domain/intent_phrases.py), tried
strongest first: an absence note that carries no automatic headers (the classifier took it,
safely, for a person), an unsubscribe request, a referral (a named person and an address that
is not the sender's), the wrong person, not now / later, not interested, interested or a
meeting, a question, else other. Intent never changes a lead by itself: it only shapes the
recommended next step and the draft a person sees.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from datetime import date, datetime

from replyguard.domain import intent_phrases as ip
from replyguard.domain.inbound import phrases
from replyguard.domain.inbound.returndate import find_return_date, parse_span


class Intent(enum.StrEnum):
    INTERESTED = "interested"  # interested, or asks for a meeting
    QUESTION = "question"
    REFERRAL = "referral"
    LATER = "later"  # not now; maybe with a date
    NOT_INTERESTED = "not_interested"
    UNSUBSCRIBE = "unsubscribe"
    WRONG_PERSON = "wrong_person"
    OUT_OF_OFFICE = "out_of_office"  # "looks like an out-of-office": absence words, no headers
    OTHER = "other"


#: What a person reads for each intent.
LABELS: dict[Intent, str] = {
    Intent.INTERESTED: "interested / meeting",
    Intent.QUESTION: "question",
    Intent.REFERRAL: "referral",
    Intent.LATER: "not now / later",
    Intent.NOT_INTERESTED: "not interested",
    Intent.UNSUBSCRIBE: "unsubscribe request",
    Intent.WRONG_PERSON: "wrong person",
    Intent.OUT_OF_OFFICE: "looks like an out-of-office",
    Intent.OTHER: "other",
}


@dataclass(frozen=True, slots=True)
class IntentResult:
    intent: Intent
    evidence: tuple[str, ...] = ()
    language: str | None = None
    referral_name: str | None = None
    referral_address: str | None = None
    date: date | None = None  # LATER: when to come back; OUT_OF_OFFICE: the first day back
    pricing: bool = False  # a QUESTION about price

    def to_json(self) -> dict[str, object]:
        return {
            "intent": self.intent.value,
            "label": LABELS[self.intent],
            "evidence": list(self.evidence),
            "language": self.language,
            "referral_name": self.referral_name,
            "referral_address": self.referral_address,
            "date": self.date.isoformat() if self.date else None,
            "pricing": self.pricing,
        }


_EMAIL = re.compile(r"[\w.+'-]+@[\w-]+(?:\.[\w-]+)+", re.UNICODE)
_CAP = r"[A-ZÀ-ÖØ-ÞĀ-ŽŁŚŻŹĆŃ][\w'’.-]*"
# "Sam Ruiz <sruiz@x>", "Sam Ruiz (sruiz@x)", "Sam Ruiz at sruiz@x", "Sam Ruiz: sruiz@x".
_NAME_BEFORE = re.compile(
    rf"({_CAP}(?:[ \t]+(?:(?:van|von|de|da|del|der|den|la|le|di|dos)[ \t]+)?{_CAP}){{0,3}})"
    r"[ \t]*(?:[<(\[]|,|:|-|–|\bat\b|\bunter\b|\bà\b|\bem\b|\bpå\b|\bna\b|\bop\b|\ba\b|\bvia\b)?[ \t]*$"
)
# Capitalised words that start sentences or name roles, not people.
_NOT_NAMES = frozenset(
    [
        "please",
        "contact",
        "reach",
        "talk",
        "speak",
        "write",
        "email",
        "mail",
        "hi",
        "hello",
        "thanks",
        "thank",
        "best",
        "regards",
        "kind",
        "our",
        "my",
        "the",
        "your",
        "she",
        "he",
        "they",
        "colleague",
        "kollege",
        "kollegin",
        "kollegen",
        "bitte",
        "wenden",
        "sie",
        "mit",
        "contactez",
        "veuillez",
        "merci",
        "hable",
        "contacte",
        "con",
        "neem",
        "contact",
        "op",
        "contatti",
        "fale",
        "com",
        "kontakta",
        "prata",
        "med",
        "proszę",
        "skontaktuj",
        "się",
        "z",
        "cc",
        "ik",
        "je",
        "yo",
        "io",
        "eu",
        "jag",
        "ja",
        "ich",
        "i",
    ]
)


def detect_intent(
    text: str,
    subject: str = "",
    *,
    sent: datetime | None = None,
    own_addresses: frozenset[str] = frozenset(),
) -> IntentResult:
    """Classify the new text of a human reply; see the module docstring for the order."""
    head = (text or "")[:4000]
    lowered = head.lower()
    absence = _absence(head, subject, lowered, sent)
    if absence is not None:
        return absence
    unsubscribe = phrases.first_match(ip.UNSUBSCRIBE, lowered)
    if unsubscribe:
        return IntentResult(Intent.UNSUBSCRIBE, (f"intent:{unsubscribe}:unsubscribe",), unsubscribe)
    wrong = phrases.first_match(ip.WRONG_PERSON, lowered)
    referral = _referral(head, lowered, own_addresses, wrong)
    if referral is not None:
        return referral
    if wrong:
        return IntentResult(Intent.WRONG_PERSON, (f"intent:{wrong}:wrong-person",), wrong)
    later = phrases.first_match(ip.LATER, lowered)
    if later:
        when = _later_date(lowered, later, sent)
        evidence = (f"intent:{later}:later",) + (("intent:date",) if when else ())
        return IntentResult(Intent.LATER, evidence, later, date=when)
    refusal = phrases.first_match(ip.NOT_INTERESTED, lowered)
    if refusal:
        return IntentResult(Intent.NOT_INTERESTED, (f"intent:{refusal}:not-interested",), refusal)
    return _interest_or_question(lowered)


def _interest_or_question(lowered: str) -> IntentResult:
    interest = phrases.first_match(ip.INTERESTED, lowered)
    meeting = phrases.first_match(ip.MEETING, lowered)
    asks = "?" in lowered or "¿" in lowered
    question = phrases.first_match(ip.QUESTION, lowered)
    pricing = bool(ip.PRICING.search(lowered))
    if asks and (question or pricing) and not meeting:
        lang = question or interest
        return IntentResult(Intent.QUESTION, (f"intent:{lang}:question",), lang, pricing=pricing)
    if interest or meeting:
        lang = interest or meeting
        return IntentResult(Intent.INTERESTED, (f"intent:{lang}:interested",), lang, pricing=pricing)
    if asks:
        return IntentResult(Intent.QUESTION, ("intent:question-mark",), question, pricing=pricing)
    return IntentResult(Intent.OTHER, ("intent:none",))


def _absence(head: str, subject: str, lowered: str, sent: datetime | None) -> IntentResult | None:
    """Absence words in a message that had no automatic headers. Only with a return date, or
    when nothing else in the text reads like an answer: a person may well mention a holiday."""
    lang = phrases.first_match(phrases.OOO, lowered) or phrases.first_match(phrases.OOO, subject.lower())
    if lang is None:
        return None
    back, rule = find_return_date(head, subject, sent, "", lang)
    answering = any(
        phrases.first_match(family, lowered)
        for family in (ip.INTERESTED, ip.MEETING, ip.NOT_INTERESTED, ip.UNSUBSCRIBE, ip.WRONG_PERSON)
    )
    if back is None and (answering or "?" in lowered):
        return None
    evidence = (f"intent:{lang}:absence",) + ((rule,) if rule else ())
    return IntentResult(Intent.OUT_OF_OFFICE, evidence, lang, date=back)


def _referral(head: str, lowered: str, own: frozenset[str], wrong: str | None) -> IntentResult | None:
    phrase = phrases.first_match(ip.REFERRAL, lowered)
    if phrase is None and wrong is None:
        return None
    for match in _EMAIL.finditer(head):
        address = match.group(0).strip(".").lower()
        if address in own:
            continue
        name = _name_before(head[max(0, match.start() - 80) : match.start()])
        lang = phrase or wrong
        return IntentResult(
            Intent.REFERRAL,
            (f"intent:{lang}:referral",),
            lang,
            referral_name=name,
            referral_address=address,
        )
    return None


def _name_before(prefix: str) -> str | None:
    line = prefix.splitlines()[-1] if prefix.strip() else ""
    found = _NAME_BEFORE.search(line)
    if not found:
        return None
    words = found.group(1).split()
    while words and words[0].lower().strip(".,:") in _NOT_NAMES:
        words = words[1:]
    name = " ".join(words).strip(" ,:-–")
    return name or None


def _later_date(lowered: str, lang: str, sent: datetime | None) -> date | None:
    """The first plausible date written after a "when" word, read in the reply's language."""
    if sent is None:
        return None
    for anchor_lang, pattern in ip.LATER_DATE_ANCHORS:
        if anchor_lang not in (lang, "en"):
            continue
        for match in pattern.finditer(lowered):
            span = lowered[match.end() :]
            found = parse_span(span, anchor_lang, sent)
            if found is not None and found > sent.date():
                # "in March" names a month, not a day: come back at its start.
                first = found.replace(day=1)
                return found if _DIGIT.search(span[:12]) or first <= sent.date() else first
    return None


_DIGIT = re.compile(r"\d")
