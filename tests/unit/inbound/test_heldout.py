"""Regression guard on the held-out set (tests/fixtures/heldout/build.py, built in memory).

The set was authored independently of the shared corpus; `bench/eval_heldout.py` prints the
full report. The one hard rule: no human reply is ever taken for an automatic message.
"""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from replyguard.domain.inbound import classify

BUILD = Path(__file__).resolve().parents[2] / "fixtures" / "heldout" / "build.py"
AUTOMATIC = {"out_of_office", "auto_reply", "bounce_hard", "bounce_soft"}
# Measured: 216/216 kinds (100.0%) and 63/63 return dates after the rule and date-parser work
# of November 2026 (the set had been used to find the failures, so allow a small margin). The
# 26 'l_' cases were written after the rules were changed and first scored 24/26 kinds, 6/9
# dates; the 18 'm_' cases, written after further changes, first scored 17/18 kinds (a human
# reply read as unsubscribe), 5/6 dates. Those first scores are the honest estimate for unseen mail.
KIND_ACCURACY_FLOOR = 0.97
DATE_ACCURACY_FLOOR = 0.90


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("heldout_build", BUILD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["heldout_build"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def results() -> list[tuple[object, object]]:
    cases = _load().build()
    return [(case, classify(case.raw)) for case in cases]


def test_heldout_set_is_large_and_varied(results):
    kinds = Counter(case.kind for case, _ in results)
    assert len(results) >= 150
    assert kinds["human_reply"] >= 50 and kinds["out_of_office"] >= 40
    ooo_langs = {case.lang for case, _ in results if case.kind == "out_of_office"}
    human_langs = {case.lang for case, _ in results if case.kind == "human_reply"}
    assert len(ooo_langs) >= 12 and len(human_langs) >= 10


def test_no_human_reply_is_taken_for_automatic(results):
    wrong = [(case.name, got.kind.value, got.evidence) for case, got in results
             if case.kind == "human_reply" and got.kind.value in AUTOMATIC]  # fmt: skip
    assert wrong == []


def test_kind_accuracy_floor(results):
    wrong = [(case.name, case.kind, got.kind.value) for case, got in results if got.kind.value != case.kind]
    assert 1 - len(wrong) / len(results) >= KIND_ACCURACY_FLOOR, wrong


def test_return_date_accuracy_floor(results):
    ooo = [(case, got) for case, got in results if case.kind == "out_of_office"]
    wrong = []
    for case, got in ooo:
        day = got.return_date.isoformat() if got.return_date else None
        if (day not in case.dates) if case.dates else day is not None:
            wrong.append((case.name, day, case.dates))
    assert 1 - len(wrong) / len(ooo) >= DATE_ACCURACY_FLOOR, wrong


def test_left_company_notices_name_the_new_contact(results):
    for case, got in results:
        if case.left_company is not None:
            assert (got.left_company, got.new_contact) == (case.left_company, case.new_contact), case.name
