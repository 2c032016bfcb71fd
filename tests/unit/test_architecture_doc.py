"""docs/architecture.md tells two journeys function by function and draws the rooms of the
service layer: every dotted name it gives exists, and every room it draws is a package here."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
NAME = re.compile(r"`(replyguard(?:\.\w+)+)`")


def resolves(dotted: str) -> bool:
    """True when `dotted` is a module, or an attribute path inside one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def _journeys() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text[text.index("## Two journeys") : text.index("## The flow of one email")]


def test_every_name_of_the_journeys_is_in_the_code() -> None:
    names = NAME.findall(_journeys())
    assert len(names) >= 20
    assert [n for n in names if not resolves(n)] == []


def test_a_renamed_function_is_caught() -> None:
    assert resolves("replyguard.service_layer.inbound.replies.record_reply")
    assert not resolves("replyguard.service_layer.inbound.replies.record_the_reply")
    assert not resolves("replyguard.service_layer." + "replies.record_reply")  # the old room-less path


@pytest.mark.parametrize("room", ["sending", "inbound", "rescue", "audit", "workspace", "queries"])
def test_every_room_drawn_is_a_package_with_its_sentence(room: str) -> None:
    package = ROOT / "src" / "replyguard" / "service_layer" / room
    assert (package / "__init__.py").is_file()
    assert re.search(rf"^    {room}/\s+\S", DOC.read_text(encoding="utf-8"), re.M)


def test_every_package_of_the_service_layer_is_drawn() -> None:
    text = DOC.read_text(encoding="utf-8")
    packages = [p.parent.name for p in (ROOT / "src" / "replyguard" / "service_layer").glob("*/__init__.py")]
    assert len(packages) >= 6
    assert [p for p in packages if not re.search(rf"^    {p}/\s+\S", text, re.M)] == []
