"""Events in words: who did what, for the lead timeline. Pure; an unknown kind still reads.

`describe(kind, data)` returns (actor, sentence). The actor is a person's address when a
person acted (`by` in the event), otherwise the part of the system that acted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

WORKER, INBOUND, SYSTEM, LEAD = "worker", "inbound mail", "replyguard", "the lead"

_KIND_WORDS = {
    "human_reply": "replied",
    "out_of_office": "is out of office",
    "auto_reply": "sent an automatic reply",
    "bounce_hard": "bounced (hard)",
    "bounce_soft": "bounced (soft)",
    "unsubscribe": "asked to unsubscribe",
}


def _s(data: Mapping[str, Any], key: str, default: str = "") -> str:
    value = data.get(key)
    return default if value is None else str(value)


def _plural(n: object, word: str) -> str:
    count = int(n) if isinstance(n, int | float | str) and str(n).lstrip("-").isdigit() else 0
    return f"{count} {word}{'' if count == 1 else 's'}"


def _reply(d: Mapping[str, Any]) -> tuple[str, str]:
    words = _KIND_WORDS.get(_s(d, "kind"), _s(d, "kind", "answered"))
    text = f"{words}; lead {_s(d, 'state_before', '?')} → {_s(d, 'state_after', '?')}"
    if d.get("paused_until"):
        text += f", paused until {_s(d, 'paused_until')[:10]}"
    return LEAD, text


def _cancelled(d: Mapping[str, Any]) -> tuple[str, str]:
    text = f"{_plural(d.get('count', 0), 'queued step')} cancelled ({_s(d, 'reason', 'no reason')})"
    if d.get("in_flight"):
        text += f"; {_plural(d.get('in_flight'), 'send')} in flight marked never to retry"
    return SYSTEM, text


_RULES: dict[str, Callable[[Mapping[str, Any]], tuple[str, str]]] = {
    "enrolled": lambda d: (SYSTEM, f"enrolled in {_s(d, 'campaign')} ({_plural(d.get('steps', 0), 'step')})"),
    "step_approved": lambda d: (_s(d, "by", "a person"), "approved a step waiting for approval"),
    "step_sent": lambda d: (WORKER, "sent a step" + (" — it crossed a reply" if d.get("crossed") else "")),
    "send_refused": lambda d: (
        WORKER,
        f"refused to send: {_s(d, 'reason')}"
        + ("; step cancelled" if d.get("cancelled") else "; step waits"),
    ),
    "send_retry_scheduled": lambda d: (WORKER, f"will retry a send at {_s(d, 'retry_at')[:16]}"),
    "step_failed": lambda d: (WORKER, f"a send failed for good: {_s(d, 'detail')}"),
    "send_outcome_unknown": lambda d: (WORKER, f"a send's outcome is unknown: {_s(d, 'detail')}"),
    "lead_held": lambda d: (WORKER, f"held the lead for a person: {_s(d, 'reason')}"),
    "claim_expired": lambda d: (WORKER, "took back a claim that expired"),
    "send_reconciled": lambda d: (WORKER, f"checked an interrupted send: {_s(d, 'found')}"),
    "late_result_ignored": lambda d: (WORKER, "ignored a late send result (the step was taken over)"),
    "pause_ended": lambda d: (SYSTEM, "out-of-office pause ended; lead active again"),
    "reply_recorded": _reply,
    "steps_cancelled": _cancelled,
    "steps_paused": lambda d: (
        SYSTEM,
        f"{_plural(d.get('count', 0), 'step')} moved after the pause (until {_s(d, 'until')[:10]})",
    ),
    "probable_reply_held": lambda d: (
        INBOUND,
        f"probable reply from {_s(d, 'sender')} ({_s(d, 'why')}): held for a person",
    ),
    "alternate_learned": lambda d: (INBOUND, f"learned the address {_s(d, 'address')}"),
    "notice_created": lambda d: (SYSTEM, f"handed to {_s(d, 'recipient')}"),
    "lead_state_set": lambda d: (
        _s(d, "by", "a person"),
        f"moved the lead {_s(d, 'before')} → {_s(d, 'after')}"
        + (f": {_s(d, 'why')}" if d.get("why") else ""),
    ),
    "lead_assigned": lambda d: (
        _s(d, "by", "a person"),
        f"gave the person to {_s(d, 'after')}" + (f" (was {_s(d, 'before')})" if d.get("before") else ""),
    ),
    "unknown_resolved": lambda d: (
        _s(d, "by", "a person"),
        "checked an unknown send: " + ("it went out" if d.get("went_out") else "it did not go out"),
    ),
}


def describe(kind: str, data: Mapping[str, Any] | None) -> tuple[str, str]:
    """(actor, sentence) for one event; never raises on odd or missing data."""
    d = data if isinstance(data, Mapping) else {}
    rule = _RULES.get(kind)
    if rule is None:
        return _s(d, "by", SYSTEM), kind.replace("_", " ")
    try:
        return rule(d)
    except (TypeError, ValueError):
        return SYSTEM, kind.replace("_", " ")
