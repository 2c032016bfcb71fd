"""The checker of the fault campaign: reads the SMTP oracle's log, the reply log and the
database after a run, and counts every broken promise. Every count it returns must be zero.

Definitions (research/reliability.md, section 5):

* send after reply (S1): the oracle received DATA for a lead's message later than the moment
  just before that lead's reply COMMIT. The reply took the lead lock before that moment, so a
  guarded worker could not have been between its re-check and DATA then.
* duplicate delivery (S2): one send key accepted more than once by the oracle.
* lost reply (S4): the injector saw its COMMIT return, but there is no reply row.
* steps neither finished nor held (S5): after the final recovery pass, a step still in
  `claimed`/`sending`, or a step due before the final pass whose lead is active and which
  nobody sent.
* unknown outcome unresolved (S3): a step in `unknown` whose lead is neither held for a
  person nor replied.
* delivery the database does not know: the oracle holds a message whose step is neither
  `sent` nor `unknown` (the only honest states for it).
* phantom send: the database says `sent` but the oracle never accepted that send key.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, text


@dataclass
class Verdict:
    zeros: dict[str, int]
    examples: dict[str, list[Any]]
    facts: dict[str, Any]

    @property
    def ok(self) -> bool:
        return all(v == 0 for v in self.zeros.values())


def check(
    engine: Engine,
    accepted: list[dict[str, Any]],
    replies: list[dict[str, Any]],
    final_now: datetime,
) -> Verdict:
    with engine.connect() as conn:
        steps = conn.execute(
            text(
                "SELECT s.send_key, s.lead_id, s.state, s.due_at, s.crossed, l.reply_state,"
                " e.state AS enrollment_state FROM steps s JOIN leads l ON l.id = s.lead_id"
                " JOIN enrollments e ON e.id = s.enrollment_id"
            )
        ).all()
        reply_ids = set(conn.execute(text("SELECT id FROM replies")).scalars())
        events = dict(conn.execute(text("SELECT kind, count(*) FROM events GROUP BY kind")).all())
    by_key = {s.send_key: s for s in steps}
    first_reply: dict[int, float] = {}
    for r in replies:
        if r.get("before_commit") is not None:
            lead = r["lead_id"]
            first_reply[lead] = min(first_reply.get(lead, r["before_commit"]), r["before_commit"])

    late: list[dict[str, Any]] = []
    crossed_by_oracle = 0
    for msg in accepted:
        step = by_key.get(msg["send_key"])
        if step is None or step.lead_id not in first_reply:
            continue
        gap = msg["data_at"] - first_reply[step.lead_id]
        if gap > 0:
            late.append({"send_key": msg["send_key"], "lead_id": step.lead_id, "data_after_reply_s": gap})
        else:
            crossed_by_oracle += 1
    counts = Counter(msg["send_key"] for msg in accepted)
    duplicates = sorted(k for k, n in counts.items() if n > 1)
    committed = [r for r in replies if r.get("committed")]
    lost = [r for r in committed if r["reply_id"] not in reply_ids]
    unfinished = [s.send_key for s in steps if s.state in ("claimed", "sending")]
    stuck = [
        s.send_key
        for s in steps
        if s.state == "scheduled"
        and s.due_at <= final_now
        and s.reply_state == "active"
        and s.enrollment_state == "active"
    ]
    unresolved = [
        s.send_key for s in steps if s.state == "unknown" and s.reply_state not in ("held", "replied")
    ]
    untracked = [k for k in counts if k in by_key and by_key[k].state not in ("sent", "unknown")]
    phantom = [s.send_key for s in steps if s.state == "sent" and s.send_key not in counts]
    zeros = {
        "sends started after the reply committed": len(late),
        "duplicate deliveries (send keys accepted twice)": len(duplicates),
        "lost replies (commit returned, no row)": len(lost),
        "steps left claimed/sending after recovery": len(unfinished),
        "due steps of active leads never sent": len(stuck),
        "unknown outcomes not held for a person": len(unresolved),
        "deliveries the database does not know": len(untracked),
        "phantom sends (sent, oracle has none)": len(phantom),
    }
    examples = {
        "late": late[:10],
        "duplicates": duplicates[:10],
        "lost": lost[:10],
        "unfinished": unfinished[:10],
        "stuck": stuck[:10],
        "unresolved": unresolved[:10],
        "untracked": untracked[:10],
        "phantom": phantom[:10],
    }
    facts = {
        "steps": len(steps),
        "step_states": dict(Counter(s.state for s in steps)),
        "lead_states": dict(Counter({s.lead_id: s.reply_state for s in steps}.values())),
        "accepted_by_oracle": len(accepted),
        "replies_committed": len(committed),
        "replied_leads_with_a_delivery_before_the_reply": crossed_by_oracle,
        "steps_marked_crossed": sum(1 for s in steps if s.crossed),
        "events": {k: events[k] for k in sorted(events)},
    }
    return Verdict(zeros, examples, facts)
