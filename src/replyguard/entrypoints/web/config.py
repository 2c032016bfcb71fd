"""Settings of the web workspace, read from the environment once (in `create_app`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

from replyguard.service_layer.accounts import LoginPolicy

CookieSecure = Literal["auto", "always", "never"]


@dataclass(frozen=True, slots=True)
class WebSettings:
    #: `Secure` on the session cookie: "auto" when the request came over https (directly or,
    #: with uvicorn's proxy headers, through a trusted proxy), "always", or "never".
    cookie_secure: CookieSecure = "auto"
    login: LoginPolicy = field(default_factory=LoginPolicy)
    #: When set, /metrics wants `Authorization: Bearer <this>`; unset, it answers loopback
    #: clients only. Kept out of repr so that it is never logged.
    metrics_token: str | None = field(default=None, repr=False)
    #: The largest upload (a CSV of leads, a campaign file) a form or the API accepts.
    max_upload_bytes: int = 20 * 1024 * 1024

    @classmethod
    def from_env(cls) -> WebSettings:
        secure = os.environ.get("REPLYGUARD_COOKIE_SECURE", "auto").strip().lower() or "auto"
        if secure not in ("auto", "always", "never"):
            raise ValueError(f"REPLYGUARD_COOKIE_SECURE must be auto, always or never, got {secure!r}")
        return cls(
            cookie_secure=secure,  # type: ignore[arg-type]
            metrics_token=os.environ.get("REPLYGUARD_METRICS_TOKEN") or None,
        )
