"""Which lead an inbound message belongs to, strongest evidence first (PRODUCT.md, Matching).

1. a signed unsubscribe address of ours among the recipients;
2. our Message-IDs in In-Reply-To / References (stored before the send, so instant replies
   match) — a new sender address proven this way is learned as the contact's alternate;
3. the original message inside a bounce, or its failed recipient;
4. any known address of a contact, case-insensitive, `+tag` tolerant;
5. weaker evidence — a subject of ours (Re:/AW:/SV:/... stripped) or the same company
   domain — gives only a *probable* match: a person confirms.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.message import Message
from email.utils import getaddresses

from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.domain.addresses import InvalidAddress, base_address, domain_of, normalize_address
from replyguard.domain.inbound.classify import Classification
from replyguard.domain.inbound.parse import header
from replyguard.domain.inbound.subjects import subject_key
from replyguard.domain.message_ids import check_unsubscribe_token, send_keys_in
from replyguard.domain.states import ReplyKind, ReplyState, StepState
from replyguard.service_layer.leads import contact_for_address
from replyguard.service_layer.uow import UnitOfWork

RECIPIENT_HEADERS = (
    "to",
    "cc",
    "delivered-to",
    "x-original-to",
    "envelope-to",
    "x-forwarded-to",
    "resent-to",
)
FREEMAIL = frozenset(
    {
        "gmail.com",
        "googlemail.com",
        "yahoo.com",
        "yahoo.co.uk",
        "outlook.com",
        "hotmail.com",
        "live.com",
        "msn.com",
        "icloud.com",
        "me.com",
        "mac.com",
        "aol.com",
        "gmx.de",
        "gmx.net",
        "web.de",
        "proton.me",
        "protonmail.com",
        "yandex.ru",
        "mail.ru",
        "zoho.com",
        "fastmail.com",
        "orange.fr",
        "free.fr",
        "libero.it",
        "t-online.de",
        "qq.com",
        "163.com",
    }
)
_PROBABLE_LIMIT = 20


@dataclass(frozen=True, slots=True)
class Match:
    status: str  # matched | probable | unmatched
    lead_ids: tuple[int, ...] = ()
    evidence: tuple[str, ...] = ()
    kind_override: ReplyKind | None = None


def recipients_of(msg: Message) -> list[str]:
    found: list[str] = []
    for name in RECIPIENT_HEADERS:
        value = header(msg, name)
        if value:
            found += [a.strip().lower() for _n, a in getaddresses([value]) if "@" in a]
    return found


def match_message(uow: UnitOfWork, c: Classification, recipients: list[str], subject: str) -> Match:
    for finder in (_by_unsubscribe_address, _by_thread, _by_bounce, _by_address):
        found = finder(uow, c, recipients)
        if found is not None:
            return found
    return _probable(uow, c, subject)


def _by_unsubscribe_address(uow: UnitOfWork, c: Classification, recipients: list[str]) -> Match | None:
    if not any("+unsubscribe-" in address for address in recipients):
        return None
    secret = uow.session.get_one(m.Workspace, uow.workspace_id).secret
    for address in recipients:
        local = address.partition("@")[0]
        _, tagged, token = local.partition("+unsubscribe-")
        if not tagged:
            continue
        key = check_unsubscribe_token(secret, token)
        lead_id = _lead_of_key(uow, key) if key else None
        if lead_id is not None:
            return Match("matched", (lead_id,), ("match:unsubscribe-address",), ReplyKind.UNSUBSCRIBE)
    return None


def _by_thread(uow: UnitOfWork, c: Classification, recipients: list[str]) -> Match | None:
    keys = send_keys_in(c.in_reply_to or "") + send_keys_in(" ".join(c.references))
    for key in dict.fromkeys(keys):
        lead_id = _lead_of_key(uow, key)
        if lead_id is None:
            continue
        evidence = ["match:thread"]
        if c.kind not in (ReplyKind.BOUNCE_HARD, ReplyKind.BOUNCE_SOFT) and _learn_alternate(uow, lead_id, c):
            evidence.append("match:learned-alternate")
        return Match("matched", (lead_id,), tuple(evidence))
    return None


def _by_bounce(uow: UnitOfWork, c: Classification, recipients: list[str]) -> Match | None:
    if c.bounce is None:
        return None
    for key in send_keys_in(c.bounce.original_message_id or ""):
        lead_id = _lead_of_key(uow, key)
        if lead_id is not None:
            return Match("matched", (lead_id,), ("match:bounce-original",))
    if c.bounce.recipient:
        lead_id = _lead_for_address(uow, c.bounce.recipient, recipients)
        if lead_id is not None:
            return Match("matched", (lead_id,), ("match:bounce-recipient",))
    return None


def _by_address(uow: UnitOfWork, c: Classification, recipients: list[str]) -> Match | None:
    if not c.from_address or c.bounce is not None:
        return None
    lead_id = _lead_for_address(uow, c.from_address, recipients)
    return Match("matched", (lead_id,), ("match:address",)) if lead_id is not None else None


def _lead_of_key(uow: UnitOfWork, key: str) -> int | None:
    return uow.session.scalar(
        select(m.Step.lead_id).where(m.Step.workspace_id == uow.workspace_id, m.Step.send_key == key)
    )


def _lead_for_address(uow: UnitOfWork, address: str, recipients: list[str]) -> int | None:
    """The contact's lead in the product whose mailbox received the message; else the lead
    we wrote to last; else any lead of the contact."""
    try:
        contact = contact_for_address(uow, address)
    except InvalidAddress:
        return None
    if contact is None:
        return None
    mailboxes = {base_address(r) for r in recipients}
    rows = uow.session.execute(
        select(m.Lead.id, m.Mailbox.address, m.Step.sent_at)
        .outerjoin(m.Step, m.Step.lead_id == m.Lead.id)
        .outerjoin(m.Mailbox, m.Mailbox.id == m.Step.mailbox_id)
        .where(m.Lead.contact_id == contact.id, m.Lead.workspace_id == uow.workspace_id)
    ).all()
    if not rows:
        return None
    by_mailbox = [lead for lead, mailbox, _ in rows if mailbox in mailboxes]
    if len(set(by_mailbox)) == 1:
        return by_mailbox[0]
    sent = sorted(((sent_at, lead) for lead, _, sent_at in rows if sent_at is not None), reverse=True)
    return sent[0][1] if sent else min(lead for lead, _, _ in rows)


def _learn_alternate(uow: UnitOfWork, lead_id: int, c: Classification) -> bool:
    """A reply in our thread from an unknown address: that address belongs to the contact."""
    try:
        address = normalize_address(c.from_address or "")
    except InvalidAddress:
        return False
    taken = uow.session.scalar(
        select(m.ContactAddress.id).where(
            m.ContactAddress.workspace_id == uow.workspace_id,
            m.ContactAddress.address.in_({address, base_address(address)}),
        )
    )
    if taken is not None:
        return False
    contact_id = uow.session.get_one(m.Lead, lead_id).contact_id
    uow.session.add(
        m.ContactAddress(
            workspace_id=uow.workspace_id,
            contact_id=contact_id,
            address=address,
            domain=domain_of(address),
            is_primary=False,
        )
    )
    uow.add_event("alternate_learned", lead_id=lead_id, address=address)
    return True


def _probable(uow: UnitOfWork, c: Classification, subject: str) -> Match:
    candidates: dict[int, str] = {}
    key = subject_key(c.subject or subject)[:200]
    if key:
        for lead_id in uow.session.scalars(
            select(m.Step.lead_id)
            .where(
                m.Step.workspace_id == uow.workspace_id,
                m.Step.subject_key == key,
                m.Step.state == StepState.SENT,
            )
            .distinct()
            .limit(_PROBABLE_LIMIT)
        ):
            candidates.setdefault(lead_id, "match:probable-subject")
    domain = domain_of(c.from_address or "")
    if domain and domain not in FREEMAIL:
        for lead_id in uow.session.scalars(
            select(m.Lead.id)
            .join(m.ContactAddress, m.ContactAddress.contact_id == m.Lead.contact_id)
            .where(
                m.ContactAddress.workspace_id == uow.workspace_id,
                m.ContactAddress.domain == domain,
                m.Lead.reply_state.in_([ReplyState.ACTIVE, ReplyState.OUT_OF_OFFICE]),
            )
            .distinct()
            .limit(_PROBABLE_LIMIT)
        ):
            candidates.setdefault(lead_id, "match:probable-domain")
    if not candidates:
        return Match("unmatched")
    return Match("probable", tuple(sorted(candidates)), tuple(sorted(set(candidates.values()))))
