"""The trust table (domain/trust.py) and what reply_policy does without proof, as pure tables."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replyguard.domain import reply_policy
from replyguard.domain.authentication import Verdict
from replyguard.domain.reply_policy import Suppress
from replyguard.domain.states import ReplyKind, ReplyState
from replyguard.domain.trust import TRUST_TABLE, Binding, Need, Proof, is_aligned, permits

IRREVERSIBLE = (ReplyKind.UNSUBSCRIBE, ReplyKind.BOUNCE_HARD, ReplyKind.OUT_OF_OFFICE)
NOW = datetime(2026, 12, 8, 9, 0, tzinfo=UTC)


def test_every_reply_kind_has_a_row_and_the_irreversible_ones_need_proof() -> None:
    assert set(TRUST_TABLE) == set(ReplyKind)
    assert {k for k, rule in TRUST_TABLE.items() if rule.needs is Need.PROOF} == set(IRREVERSIBLE)


@pytest.mark.parametrize(
    ("proof", "allowed"),
    [
        (Proof(Binding.MESSAGE_ID, Verdict.NONE, aligned=False), True),
        (Proof(Binding.VERP, Verdict.NONE, aligned=False), True),
        (Proof(Binding.TOKEN, Verdict.NONE, aligned=False), True),
        (Proof(Binding.MESSAGE_ID, Verdict.FAIL, aligned=False), False),  # bound, but forged From
        (Proof(Binding.MESSAGE_ID, Verdict.PASS, aligned=False, sender_known=False), False),  # a stranger
        (Proof(Binding.NONE, Verdict.PASS, aligned=True), True),
        (Proof(Binding.MESSAGE_ID, Verdict.PASS, aligned=True, sender_known=False), False),  # her colleague
        (Proof(Binding.NONE, Verdict.PASS, aligned=False), False),  # passes for its own domain
        (Proof(Binding.NONE, Verdict.NONE, aligned=False), False),
        (Proof(Binding.NONE, Verdict.FAIL, aligned=False), False),
    ],
)
def test_what_the_irreversible_effects_accept(proof: Proof, allowed: bool) -> None:
    for kind in IRREVERSIBLE:
        assert permits(kind, proof) is allowed, kind
    assert permits(ReplyKind.HUMAN_REPLY, proof)  # stopping is always safe


@pytest.mark.parametrize(
    ("from_domain", "lead_domain", "report", "trusted", "aligned"),
    [
        ("fernhollow.test", "fernhollow.test", False, True, True),
        ("mx.fernhollow.test", "fernhollow.test", True, True, True),
        ("googlemail.com", "gmail.com", True, True, True),  # Gmail's bounces for a Gmail address
        ("googlemail.com", "gmail.com", False, True, False),  # ...but not its From for a reply
        ("outlook.com", "hotmail.com", True, True, True),
        ("attacker.example", "fernhollow.test", True, True, False),
        ("fernhollow.test.attacker.example", "fernhollow.test", True, True, False),
        ("fernhollow.test", "fernhollow.test", False, False, False),  # a header the sender wrote
    ],
)
def test_alignment(from_domain: str, lead_domain: str, report: bool, trusted: bool, aligned: bool) -> None:
    got = is_aligned(
        from_domain, Verdict.PASS, trusted_header=trusted, lead_domain=lead_domain, report=report
    )
    assert got is aligned
    assert not is_aligned(
        from_domain, Verdict.NONE, trusted_header=True, lead_domain=lead_domain, report=report
    )


def _decide(
    kind: ReplyKind, state: ReplyState, confirmed: bool, other: bool = False
) -> reply_policy.ReplyEffect:
    return reply_policy.decide(
        kind,
        state,
        now=NOW,
        back_at=NOW + timedelta(days=5),
        default_pause=timedelta(days=7),
        max_pause=timedelta(days=60),
        other_address=other,
        sender_confirmed=confirmed,
    )


def test_an_unproven_hard_bounce_holds_the_lead_and_suppresses_nothing() -> None:
    effect = _decide(ReplyKind.BOUNCE_HARD, ReplyState.ACTIVE, confirmed=False)
    assert (effect.new_state, effect.suppress, effect.notify) == (ReplyState.HELD, Suppress.NONE, True)
    assert _decide(ReplyKind.BOUNCE_HARD, ReplyState.ACTIVE, confirmed=True).suppress is Suppress.ADDRESS


def test_an_unproven_absence_holds_the_lead_and_pauses_nothing() -> None:
    effect = _decide(ReplyKind.OUT_OF_OFFICE, ReplyState.ACTIVE, confirmed=False)
    assert (effect.new_state, effect.paused_until, effect.notify) == (ReplyState.HELD, None, True)
    assert _decide(ReplyKind.OUT_OF_OFFICE, ReplyState.ACTIVE, confirmed=True).paused_until is not None


@given(
    kind=st.sampled_from(list(ReplyKind)),
    state=st.sampled_from(list(ReplyState)),
    binding=st.just(Binding.NONE),
    verdict=st.sampled_from(list(Verdict)),
    other=st.booleans(),
)
def test_no_unbound_unaligned_message_suppresses_unsubscribes_or_pauses(
    kind: ReplyKind, state: ReplyState, binding: Binding, verdict: Verdict, other: bool
) -> None:
    proof = Proof(binding, verdict, aligned=False)
    effect = _decide(kind, state, confirmed=permits(kind, proof), other=other)
    assert effect.suppress is Suppress.NONE
    assert effect.new_state not in (ReplyState.UNSUBSCRIBED, ReplyState.BOUNCED, ReplyState.OUT_OF_OFFICE)
    assert effect.paused_until is None and not effect.every_product
