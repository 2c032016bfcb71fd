"""Threading headers come only from emails that go out; a skipped email is never replied to."""

from __future__ import annotations

from replyguard.domain.sequence import Planned, Threading, thread_headers


def _steps(*goes: bool, subjects: tuple[str | None, ...] = ("Hello", None, None)) -> list[Planned]:
    return [Planned(s, f"<m{i}@x.test>", g) for i, (s, g) in enumerate(zip(subjects, goes, strict=True), 1)]


def test_follow_ups_thread_on_every_email_before_them() -> None:
    assert thread_headers(_steps(True, True, True)) == [
        Threading("Hello", None, None),
        Threading("Re: Hello", "<m1@x.test>", "<m1@x.test>"),
        Threading("Re: Hello", "<m2@x.test>", "<m1@x.test> <m2@x.test>"),
    ]


def test_a_skipped_first_email_makes_the_next_one_start_the_thread() -> None:
    assert thread_headers(_steps(False, True, True)) == [
        Threading("Hello", None, None),
        Threading("Hello", None, None),  # no "Re:" on a thread the lead never saw
        Threading("Re: Hello", "<m2@x.test>", "<m2@x.test>"),
    ]


def test_a_skipped_middle_email_is_left_out_of_the_thread() -> None:
    assert thread_headers(_steps(True, False, True))[2] == Threading(
        "Re: Hello", "<m1@x.test>", "<m1@x.test>"
    )


def test_a_step_with_its_own_subject_starts_a_new_thread() -> None:
    got = thread_headers(_steps(True, True, True, subjects=("Hello", "New topic", None)))
    assert got[1] == Threading("New topic", None, None)
    assert got[2] == Threading("Re: New topic", "<m2@x.test>", "<m2@x.test>")
