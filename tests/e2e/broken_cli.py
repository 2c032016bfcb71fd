"""`replyguard` with one guarantee broken, for the audit's end-to-end test only.

`RG_BREAK=recheck-off python tests/e2e/broken_cli.py ARGS...` runs the real command line with
the worker's re-check at send time letting everything through. The product has no such switch.
"""

from __future__ import annotations

import os

from replyguard.entrypoints.cli.app import main
from replyguard.service_layer.sending import send_guard

if os.environ.get("RG_BREAK") == "recheck-off":
    send_guard.recheck = lambda check, now: None  # type: ignore[assignment]

if __name__ == "__main__":
    main()
