"""Templates: strict variables, no half-rendered email, and a sandbox that refuses attribute tricks."""

from __future__ import annotations

import pytest

from replyguard.domain.templates import (
    MAX_TEMPLATE_CHARS,
    STANDARD_FIELDS,
    TemplateError,
    check_variables,
    render,
    variables_of,
)

VALUES = {"first_name": "Priya", "company": "Fernhollow", "last_name": "Raman"}


def test_render_keeps_the_text_exactly() -> None:
    source = "Hi {{ first_name }},\n\nhow is {{ company }}?\n"
    assert render(source, VALUES, "w") == "Hi Priya,\n\nhow is Fernhollow?\n"


def test_no_html_escaping_in_plain_text() -> None:
    assert render("{{ company }}", {"company": "Smith & Sons <Ltd>"}, "w") == "Smith & Sons <Ltd>"


@pytest.mark.parametrize("value", [None, "", "   "])
def test_missing_or_empty_value_is_an_error_naming_the_field(value: str | None) -> None:
    with pytest.raises(TemplateError, match=r"^step 2 body: no value for title$"):
        render("Dear {{ title }} {{ first_name }}", {**VALUES, "title": value}, "step 2 body")


def test_all_missing_fields_are_named() -> None:
    with pytest.raises(TemplateError, match="no value for company, title"):
        render("{{ title }} at {{ company }}", {}, "w")


def test_variables_of_ignores_names_the_template_sets() -> None:
    assert variables_of("{% set x = 'a' %}{{ x }} {{ first_name|upper }}", "w") == {"first_name"}


def test_check_variables_names_unknown_ones() -> None:
    assert check_variables("{{ first_name }}", "w") == {"first_name"}
    with pytest.raises(TemplateError) as info:
        check_variables("{{ first_name }} {{ shoe_size }} {{ age }}", "campaign.steps[1].body")
    message = str(info.value)
    assert message.startswith("campaign.steps[1].body: unknown template variable(s) age, shoe_size")
    assert check_variables("{{ shoe_size }}", "w", {"shoe_size"}) == {"shoe_size"}


def test_standard_fields_include_what_enrollment_provides() -> None:
    assert {"first_name", "last_name", "full_name", "company", "title", "email"} <= STANDARD_FIELDS


@pytest.mark.parametrize("source", ["{{ first_name }", "{% if %}", "{{ first_name | }}", "{% for x in y %}"])
def test_syntax_errors_name_where(source: str) -> None:
    with pytest.raises(TemplateError, match=r"^step 1 subject: template syntax error on line 1"):
        variables_of(source, "step 1 subject")


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__ }}",
        "{{ first_name.__class__.__mro__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ first_name.__init__.__globals__ }}",
        "{{ cycler.__init__.__globals__.os }}",
    ],
)
def test_sandbox_refuses_attribute_tricks(source: str) -> None:
    # Jinja's sandbox raises SecurityError on unsafe attributes; it must arrive as a TemplateError
    # (a bad template for one lead), never as a crash nor as rendered internals.
    try:
        rendered = render(source, VALUES, "step 1 body")
    except TemplateError as exc:
        assert str(exc).startswith("step 1 body: ")
        return
    assert "class" not in rendered
    assert "function" not in rendered
    assert "module" not in rendered


def test_sandbox_blocks_class_access_with_an_error() -> None:
    with pytest.raises(TemplateError, match="unsafe"):
        render("{{ ''.__class__ }}", VALUES, "step 1 body")


# ---------------------------------------------------------------- defaults, conditionals, failures
def test_a_default_fills_a_missing_field() -> None:
    assert render("Hi {{ first_name | default('there') }},", {}, "w") == "Hi there,"
    assert render("Hi {{ first_name | default('there') }},", {"first_name": "  "}, "w") == "Hi there,"
    assert render("Hi {{ first_name | default('there') }},", VALUES, "w") == "Hi Priya,"


def test_a_conditional_may_test_a_missing_field() -> None:
    source = "Hello{% if title %} {{ title }}{% endif %} at {{ company }}"
    assert render(source, VALUES, "w") == "Hello at Fernhollow"
    assert render(source, {**VALUES, "title": "CFO"}, "w") == "Hello CFO at Fernhollow"
    assert render("{{ title if title else 'friend' }}", {}, "w") == "friend"


def test_a_filter_on_a_missing_field_is_still_an_error() -> None:
    with pytest.raises(TemplateError, match=r"^w: no value for title$"):
        render("{{ title | upper }}", VALUES, "w")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{{ 1 / 0 }}", "ZeroDivisionError"),
        ("{{ 2.0 ** 5000 }}", "too large"),
        ("{{ 1e308 * 1e308 / 0 }}", "ZeroDivisionError"),
        ("{{ (2.0 ** 99) ** 99 }}", "OverflowError"),
        ("{{ 10 ** 1000 }}", "too large"),
        ("{{ 'x' * 100000000 }}", "too large"),
        ("{% for i in range(5000) %}x{% endfor %}", "range() of more than"),
        ("{% for i in range(1000) %}{{ 'y' * 1000 }}{% endfor %}", "more than"),
        ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "calls itself"),
        ("{{ '%099999999d' % 1 }}", "format width"),
        ("{{ '{:099999999}'.format(1) }}", "format width"),
        ("{{ 'x' | center(100000000) }}", "too large"),
        ("{{ 'x'.ljust(100000000) }}", "too large"),
        ("{{ company | replace('', 'y' * 9999) | replace('y', 'z' * 9999) }}", "too large"),
        ("{{ first_name.nothing_here }}", "has no attribute"),
    ],
)
def test_a_template_failing_at_render_time_is_a_template_error(source: str, message: str) -> None:
    with pytest.raises(TemplateError, match=r"^step 2 body: ") as info:
        render(source, VALUES, "step 2 body")
    assert message in str(info.value)


@pytest.mark.parametrize(
    "source",
    ["{% include 'other' %}", "{% extends 'base' %}", "{% import 'm' as m %}", "{% from 'm' import x %}"],
)
def test_a_template_may_not_reach_outside_itself(source: str) -> None:
    with pytest.raises(TemplateError, match=r"^step 1 body: '\w+' is not allowed in an email template"):
        check_variables(source, "step 1 body")
    with pytest.raises(TemplateError, match="not allowed"):
        render(source, VALUES, "step 1 body")


def test_a_template_source_has_a_size_limit() -> None:
    with pytest.raises(TemplateError, match="longer than"):
        check_variables("x" * (MAX_TEMPLATE_CHARS + 1), "campaign.steps[1].body")


def test_ordinary_arithmetic_and_formatting_still_work() -> None:
    assert (
        render("{{ 3 * 4 }} {{ 'ab' * 3 }} {{ 2 ** 10 }} {{ '%.1f' % 2.25 }}", {}, "w")
        == "12 ababab 1024 2.2"
    )
    assert render("{{ company | center(14) }}|{{ company | truncate(5, True, '', 0) }}", VALUES, "w") == (
        "  Fernhollow  |Fernh"
    )
