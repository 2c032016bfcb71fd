"""What every web router is built from: the wired App, units of work for any workspace,
settings and the renderer. Built once in `install`; no globals."""

from __future__ import annotations

from dataclasses import dataclass

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
