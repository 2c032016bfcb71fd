"""Real HTTP servers on loopback for notice channels and the model client.

`WebhookReceiver` is what a careful receiver of our signed webhooks does: it verifies the
Standard Webhooks signature (written here from the specification, independently of the
library that signs), answers 503 while `down`, and
processes each `webhook-id` once (a second delivery of the same id is acknowledged and
dropped). `ChatServer` speaks the OpenAI chat-completions API with a scripted answer.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class _State:
    requests: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class LoopbackServer:
    """A ThreadingHTTPServer on 127.0.0.1 with an ephemeral port; `respond(received)` decides
    the (status, body) of each POST."""

    def __init__(self, respond: Callable[[Received], tuple[int, bytes]]) -> None:
        self.state = _State()
        state, responder = self.state, respond

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                received = Received(
                    self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length)
                )
                with state.lock:
                    state.requests.append(received)
                status, body = responder(received)
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def requests(self) -> list[Received]:
        with self.state.lock:
            return list(self.state.requests)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


class WebhookReceiver(LoopbackServer):
    def __init__(self, secret: str) -> None:
        self.down = True
        self.processed: dict[str, dict[str, Any]] = {}  # webhook-id -> payload, once each
        self.duplicates = 0
        self.bad_signatures = 0
        key = base64.b64decode(secret.removeprefix("whsec_"))

        def respond(received: Received) -> tuple[int, bytes]:
            if self.down:
                return 503, b'{"error": "down"}'
            if not _signed(key, received):
                self.bad_signatures += 1
                return 401, b'{"error": "signature"}'
            payload = received.json()
            msg_id = received.headers["webhook-id"]
            if msg_id in self.processed:
                self.duplicates += 1  # already processed: acknowledge, do nothing again
            else:
                self.processed[msg_id] = payload
            return 200, b"{}"

        super().__init__(respond)


def _signed(key: bytes, received: Received) -> bool:
    """Standard Webhooks v1: base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}")), one of the
    space-separated `v1,<sig>` values. (The timestamp's freshness is the receiver's clock's
    business; the tests run on a simulated one.)"""
    msg_id, stamp = received.headers.get("webhook-id"), received.headers.get("webhook-timestamp")
    if not msg_id or not stamp or not stamp.isdigit():
        return False
    signed = f"{msg_id}.{stamp}.".encode() + received.body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    offered = [part.partition(",") for part in received.headers.get("webhook-signature", "").split()]
    return any(v == "v1" and hmac.compare_digest(sig, expected) for v, _, sig in offered)


class ChatServer(LoopbackServer):
    """An OpenAI-compatible `/v1/chat/completions` that answers `reply` (or fails with `status`)."""

    def __init__(self, reply: str = "", status: int = 200, *, stall: bool = False) -> None:
        self.reply, self.status = reply, status
        #: `stall`: every answer waits until the server is closed (an endpoint that hangs).
        self.released = threading.Event()
        if not stall:
            self.released.set()

        def respond(received: Received) -> tuple[int, bytes]:
            self.released.wait()
            if received.path != "/v1/chat/completions":
                return 404, b"{}"
            if self.status != 200:
                return self.status, b'{"error": {"message": "overloaded"}}'
            answer = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": received.json().get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": self.reply},
                        "finish_reason": "stop",
                    }
                ],
            }
            return 200, json.dumps(answer).encode()

        super().__init__(respond)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.released.set()
        super().__exit__(exc_type, exc, tb)
