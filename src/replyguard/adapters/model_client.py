"""An optional language model behind one small port: an OpenAI-compatible chat endpoint.

Configured by environment (REPLYGUARD_MODEL_URL, REPLYGUARD_MODEL, REPLYGUARD_MODEL_KEY,
REPLYGUARD_MODEL_TIMEOUT_SECONDS); off when no URL is set. It only ever reads a thread and
proposes an intent and a draft: it never sends and never moves a lead. Every failure (network,
timeout, non-2xx, an answer that is not what was asked) is a `ModelError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from replyguard.domain.intent import Intent

SYSTEM = (
    "You help a salesperson answer a reply to an outbound email. Read the reply and answer with "
    "a JSON object with two keys: intent (one of: " + ", ".join(i.value for i in Intent) + ") and "
    "draft (a short, polite answer in the language of the reply, signed with the sender's name). "
    "Never promise anything the reply did not ask for."
)


class ModelError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class DraftPrompt:
    product: str
    lead_name: str
    company: str
    sender: str
    subject: str
    reply_text: str
    rules_intent: str | None


@dataclass(frozen=True, slots=True)
class DraftSuggestion:
    intent: str | None
    draft: str


class ModelClient:
    def __init__(
        self, url: str, model: str, api_key: str | None, timeout: float, client: httpx.Client | None = None
    ) -> None:
        self._url = url.rstrip("/") + "/chat/completions"
        self._model = model
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.Client(timeout=timeout, headers=headers, follow_redirects=False)

    def suggest(self, prompt: DraftPrompt) -> DraftSuggestion:
        user = (
            f"Product: {prompt.product}\nLead: {prompt.lead_name} ({prompt.company})\n"
            f"Sender: {prompt.sender}\nSubject: {prompt.subject}\n"
            f"Rules say the intent is: {prompt.rules_intent}\n\nTheir reply:\n{prompt.reply_text[:6000]}"
        )
        body = {
            "model": self._model,
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
            "temperature": 0.2,
            "response_format": {"type": "json_object"},
        }
        try:
            response = self._client.post(self._url, json=body)
        except httpx.HTTPError as exc:
            raise ModelError(f"model endpoint unreachable: {exc.__class__.__name__}") from exc
        if response.status_code != 200:
            raise ModelError(f"model endpoint answered HTTP {response.status_code}")
        return _parse(response)

    def close(self) -> None:
        self._client.close()


def _parse(response: httpx.Response) -> DraftSuggestion:
    try:
        content = response.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ModelError("the model's answer is not a chat completion") from exc
    if not isinstance(content, str) or not content.strip():
        raise ModelError("the model answered nothing")
    try:
        data: Any = json.loads(content)
    except ValueError:
        return DraftSuggestion(None, content.strip()[:20000])  # a plain-text draft is still a draft
    if not isinstance(data, dict) or not isinstance(data.get("draft"), str) or not data["draft"].strip():
        raise ModelError("the model's answer has no draft")
    intent = data.get("intent")
    known = {i.value for i in Intent}
    return DraftSuggestion(intent if intent in known else None, data["draft"].strip()[:20000])
