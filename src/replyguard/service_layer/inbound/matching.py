"""Which lead an inbound message belongs to, and who is speaking (PRODUCT.md, Matching).

0. our own mail is never a reply: a message whose own Message-ID is one we sent, or whose
   From is one of our mailboxes, is `ours` — unless it claims our mailbox and fails
   authentication, which makes it `suspect` (kept for a person);
1. a signed unsubscribe address of ours among the recipients (the token is the authority);
   our signed return path (VERP, message_ids.bounce_address): a bounce or auto-reply to one send;
2. our Message-IDs in In-Reply-To / References (stored before the send, so instant replies
   match). Then who is speaking: the thread lead's own address — her reply; another known
   contact — THAT contact's reply (a known lead is a fact), and the thread's lead is named so
   the caller can hold her; a sender we do not know — the thread lead's reply, marked
   `sender_known=False`: it stops her, but teaches nothing and unsubscribes no one until a
   person confirms (service_layer/inbound/confirmations.py);
3. the original message inside a bounce or a spam complaint, or the address that bounced or
   complained (a complaint comes from the provider: its From is nobody's). A bounce or a
   complaint tied to a lead only by an address is a claim anyone could write: what it may do
   is the trust table's (domain/trust.py), which the caller applies;
4. any known address of a contact, case-insensitive, `+tag` tolerant;
5. weaker evidence — a subject of ours (Re:/AW:/SV:/... stripped) or the same company
   domain — gives only a *probable* match: a person confirms.

Nothing here writes: matching only reads, so that the caller decides the whole effect in
one place (service_layer/inbound/apply.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from email.message import Message
from email.utils import getaddresses
from typing import Any, cast

from sqlalchemy import Table, bindparam, select

from replyguard.adapters.db import models as m
from replyguard.domain.addresses import InvalidAddress, base_address, domain_of, normalize_address
from replyguard.domain.authentication import Verdict
from replyguard.domain.inbound.classify import Classification
from replyguard.domain.inbound.parse import raw_header
from replyguard.domain.inbound.subjects import subject_key
from replyguard.domain.message_ids import (
    BOUNCE_TAG,
    check_bounce_token,
    check_unsubscribe_token,
    normalize_message_id,
    send_key_of,
    send_keys_in,
)
from replyguard.domain.states import ReplyKind, ReplyState, StepState
from replyguard.domain.trust import Binding
from replyguard.service_layer.inbound.effects import HOLDER_COLUMNS, Holder, holder_params
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

# The statements every message runs, built once at import: building a statement costs more
# CPU than running it. Bound values: `workspace`, and what each one looks up. An address is
# looked up under its two storable forms (`_forms_of`), bound as `address` and `base`: two
# fixed parameters rather than an expanding list, whose SQL is rendered again at every call.

#: Their tables: a select of a table's columns runs as Core, without the ORM's per-call work
#: for entity attributes (a third of the thread read's client CPU, measured on PostgreSQL).
_STEPS, _LEADS, _MAILBOXES, _ADDRESSES = (
    cast(Table, model.__table__) for model in (m.Step, m.Lead, m.Mailbox, m.ContactAddress)
)
#: The lead a send key of ours was sent to.
_LEAD_OF_KEY = select(_STEPS.c.lead_id).where(
    _STEPS.c.workspace_id == bindparam("workspace"), _STEPS.c.send_key == bindparam("key")
)
#: One of this workspace's mailboxes under the forms of an address.
_OUR_MAILBOX = select(_MAILBOXES.c.id).where(
    _MAILBOXES.c.workspace_id == bindparam("workspace"),
    _MAILBOXES.c.address.in_([bindparam("address"), bindparam("base")]),
)
#: The contact owning an address (under its forms).
_CONTACT_OF = select(_ADDRESSES.c.contact_id).where(
    _ADDRESSES.c.workspace_id == bindparam("workspace"),
    _ADDRESSES.c.address.in_([bindparam("address"), bindparam("base")]),
)
#: The lead's addresses in `_THREAD_READ`, named apart from the speaker's in `_CONTACT_OF`.
_HER_ADDRESS = _ADDRESSES.alias("her_address")
#: The lead of the send `key` (a thread of ours), one row per address of her contact (the
#: primary first), each with the contact of the speaker's address (None: a stranger) and
#: whether that address is one of our mailboxes (None: it is not), and the copy that took
#: the message's effect key (effects.py; read after the wait for it). Who speaks is asked of
#: every thread match but a bounce's, whether it is us of every message but a bounce, her
#: addresses of every match that is hers (apply.py weighs the sender's authentication against
#: them), the key's holder of every message: all are read with the thread, not after it.
_THREAD_READ = (
    select(
        _LEADS.c.id,
        _LEADS.c.contact_id,
        _LEADS.c.product_id,
        _CONTACT_OF.limit(1).scalar_subquery(),
        _OUR_MAILBOX.limit(1).scalar_subquery(),
        *HOLDER_COLUMNS,
        _HER_ADDRESS.c.address,
    )
    .join(_STEPS, _STEPS.c.lead_id == _LEADS.c.id)
    .outerjoin(
        _HER_ADDRESS,
        (_HER_ADDRESS.c.contact_id == _LEADS.c.contact_id)
        & (_HER_ADDRESS.c.workspace_id == bindparam("workspace")),
    )
    .where(_STEPS.c.workspace_id == bindparam("workspace"), _STEPS.c.send_key == bindparam("key"))
    .order_by(_HER_ADDRESS.c.is_primary.desc(), _HER_ADDRESS.c.id)
)


@dataclass(frozen=True, slots=True)
class _Thread:
    """One `_THREAD_READ`: the lead we sent a send key to, and who the From is to us."""

    lead_id: int
    contact_id: int
    product_id: int
    #: The contact owning the From's address; None: nobody we know.
    speaker: int | None
    #: The From's address is one of our mailboxes.
    ours: bool
    #: Every address of the lead's contact, the primary first.
    addresses: tuple[str, ...]
    #: The copy that took the message's effect key, as read with the thread.
    holder: Holder


@dataclass(frozen=True, slots=True)
class Match:
    status: str  # matched | probable | unmatched | ours | suspect
    lead_ids: tuple[int, ...] = ()
    evidence: tuple[str, ...] = ()
    kind_override: ReplyKind | None = None
    #: The sender is the matched lead's own address, or the match itself is the authority
    #: (our signed unsubscribe address, a bounce's original). False: a stranger in her thread.
    sender_known: bool = True
    #: The lead whose thread it was, when another known lead spoke in it.
    thread_lead_id: int | None = None
    #: It references a Message-ID we sent to the matched lead: written after that email.
    in_thread: bool = False
    #: What ties it to an email we sent (domain/trust.py); NONE: only an address names her.
    binding: Binding = Binding.NONE
    #: Every address of the matched lead's contact, the primary first, when the match read
    #: them with the lead (a thread's); None: not read.
    addresses: tuple[str, ...] | None = None
    #: The copy that took the message's effect key, when the match read it (a thread's);
    #: None: not read (effects.claim_effect reads it).
    holder: Holder | None = None


def recipients_of(msg: Message) -> list[str]:
    found: list[str] = []
    for name in RECIPIENT_HEADERS:
        # Raw values: a decoded display name could pass for one of our addresses.
        value = raw_header(msg, name)
        if value:
            found += [a.strip().lower() for _n, a in getaddresses([value]) if "@" in a]
    return found


def match_message(
    uow: UnitOfWork,
    c: Classification,
    recipients: list[str],
    subject: str,
    verdict: Verdict = Verdict.NONE,
    holder: dict[str, Any] | None = None,
) -> Match:
    """`holder`: the parameters of the effect key's holder (effects.holder_params), read with
    the thread when the message has one: call effects.wait_for_copies before."""
    holder = holder or holder_params(None, 0)
    own = _by_own_message_id(uow, c)
    if own is not None:
        return own
    # Unless the message is addressed to a token of ours (read first, below), the thread is
    # next: read now, it answers with it whether the From is one of our mailboxes.
    thread = None if _to_a_token(recipients) else _thread_of(uow, c, holder)
    if c.bounce is None and c.from_address:
        ours = thread.ours if thread is not None else is_our_mailbox(uow, c.from_address)
        if ours:
            return replace(_by_own_mailbox(verdict), holder=thread.holder if thread is not None else None)
    for finder in (_by_unsubscribe_address, _by_return_path):
        found = finder(uow, c, recipients)
        if found is not None:
            return found
    if thread is None and _to_a_token(recipients):
        thread = _thread_of(uow, c, holder)
    found = _by_thread(uow, c, recipients, thread)
    if found is not None:
        return found
    found = _by_bounce(uow, c, recipients, holder)
    if found is not None:
        return found
    found = _by_address(uow, c, recipients)
    if found is not None:
        return found
    complained = _by_complaint(uow, c, recipients, holder)
    return complained if complained is not None else _probable(uow, c, subject)


def _by_own_message_id(uow: UnitOfWork, c: Classification) -> Match | None:
    """Our sent mail read back (a Sent folder, Gmail's All Mail, a Bcc to ourselves), by its
    Message-ID."""
    own_id = normalize_message_id(c.message_id or "")
    own_key = send_key_of(own_id) if own_id else None
    if own_key and _lead_of_key(uow, own_key) is not None:
        # The id is an HMAC of our secret: only we, or someone who received it from us,
        # can write it, and neither makes it a reply.
        return Match("ours", evidence=("ours:message-id",))
    return None


def _by_own_mailbox(verdict: Verdict) -> Match:
    """Our sent mail read back, by its From (one of our mailboxes) — or a forgery of it."""
    if verdict is Verdict.FAIL:
        return Match("suspect", evidence=("ours:from-mailbox", "ours:authentication-failed"))
    return Match("ours", evidence=("ours:from-mailbox",))


def _to_a_token(recipients: list[str]) -> bool:
    """Addressed to a signed address of ours (an unsubscribe address, our return path)."""
    return any("+unsubscribe-" in address or BOUNCE_TAG in address for address in recipients)


def is_our_mailbox(uow: UnitOfWork, address: str) -> bool:
    """Whether `address` (or its `+tag`-less form) is one of this workspace's mailboxes."""
    forms = _forms_of(address)
    if forms["address"] is None:
        return False
    found = uow.session.scalar(_OUR_MAILBOX, {"workspace": uow.workspace_id, **forms})
    return found is not None


def _forms_of(address: str | None) -> dict[str, str | None]:
    """The forms under which `address` may be stored, as the statements' `address` and `base`:
    normalised, and without its `+tag` (the same twice for an address without one); None
    for an address that is not one, which matches nothing."""
    try:
        normal = normalize_address(address or "")
    except InvalidAddress:
        return {"address": None, "base": None}
    return {"address": normal, "base": base_address(normal)}


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
            return Match(
                "matched",
                (lead_id,),
                ("match:unsubscribe-address",),
                ReplyKind.UNSUBSCRIBE,
                in_thread=True,
                binding=Binding.TOKEN,
            )
    return None


#: Kinds that speak for the mailbox system, not a person: sent to the return path, they are
#: what the return path is for (a bounce, an RFC 3834 auto-reply).
_SYSTEM_KINDS = frozenset(
    {ReplyKind.BOUNCE_HARD, ReplyKind.BOUNCE_SOFT, ReplyKind.OUT_OF_OFFICE, ReplyKind.AUTO_REPLY}
)


def _by_return_path(uow: UnitOfWork, c: Classification, recipients: list[str]) -> Match | None:
    """Our signed return path (VERP) among the recipients: the message answers that send.
    A person writing to it speaks for the lead only from one of her addresses."""
    if not any(BOUNCE_TAG in address for address in recipients):
        return None
    secret = uow.session.get_one(m.Workspace, uow.workspace_id).secret
    for address in recipients:
        _, tagged, token = address.partition("@")[0].partition(BOUNCE_TAG)
        key = check_bounce_token(secret, token) if tagged else None
        lead_id = _lead_of_key(uow, key) if key else None
        if lead_id is None:
            continue
        known = c.kind in _SYSTEM_KINDS or c.complaint is not None
        if not known:
            lead = uow.session.get_one(m.Lead, lead_id)
            known = _contact_id_of(uow, c.from_address) == lead.contact_id
        evidence = ("match:return-path",) if known else ("match:return-path", "match:unknown-sender")
        verp = Binding.VERP
        return Match("matched", (lead_id,), evidence, sender_known=known, in_thread=True, binding=verp)
    return None


def _thread_of(uow: UnitOfWork, c: Classification, holder: dict[str, Any]) -> _Thread | None:
    """The thread of ours the message answers: the first of its In-Reply-To and References
    that is a send of ours."""
    keys = send_keys_in(c.in_reply_to or "") + send_keys_in(" ".join(c.references))
    speaker_forms = _forms_of(c.from_address)
    for key in dict.fromkeys(keys):
        thread = _read_thread(uow, key, speaker_forms, holder)
        if thread is not None:
            return thread
    return None


def _read_thread(
    uow: UnitOfWork, key: str, speaker_forms: dict[str, str | None], holder: dict[str, Any]
) -> _Thread | None:
    params = {"workspace": uow.workspace_id, "key": key, **speaker_forms, **holder}
    rows = uow.session.execute(_THREAD_READ, params).all()
    if not rows:
        return None
    lead_id, contact_id, product_id, speaker, mailbox, holder_id, holder_lead, _ = rows[0]
    addresses = tuple(row.address for row in rows if row.address is not None)
    first = Holder.of(holder_id, holder_lead)
    return _Thread(lead_id, contact_id, product_id, speaker, mailbox is not None, addresses, first)


def _by_thread(
    uow: UnitOfWork, c: Classification, recipients: list[str], thread: _Thread | None
) -> Match | None:
    if thread is None:
        return None
    lead_id = thread.lead_id
    # The thread's lead matched: bound to our email, with her addresses as read.
    hers: dict[str, Any] = {
        "in_thread": True,
        "binding": Binding.MESSAGE_ID,
        "addresses": thread.addresses,
        "holder": thread.holder,
    }
    if c.kind in (ReplyKind.BOUNCE_HARD, ReplyKind.BOUNCE_SOFT) or thread.speaker == thread.contact_id:
        return Match("matched", (lead_id,), ("match:thread",), **hers)
    if thread.speaker is not None:
        own = _lead_of_contact(uow, thread.speaker, thread.product_id, recipients)
        if own is not None:
            evidence = ("match:thread", "match:another-lead-in-thread")
            return Match("matched", (own,), evidence, thread_lead_id=lead_id, holder=thread.holder)
    evidence = ("match:thread", "match:unknown-sender")
    return Match("matched", (lead_id,), evidence, sender_known=False, **hers)


def _by_original(
    uow: UnitOfWork, message_id: str | None, evidence: str, holder: dict[str, Any]
) -> Match | None:
    """The lead of our email a report quotes (a bounce's or a complaint's original), read with
    her addresses (and the effect key's holder) like a thread's."""
    for key in send_keys_in(message_id or ""):
        thread = _read_thread(uow, key, _forms_of(None), holder)
        if thread is not None:
            hers: dict[str, Any] = {"in_thread": True, "binding": Binding.MESSAGE_ID}
            hers.update(addresses=thread.addresses, holder=thread.holder)
            return Match("matched", (thread.lead_id,), (evidence,), **hers)
    return None


def _by_bounce(
    uow: UnitOfWork, c: Classification, recipients: list[str], holder: dict[str, Any]
) -> Match | None:
    if c.bounce is None:
        return None
    original = _by_original(uow, c.bounce.original_message_id, "match:bounce-original", holder)
    if original is not None:
        return original
    if c.bounce.recipient:
        lead_id = _lead_for_address(uow, c.bounce.recipient, recipients)
        if lead_id is not None:
            return Match("matched", (lead_id,), ("match:bounce-recipient",))
    return None


def _by_complaint(
    uow: UnitOfWork, c: Classification, recipients: list[str], holder: dict[str, Any]
) -> Match | None:
    if c.complaint is None:
        return None
    original = _by_original(uow, c.complaint.original_message_id, "match:complaint-original", holder)
    if original is not None:
        return original
    if c.complaint.recipient:
        lead_id = _lead_for_address(uow, c.complaint.recipient, recipients)
        if lead_id is not None:
            # Only a claim: what it may do is the trust table's (domain/trust.py), by alignment.
            return Match("matched", (lead_id,), ("match:complaint-recipient",))
    return None


def _by_address(uow: UnitOfWork, c: Classification, recipients: list[str]) -> Match | None:
    if not c.from_address or c.bounce is not None:
        return None
    lead_id = _lead_for_address(uow, c.from_address, recipients)
    return Match("matched", (lead_id,), ("match:address",)) if lead_id is not None else None


def _lead_of_key(uow: UnitOfWork, key: str) -> int | None:
    return uow.session.scalar(_LEAD_OF_KEY, {"workspace": uow.workspace_id, "key": key})


def _contact_id_of(uow: UnitOfWork, address: str | None) -> int | None:
    """The contact owning `address` (or its `+tag`-less form), without loading it."""
    forms = _forms_of(address)
    if forms["address"] is None:
        return None
    return uow.session.scalar(_CONTACT_OF, {"workspace": uow.workspace_id, **forms})


def _lead_of_contact(uow: UnitOfWork, contact_id: int, product_id: int, recipients: list[str]) -> int | None:
    """The contact's lead in the given product, else the one `_lead_for_address` would pick."""
    same_product = uow.session.scalar(
        select(m.Lead.id).where(
            m.Lead.workspace_id == uow.workspace_id,
            m.Lead.contact_id == contact_id,
            m.Lead.product_id == product_id,
        )
    )
    if same_product is not None:
        return same_product
    address = uow.session.scalar(
        select(m.ContactAddress.address).where(m.ContactAddress.contact_id == contact_id).limit(1)
    )
    return _lead_for_address(uow, address, recipients) if address else None


def _lead_for_address(uow: UnitOfWork, address: str, recipients: list[str]) -> int | None:
    """The contact's lead in the product whose mailbox received the message; else the lead
    we wrote to last; else any lead of the contact."""
    contact_id = _contact_id_of(uow, address)
    if contact_id is None:
        return None
    mailboxes = {base_address(r) for r in recipients}
    rows = uow.session.execute(
        select(m.Lead.id, m.Mailbox.address, m.Step.sent_at)
        .outerjoin(m.Step, m.Step.lead_id == m.Lead.id)
        .outerjoin(m.Mailbox, m.Mailbox.id == m.Step.mailbox_id)
        .where(m.Lead.contact_id == contact_id, m.Lead.workspace_id == uow.workspace_id)
    ).all()
    if not rows:
        return None
    by_mailbox = [lead for lead, mailbox, _ in rows if mailbox in mailboxes]
    if len(set(by_mailbox)) == 1:
        return by_mailbox[0]
    sent = sorted(((sent_at, lead) for lead, _, sent_at in rows if sent_at is not None), reverse=True)
    return sent[0][1] if sent else min(lead for lead, _, _ in rows)


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
