"""The REST API's contract as clients know it: the OpenAPI document is the committed one
(tests/fixtures/openapi.json), whatever moves in the read models behind it; and a response
model generated from a read model cannot name a field the read model lacks.

After a deliberate change of the API, write the new document with
`REPLYGUARD_WRITE_OPENAPI=1 .venv/bin/pytest tests/web/test_api_contract.py` and review its diff."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import Field

from replyguard.bootstrap import App
from replyguard.entrypoints.http import create_app
from replyguard.entrypoints.web.api import schemas
from replyguard.service_layer.queries import leads
from tests.web.support import serving

SNAPSHOT = Path(__file__).parents[1] / "fixtures" / "openapi.json"


def _document(app: App) -> dict[str, Any]:
    with serving(create_app(app)) as base:
        response = httpx.get(f"{base}/openapi.json", timeout=60)
    assert response.status_code == 200
    document: dict[str, Any] = response.json()
    document["info"].pop("version")  # the package's version moves with every release
    return document


def _canonical(document: Any) -> Any:
    """Key order and the order of `required` are not part of the contract."""
    if isinstance(document, dict):
        return {
            k: sorted(v) if k == "required" and isinstance(v, list) else _canonical(v)
            for k, v in sorted(document.items())
        }
    if isinstance(document, list):
        return [_canonical(item) for item in document]
    return document


def test_the_openapi_document_is_the_committed_one(app: App) -> None:
    document = _canonical(_document(app))
    if os.environ.get("REPLYGUARD_WRITE_OPENAPI"):
        SNAPSHOT.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    committed = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    changed = sorted(
        name
        for name in set(committed["components"]["schemas"]) | set(document["components"]["schemas"])
        if committed["components"]["schemas"].get(name) != document["components"]["schemas"].get(name)
    )
    assert not changed, f"API models changed: {changed} (see this file's docstring)"
    assert document == committed, "the API's paths changed (see this file's docstring)"


def test_a_read_model_field_reaches_the_api_model() -> None:
    """The planted drift: a field added to a read model is in its API model with no copy."""

    @dataclasses.dataclass(frozen=True)
    class Row:
        lead_id: int
        email: str
        score: float | None

    @schemas.shows(Row)
    class RowOut(schemas.Model):
        pass

    assert list(RowOut.model_fields) == ["lead_id", "email", "score"]
    shown = RowOut.model_validate(Row(1, "ada@example.test", None))
    assert shown.model_dump() == {"lead_id": 1, "email": "ada@example.test", "score": None}


def test_an_api_field_the_read_model_lacks_is_refused() -> None:
    with pytest.raises(TypeError, match="reply_status"):

        @schemas.shows(leads.LeadRow)
        class Renamed(schemas.Model):
            reply_status: str = Field(description="a name the read model does not have")


def test_nested_read_models_are_shown_by_their_api_models() -> None:
    properties = schemas.Lead.model_json_schema()["properties"]
    assert properties["contact"]["$ref"].endswith("/Contact")
    assert properties["steps"]["items"]["$ref"].endswith("/LeadStep")
