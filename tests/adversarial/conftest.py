"""Fixtures of the adversarial suite: the example workspace after a day of sending (`sent`,
Priya has our first email, every webhook configured) and an HTTP client on a real uvicorn."""

from tests.integration.test_http_inbound import client, sent

__all__ = ["client", "sent"]
