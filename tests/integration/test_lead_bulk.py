"""The Leads page's read model and bulk actions, on SQLite and PostgreSQL: one row per person
with their products; enroll, stop and assign several people at once, each lead under the
single-lead rules; an id of another workspace refuses the whole request, nothing written."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.leads_csv import read_leads
from replyguard.service_layer.queries import NotFound
from replyguard.service_layer.queries.people import search_people
from replyguard.service_layer.workspace import lead_bulk
from replyguard.service_layer.workspace.lead_bulk import assign_people, enroll_people, stop_people
from replyguard.service_layer.workspace.leads import contact_for_address, import_leads
from tests.support.scenario import PILOT, Q1, csv_of, lead_state, load_examples, step_counts
from tests.web.support import tenant

PRIYA, MARC = "priya@fernhollow.test", "marc.keller@brightline-logistics.test"


def contact_id(app: App, email: str) -> int:
    with app.uow() as uow:
        found = contact_for_address(uow, email)
        assert found is not None
        return found.id


def products_of(app: App) -> list[str]:
    with app.uow() as uow:
        return list(uow.session.scalars(select(m.Product.name).order_by(m.Product.name)))


def test_the_list_has_one_row_per_person_with_each_product(app: App) -> None:
    load_examples(app, enroll=False)
    products = products_of(app)
    assert len(products) == 2  # every person of leads.csv is a lead of both products
    with app.uow() as uow:
        people = search_people(uow, per_page=200).items
        leads = uow.session.scalar(select(func.count()).select_from(m.Lead)) or 0
    assert len(people) == leads // 2 and len({p.contact_id for p in people}) == len(people)
    assert all([lead.product for lead in p.leads] == products for p in people)
    with app.uow() as uow:
        [priya] = search_people(uow, "fernhollow").items
    assert priya.email == PRIYA and priya.name == "Priya Raman"


def test_bulk_enroll_follows_the_single_lead_rules(app: App) -> None:
    load_examples(app, enroll=False)
    people = [contact_id(app, PRIYA), contact_id(app, MARC)]
    report = enroll_people(app.uow, Q1, people)
    assert (report.enrolled, report.already, report.skipped) == (2, 0, [])
    assert sum(step_counts(app, PRIYA, _product(app, Q1)).values()) == 3  # every step planned
    again = enroll_people(app.uow, Q1, people)
    assert (again.enrolled, again.already) == (0, 2)  # never twice
    stop_people(app.uow, [people[1]], product=_product(app, PILOT), by="ann@alpha.test", why="test")
    refused = enroll_people(app.uow, PILOT, people)
    assert refused.enrolled == 1 and refused.skipped == [(MARC, "lead is stopped")]


def test_bulk_stop_stops_each_lead_and_cancels_its_queued_steps(app: App) -> None:
    load_examples(app)
    people = [contact_id(app, PRIYA), contact_id(app, MARC)]
    moved = stop_people(app.uow, people, product=None, by="ann@alpha.test", why="from the Leads page")
    assert (moved.changed, moved.skipped) == (4, [])  # two people, two products each
    for email in (PRIYA, MARC):
        for campaign in (Q1, PILOT):
            product = _product(app, campaign)
            assert lead_state(app, email, product) == "stopped"
            counts = step_counts(app, email, product)
            assert counts.get("scheduled", 0) == 0 and counts["cancelled"] >= 1
    with app.uow() as uow:
        events = uow.session.scalars(select(m.Event.data).where(m.Event.kind == "lead_state_set")).all()
    assert len(events) == 4 and all(e["by"] == "ann@alpha.test" for e in events)
    twice = stop_people(app.uow, people[:1], product=None, by="ann@alpha.test", why="again")
    assert twice.changed == 0 and [why for _, why in twice.skipped] == ["already stopped"] * 2


def test_bulk_stop_in_one_product_leaves_the_other(app: App) -> None:
    load_examples(app)
    reports = _product(app, Q1)
    moved = stop_people(app.uow, [contact_id(app, PRIYA)], product=reports, by="a@b.test", why="t")
    assert moved.changed == 1
    assert lead_state(app, PRIYA, reports) == "stopped"
    assert lead_state(app, PRIYA, _product(app, PILOT)) == "active"


def test_bulk_assign_gives_people_to_a_user_of_the_workspace(app: App) -> None:
    load_examples(app, enroll=False)
    tenant(app, app.workspace, "ann@alpha.test")
    people = [contact_id(app, PRIYA), contact_id(app, MARC)]
    given = assign_people(app.uow, people, "Ann@Alpha.test", by="ann@alpha.test")
    assert given.changed == 2
    with app.uow() as uow:
        owners = {uow.session.get_one(m.Contact, i).owner for i in people}
        events = uow.session.scalar(select(func.count()).where(m.Event.kind == "lead_assigned"))
    assert owners == {"ann@alpha.test"} and events == 4  # each lead of each person
    with pytest.raises(NotFound):
        assign_people(app.uow, people, "nobody@alpha.test", by="ann@alpha.test")


def test_a_person_of_another_workspace_refuses_the_request_before_anything_is_written(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_examples(app)
    bravo = tenant(app, "bravo", "bob@bravo.test").app
    with bravo.uow() as uow:
        import_leads(uow, "Bravo product", list(read_leads(csv_of([{"email": "secret@bravo.test"}]))))
        uow.commit()
    theirs = contact_id(bravo, "secret@bravo.test")
    ours = contact_id(app, PRIYA)
    monkeypatch.setattr(lead_bulk, "CHUNK", 1)  # our person's chunk comes first and would commit
    for act in (
        lambda: stop_people(app.uow, [ours, theirs], product=None, by="a@b.test", why="t"),
        lambda: enroll_people(app.uow, Q1, [ours, theirs]),
        lambda: assign_people(app.uow, [ours, theirs], "bob@bravo.test", by="a@b.test"),
    ):
        with pytest.raises(LookupError, match=f"no person {theirs} in this workspace"):
            act()
    assert lead_state(app, PRIYA, _product(app, Q1)) == "active"
    with bravo.uow() as uow:
        ws = uow.workspace_id
        assert uow.session.scalars(select(m.Lead.reply_state).where(m.Lead.workspace_id == ws)).all() == [
            "active"
        ]
        assert uow.session.scalars(select(m.Contact.owner).where(m.Contact.workspace_id == ws)).all() == [
            None
        ]


def _product(app: App, campaign: str) -> str:
    with app.uow() as uow:
        return uow.session.scalars(
            select(m.Product.name)
            .join(m.Campaign, m.Campaign.product_id == m.Product.id)
            .where(m.Campaign.name == campaign)
        ).one()
