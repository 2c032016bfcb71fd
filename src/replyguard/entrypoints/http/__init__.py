"""HTTP entry points: RFC 8058 one-click unsubscribe and the inbound-mail webhooks.

`create_app(app)` builds the ASGI application around an already wired replyguard App.
"""

from __future__ import annotations

from replyguard.entrypoints.http.app import create_app

__all__ = ["create_app"]
