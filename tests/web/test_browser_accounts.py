"""The life of an account in a real browser (Debian's Chromium through Playwright), against the
real app under uvicorn, on SQLite and PostgreSQL: an owner adds a rep, the rep signs in and
makes an API token; the owner disables the rep — the rep's open page is signed out at its next
request and the token is refused at once —, resets the password and enables the rep again, who
must choose a new password before anything else. JavaScript is off: it all works without."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import Browser, Page, expect

from tests.web.browser import screenshot
from tests.web.conftest import Site
from tests.web.support import PASSWORD

REP = "rep@alpha.test"
REPS_OWN = "seven lanterns over a quiet harbour"


def sign_in(page: Page, base: str, email: str, password: str) -> None:
    page.goto(f"{base}/login")
    page.fill("#email", email)
    page.fill("#password", password)
    page.click("button[type=submit]")


def test_an_account_from_added_to_disabled_reset_and_enabled_again(site: Site, browser: Browser) -> None:
    base = site.base
    owner_context = browser.new_context(java_script_enabled=False, viewport={"width": 1400, "height": 900})
    rep_context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 900})
    owner, rep = owner_context.new_page(), rep_context.new_page()

    # The owner adds a member: a temporary password, shown once.
    sign_in(owner, base, site.alpha.email, PASSWORD)
    expect(owner).to_have_url(f"{base}/inbox")
    owner.click("nav >> text=Users")
    owner.fill("#add-user input[name=email]", REP)
    owner.fill("#add-user input[name=name]", "Rep Who Leaves")
    owner.select_option("#add-user select[name=role]", "member")
    owner.click("#add-user button[type=submit]")
    temporary = owner.locator("#handed-password .secret").inner_text().strip()
    assert len(temporary) >= 12

    # The rep signs in with it and must choose their own password first.
    sign_in(rep, base, REP, temporary)
    expect(rep).to_have_url(f"{base}/account")
    expect(rep.locator("#must-change")).to_be_visible()
    rep.goto(f"{base}/inbox")
    expect(rep).to_have_url(f"{base}/account")  # nothing else until then
    rep.fill("#current", temporary)
    rep.fill("#password", REPS_OWN)
    rep.fill("#confirm", REPS_OWN)
    rep.click("#password-form button[type=submit]")
    expect(rep).to_have_url(f"{base}/inbox")
    expect(rep.locator("[data-flash]")).to_contain_text("Password changed")
    expect(rep.locator("nav >> text=Users")).to_have_count(0)  # a member manages no users

    # The rep makes an API token (write at most: a member's rights).
    rep.goto(f"{base}/settings/tokens")
    expect(rep.locator("select[name=scope] option")).to_have_text(["read", "write"])
    rep.fill("input[name=name]", "rep's CRM sync")
    rep.select_option("select[name=scope]", "write")
    rep.click("button:has-text('Create token')")
    token = rep.locator("#new-token .secret").inner_text().strip()
    with httpx.Client(timeout=60, base_url=base, headers={"Authorization": f"Bearer {token}"}) as api:
        assert api.get("/api/v1/me").json()["rights"] == "write"

        # The rep leaves: the owner disables the account.
        owner.goto(f"{base}/settings/users")
        expect(owner.locator(f"tr[data-user='{REP}'] td.num").first).to_have_text("1")  # one session
        owner.locator(f"tr[data-user='{REP}'] button:has-text('Disable')").click()
        expect(owner.locator("[data-flash]")).to_contain_text(f"{REP} is disabled")
        screenshot(owner, f"users-disabled-{site.db}")

        # The rep's open page: signed out at its next request; the token is refused now.
        rep.click("nav >> text=Campaigns")
        expect(rep).to_have_url(re.compile(r"/login\?next=%2Fcampaigns"))
        assert api.get("/api/v1/me").status_code == 401
        sign_in(rep, base, REP, REPS_OWN)
        expect(rep.locator(".notice.error")).to_have_text("Wrong email or password.")

        # Reset and enable again: a new temporary password; the old token stays dead.
        owner.locator(f"tr[data-user='{REP}'] button:has-text('Reset password')").click()
        second = owner.locator("#handed-password .secret").inner_text().strip()
        owner.locator(f"tr[data-user='{REP}'] button:has-text('Enable')").click()
        expect(owner.locator("[data-flash]")).to_contain_text(f"{REP} may sign in again")
        assert api.get("/api/v1/me").status_code == 401

    sign_in(rep, base, REP, REPS_OWN)  # the password before the reset no longer works
    expect(rep.locator(".notice.error")).to_have_text("Wrong email or password.")
    sign_in(rep, base, REP, second)
    expect(rep).to_have_url(f"{base}/account")
    rep.fill("#current", second)
    rep.fill("#password", "a second harbour with nine lanterns")
    rep.fill("#confirm", "a second harbour with nine lanterns")
    rep.click("#password-form button[type=submit]")
    expect(rep).to_have_url(f"{base}/inbox")
    screenshot(rep, f"account-back-{site.db}")
    owner_context.close()
    rep_context.close()
