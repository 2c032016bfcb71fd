"""Templates: strict variables, no half-rendered email, and a sandbox that refuses attribute tricks."""

from __future__ import annotations

import pytest

from replyguard.domain.templates import (
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
