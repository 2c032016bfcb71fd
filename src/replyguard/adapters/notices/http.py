"""Notices over HTTP: a signed JSON webhook (Standard Webhooks) and a Slack-compatible
incoming webhook. Both with a timeout; a non-2xx answer or a network error is a failed
delivery, retried later by the outbox. URLs are never logged (a Slack URL is a secret).
"""

from __future__ import annotations

import json
from datetime import datetime

import httpx
from standardwebhooks.webhooks import Webhook

from replyguard.adapters.notices.base import (
    ChannelResult,
    NoticeMessage,
    cut_escaped,
    for_slack,
    headline,
    summary_text,
)
from replyguard.domain.clock import Clock, SystemClock


def _post(client: httpx.Client, url: str, body: bytes, headers: dict[str, str]) -> ChannelResult:
    try:
        response = client.post(url, content=body, headers={"content-type": "application/json", **headers})
    except httpx.HTTPError as exc:
        return ChannelResult(False, f"{exc.__class__.__name__}")
    if 200 <= response.status_code < 300:
        return ChannelResult(True, f"HTTP {response.status_code}")
    return ChannelResult(False, f"HTTP {response.status_code}")


class WebhookChannel:
    """POST `{"type", "timestamp", "data"}` with `webhook-id`, `webhook-timestamp` and
    `webhook-signature` (v1, HMAC-SHA256 of `id.timestamp.body` with the `whsec_` secret).

    The signature's timestamp is the real time (`wall`), never a simulated clock's: the
    receiver checks it against its own clock and refuses one minutes away."""

    name = "webhook"

    def __init__(
        self,
        url: str,
        secret: str,
        timeout: float,
        client: httpx.Client | None = None,
        *,
        wall: Clock | None = None,
    ) -> None:
        try:
            self._signer = Webhook(secret)
        except Exception as exc:
            raise ValueError("the webhook secret must be whsec_ followed by base64") from exc
        self._url = url
        self._client = client or httpx.Client(timeout=timeout, follow_redirects=False)
        self._wall = wall or SystemClock()

    def deliver(self, notice: NoticeMessage, now: datetime) -> ChannelResult:
        body = json.dumps(
            {
                "type": notice.payload.get("type", "thread.opened"),
                "timestamp": notice.created_at.isoformat(),
                "data": {"id": notice.uid, **notice.payload},
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )
        signed_at = self._wall.now()
        signature = self._signer.sign(msg_id=notice.uid, timestamp=signed_at, data=body)
        headers = {
            "webhook-id": notice.uid,
            "webhook-timestamp": str(int(signed_at.timestamp())),
            "webhook-signature": signature,
        }
        return _post(self._client, self._url, body.encode(), headers)

    def close(self) -> None:
        self._client.close()


class SlackChannel:
    """A Slack (or Mattermost, Rocket.Chat...) incoming webhook: text plus a link button. Every
    text is escaped for mrkdwn (`for_slack`): the words of a reply or a lead file are shown,
    never obeyed. The button's URL is ours (the thread's page)."""

    name = "slack"

    def __init__(self, url: str, timeout: float, client: httpx.Client | None = None) -> None:
        self._url = url
        self._client = client or httpx.Client(timeout=timeout, follow_redirects=False)

    def deliver(self, notice: NoticeMessage, now: datetime) -> ChannelResult:
        thread = notice.payload.get("thread") or {}
        text = cut_escaped(for_slack(summary_text(notice.payload)), 2900)
        body = {
            "text": cut_escaped(f"{for_slack(headline(notice.payload))} ({notice.uid})", 2900),
            "blocks": [
                {"type": "section", "text": {"type": "mrkdwn", "text": text}},
                {"type": "context", "elements": [{"type": "mrkdwn", "text": f"notice {notice.uid}"}]},
                {
                    "type": "actions",
                    "elements": [
                        {
                            "type": "button",
                            "text": {"type": "plain_text", "text": "Open thread"},
                            "url": thread.get("url"),
                        }
                    ],
                },
            ],
        }
        return _post(self._client, self._url, json.dumps(body, ensure_ascii=False).encode(), {})

    def close(self) -> None:
        self._client.close()
