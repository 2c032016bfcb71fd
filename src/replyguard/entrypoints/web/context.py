"""What every web router is built from: the wired App, units of work for any workspace,
settings and the renderer. Built once in `install`; no globals."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from replyguard.bootstrap import App
from replyguard.entrypoints.web.config import WebSettings
from replyguard.entrypoints.web.render import Renderer
from replyguard.service_layer.scoped import Scoped


@dataclass(frozen=True, slots=True)
class WebContext:
    app: App
    scoped: Scoped
    settings: WebSettings
    renderer: Renderer
    #: One campaign's trial render at a time in this process. A trial render may spend a whole
    #: template budget of CPU per template, holding the GIL: ten at once starved every other
    #: request (/healthz p99 0.75 s); one at a time leaves the other threads their turns, and
    #: the campaigns waiting for the slot wait without using the CPU (docs/benchmarks.md).
    trial_renders: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(1))

    def app_for(self, workspace_id: int) -> App:
        """The wired App of one workspace, for the use cases that take an App (a person's
        answer, an inbound retry): the server's, its units of work scoped to `workspace_id` —
        the workspace of the session or token asking, never one named by the request."""
        return self.app.for_workspace(workspace_id)
