"""How many real bounces are bound to the email they report (issue 22): ../shared/corpus-bounces.

Usage: .venv/bin/python bench/eval_bounce_trust.py [--corpus PATH] [--out PATH]

A bounce may suppress an address only when it is bound to an email we sent or authenticated
for the recipient's domain (domain/trust.py); the rest waits for a person. The corpus holds
real bounces of other people's mail, so "ours" is simulated: each bounce is judged as if the
email it reports had been ours, and counted by the first proof that binds it:

- message-id: the DSN returns the original's Message-ID (in its attached message or headers,
  or in In-Reply-To/References) — our Message-ID would be found there;
- verp: no Message-ID, but the DSN was delivered to the original's envelope sender (one of its
  To/Delivered-To/X-Original-To is the Return-Path of the returned message): with our signed
  return path that recipient is `mailbox+bounces-KEY.SIG@domain`, which binds it;
- aligned: neither, but an Authentication-Results header (believed as if our MTA wrote it)
  passes for the DSN's From domain, aligned with the recipient's domain or her provider's;
- person: none of these: the lead is held and a person confirms. Most of them show no
  envelope sender at all (the corpus keeps only part of the returned message), so whether VERP
  would bind them cannot be checked here; RFC 5321 (4.5.5) sends every DSN to the envelope
  sender, which is what binds them in practice.

"Before VERP" counts the same without the verp row (what binds with Message-IDs alone). Before
issue 22 every bounce naming a known recipient acted, bound or not. The figures are printed for
every bounce we recognise, and for the hard ones (those that would suppress).
Writes JSON to bench/out/eval_bounce_trust.json.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from email import message_from_bytes, policy
from email.message import Message
from email.utils import getaddresses
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_common import REPO

from replyguard.domain.addresses import domain_of
from replyguard.domain.authentication import judge
from replyguard.domain.inbound import MessageParseError, classify
from replyguard.domain.states import ReplyKind
from replyguard.domain.trust import Binding, Proof, is_aligned, permits

_RETURN_PATH = re.compile(rb"^Return-Path:[ \t]*<?([^>\s]*)>?", re.I | re.M)
_RECIPIENT_HEADERS = ("to", "delivered-to", "x-original-to", "envelope-to")
ROWS = ("message-id", "verp", "aligned", "person")


def _recipients(msg: Message) -> set[str]:
    found: set[str] = set()
    for name in _RECIPIENT_HEADERS:
        for value in msg.get_all(name) or []:
            found |= {a.lower() for _n, a in getaddresses([str(value)]) if "@" in a}
    return found


def _returned_envelope_sender(raw: bytes, msg: Message) -> str | None:
    """The Return-Path of the returned message (not the DSN's own, which is empty or first)."""
    paths = [p.decode("latin-1").lower() for p in _RETURN_PATH.findall(raw)]
    own = str(msg.get("return-path") or "").strip("<> \t").lower()
    if paths and own and paths[0] == own:
        paths = paths[1:]
    return next((p for p in paths if "@" in p), None)


def judge_one(raw: bytes) -> dict[str, Any] | None:
    try:
        c = classify(raw)
    except MessageParseError:
        return None
    if c.kind not in (ReplyKind.BOUNCE_HARD, ReplyKind.BOUNCE_SOFT) or c.bounce is None:
        return None
    msg = message_from_bytes(raw, policy=policy.compat32)
    by_id = bool(c.bounce.original_message_id or c.in_reply_to or c.references)
    sender = _returned_envelope_sender(raw, msg)
    by_verp = sender is not None and sender in _recipients(msg)
    verdict = judge(
        [str(v) for v in msg.get_all("authentication-results") or []], domain_of(c.from_address or "")
    )
    aligned = is_aligned(
        verdict.domain,
        verdict.verdict,
        trusted_header=True,
        lead_domain=domain_of(c.bounce.recipient or ""),
        report=True,
    )
    row = "message-id" if by_id else "verp" if by_verp else "aligned" if aligned else "person"
    without_verp = "message-id" if by_id else "aligned" if aligned else "person"
    binding = {"message-id": Binding.MESSAGE_ID, "verp": Binding.VERP}.get(row, Binding.NONE)
    suppresses = permits(ReplyKind.BOUNCE_HARD, Proof(binding, verdict.verdict, aligned))
    return {
        "kind": c.kind.value,
        "row": row,
        "row_without_verp": without_verp,
        "suppresses_if_hard": suppresses,
        "verdict": verdict.verdict.value,
        "envelope_sender_shown": sender is not None,
    }


def evaluate(corpus: Path) -> dict[str, Any]:
    judged = {p.name: judge_one(p.read_bytes()) for p in sorted((corpus / "maildir").glob("*.eml"))}
    bounces = {name: j for name, j in judged.items() if j is not None}
    hard = {name: j for name, j in bounces.items() if j["kind"] == "bounce_hard"}

    def table(items: dict[str, dict[str, Any]]) -> dict[str, Any]:
        rows, before = (
            Counter(j["row"] for j in items.values()),
            Counter(j["row_without_verp"] for j in items.values()),
        )
        return {
            "count": len(items),
            "with_verp": {r: rows.get(r, 0) for r in ROWS},
            "before_verp": {r: before.get(r, 0) for r in ROWS},
            "waiting": sorted(n for n, j in items.items() if j["row"] == "person"),
            "suppress_now": sum(1 for j in items.values() if j["suppresses_if_hard"]),
            "unverifiable": sum(
                1 for j in items.values() if j["row"] == "person" and not j["envelope_sender_shown"]
            ),
        }

    return {"corpus": str(corpus), "messages": len(judged), "bounces": table(bounces), "hard": table(hard)}


def _print(report: dict[str, Any]) -> None:
    print(f"{report['messages']} messages; bound as if the reported email were ours (domain/trust.py):")
    for name in ("bounces", "hard"):
        t = report[name]
        print(f"  {name} ({t['count']}):")
        for label, counts in (("with VERP", t["with_verp"]), ("Message-ID alone", t["before_verp"])):
            cells = ", ".join(f"{r} {counts[r]} ({counts[r] / max(1, t['count']):.1%})" for r in ROWS)
            print(f"    {label:17} {cells}")
        print(f"    act at once now: {t['suppress_now']}; before issue 22: {t['count']} (all, bound or not)")
        print(f"    waiting, the report showing no envelope sender to check VERP with: {t['unverifiable']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus-bounces")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "eval_bounce_trust.json")
    args = parser.parse_args(argv)
    if not (args.corpus / "maildir").is_dir():
        print(f"No corpus at {args.corpus}: nothing to evaluate.")
        return 0
    report = evaluate(args.corpus)
    _print(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
