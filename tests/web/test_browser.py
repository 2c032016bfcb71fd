"""The web workspace in a real browser (Debian's Chromium through Playwright) against the
real app under uvicorn, on SQLite and PostgreSQL.

The main flow runs with JavaScript turned off: every core action works without it."""

from __future__ import annotations

import html
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from tests.web.browser import screenshot
from tests.web.conftest import Site
from tests.web.support import PASSWORD

CAMPAIGN = """product = "Atlas"

[campaign]
name = "Atlas launch"
mailbox = "sam@atlas.test"
from_name = "Sam Rivers"
owner = "sam@atlas.test"
timezone = "Europe/Berlin"
send_window = { days = ["mon", "tue", "wed", "thu", "fri"], start = "09:00", end = "17:00" }
daily_cap = 40

[[campaign.steps]]
wait = "0d"
subject = "A question about {{ company }}"
body = "Hi {{ first_name }}, may I ask how {{ company }} plans its launches?"
approval = true

[[campaign.steps]]
wait = "3d"
body = "Hi {{ first_name }}, bringing this back up."
"""
LEADS = (
    "email,first_name,last_name,company,timezone\n"
    "ada@lovelace.test,Ada,Lovelace,Analytical Engines,Europe/London\n"
    "grace@hopper,Grace,Hopper,Navy,America/New_York\n"
    "alan@turing.test,Alan,Turing,Bletchley,Europe/London\n"
)


def sign_in(page: Page, base: str, email: str) -> None:
    page.goto(f"{base}/campaigns")
    expect(page).to_have_url(re.compile(r"/login\?next="))
    page.fill("#email", email)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{base}/campaigns")


def test_import_create_enroll_approve_and_the_lead_timeline_shows_it(
    site: Site,
    browser: Browser,
    tmp_path: Path,
) -> None:
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    base = site.base
    sign_in(page, base, site.alpha.email)

    # Import a CSV with one bad row: it is shown with its line number, the others are kept.
    leads = tmp_path / "leads.csv"
    leads.write_text(LEADS)
    page.goto(f"{base}/leads/import")
    page.select_option("#product", label="A new product (name it below)")  # never from a typo
    page.fill("#new_product", "Atlas")
    page.set_input_files("#file", str(leads))
    page.click("button:has-text('Import')")
    expect(page.locator("#import-result")).to_contain_text("2 created, 0 updated, 1 row skipped")
    expect(page.locator("#import-errors")).to_contain_text("leads.csv:3")
    expect(page.locator("#import-errors")).to_contain_text("not a valid email address: 'grace@hopper'")
    screenshot(page, f"import-{site.db}")

    # Create the campaign from its TOML file.
    campaign = tmp_path / "atlas.toml"
    campaign.write_text(CAMPAIGN)
    page.goto(f"{base}/campaigns/new")
    page.set_input_files("#file", str(campaign))
    page.click("button:has-text('Create campaign')")
    expect(page).to_have_url(re.compile(r"/campaigns/\d+$"))  # the message is in the session
    expect(page.locator("[data-flash]")).to_have_text("Campaign created. Enroll leads below.")
    expect(page.locator("h1")).to_have_text("Atlas launch")

    # Enroll every lead of the product: step 1 waits for approval.
    page.click("button:has-text('Enroll')")
    expect(page.locator(".notice")).to_contain_text("2 enrolled, 0 already enrolled, 0 skipped")
    page.click(".tabs a:has-text('awaiting approval')")
    rows = page.locator("#approve-selected tbody tr")
    expect(rows).to_have_count(2)

    # Approve Ada's first step only.
    page.check("input[aria-label='Select step 1 for ada@lovelace.test']")
    page.click("button:has-text('Approve selected')")
    expect(page.locator(".notice")).to_contain_text("1 step approved.")
    expect(rows).to_have_count(1)
    expect(page.locator(".tabs a.current .count")).to_have_text("1")
    screenshot(page, f"campaign-{site.db}")

    # The lead's timeline says who approved it, and when.
    page.goto(f"{base}/leads?q=lovelace")
    page.click("a:has-text('Ada Lovelace')")
    timeline = page.locator("#timeline")
    approval = timeline.locator("li[data-kind='step_approved']")
    expect(approval).to_contain_text(f"{site.alpha.email} approved a step waiting for approval")
    expect(approval).to_contain_text("step 1")
    expect(approval.locator("time")).to_have_text(re.compile(r"Mon 7 Dec 2026, 06:00 UTC"))
    expect(timeline.locator("li[data-kind='enrolled']")).to_contain_text("enrolled in Atlas launch")
    screenshot(page, f"lead-{site.db}")
    context.close()


#: Each payload would set `__pwned` in whatever window it ran in, and open a dialog.
RUN = "window.__pwned=1;try{top.__pwned=1}catch(e){};alert(1)"


def hostile_html(spy: str) -> str:
    """Scripts, event handlers, javascript: links, SVG, MathML and CSS tricks; every URL that
    could be fetched points at `spy`, a loopback server that counts what reaches it."""
    return f"""<html><head><meta http-equiv="refresh" content="0;url=javascript:{RUN}">
<base href="{spy}/base/"><style>body{{background:url("{spy}/css-background")}}</style>
<link rel="stylesheet" href="{spy}/stylesheet.css"></head>
<body onload="{RUN}">
<p>Hello Sam, <b>interesting</b> offer.</p>
<script>{RUN}</script>
<img src="x" onerror="{RUN}">
<img src="{spy}/open.gif?u=ann" alt="pixel">
<svg onload="{RUN}"><script>{RUN}</script><a xlink:href="javascript:{RUN}"><text y="20">svg</text></a></svg>
<math><mtext><table><mglyph><style><img src=x onerror="{RUN}"></style></mglyph></table></mtext></math>
<a href="javascript:{RUN}">a javascript: link</a>
<a href="jav&#x09;ascript:{RUN}">an encoded one</a>
<iframe src="javascript:{RUN}"></iframe><iframe srcdoc="<script>{RUN}</script>"></iframe>
<object data="data:text/html,<script>{RUN}</script>"></object><embed src="{spy}/embed">
<details open ontoggle="{RUN}"><summary>s</summary></details>
<input autofocus onfocus="{RUN}"><video><source onerror="{RUN}"></video>
<form action="javascript:{RUN}"><button>go</button></form>
<div style="width:expression({RUN});background-image:url({spy}/div-background)">css</div>
</body></html>"""


def hostile_message(subject: str, spy: str) -> bytes:
    return (
        'From: "<script>window.__pwned=1</script>" <attacker@evil.test>\r\n'
        "To: sam@atlas.test\r\n"
        f"Subject: {subject}\r\n"
        "Message-ID: <xss-1@evil.test>\r\n"
        "MIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
        f"{hostile_html(spy)}\r\n"
    ).encode()


@contextmanager
def spy_server() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that records every path asked of it (a tracker's view)."""
    hits: list[str] = []

    class Spy(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Spy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def assert_nothing_ran(page: Page, dialogs: list[str]) -> None:
    for frame in page.frames:
        assert frame.evaluate("() => typeof window.__pwned") == "undefined", frame.url
    assert dialogs == []


def test_hostile_inbound_html_runs_no_script_in_chromium(site: Site, browser: Browser) -> None:
    from replyguard.service_layer.inbound.ingest import ingest_raw

    with spy_server() as (spy, hits):
        raw = hostile_message("<img src=x onerror=alert(1)> offer", spy)
        ingest_raw(site.alpha.app, raw, "file")
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        sign_in(page, site.base, site.alpha.email)

        page.goto(f"{site.base}/inbound?status=unmatched")
        listed = page.locator("#inbound-messages tbody")
        expect(listed).to_contain_text("<img src=x onerror=alert(1)> offer")  # shown as text
        listed.locator("a").click()
        expect(page.locator("iframe.message-frame")).to_have_attribute("sandbox", "")
        mail = page.frame_locator("iframe.message-frame")
        expect(mail.locator("body")).to_contain_text("interesting")
        mail.get_by_text("a javascript: link").click()  # clicked by the person: goes nowhere
        expect(page.locator("#images-blocked")).to_contain_text("1 remote image blocked")
        page.wait_for_load_state("networkidle")
        assert_nothing_ran(page, dialogs)
        assert hits == []  # not the pixel, not a stylesheet, not a background: nothing left us
        screenshot(page, f"inbound-message-{site.db}")

        # Remote images only when the person asks; still no script, and nothing else fetched.
        page.click("a:has-text('Load images')")
        expect(mail.locator("img[alt=pixel]")).to_be_visible()
        page.wait_for_load_state("networkidle")
        assert_nothing_ran(page, dialogs)
        assert hits == ["/open.gif?u=ann"]
        context.close()


def test_the_xss_check_itself_catches_a_script_that_runs(site: Site, browser: Browser) -> None:
    """The control: the same page, the same message frame where a message lives, with its
    defences taken away on the way to the browser (the sanitised HTML swapped for the raw
    payload, the frame's sandbox opened to scripts and dialogs, the page's CSP dropped). The
    script then runs inside that frame and the checks above see it — so their silence there
    means something."""
    from replyguard.service_layer.inbound.ingest import ingest_raw

    with spy_server() as (spy, _hits):
        ingest_raw(site.alpha.app, hostile_message("control", spy), "file")
    payload = f'<p>control</p><img src=x onerror="{RUN}">'

    def undefended(route: Route) -> None:
        response = route.fetch()
        body = response.text()
        assert 'class="message-frame" sandbox=""' in body  # what the control takes away
        body = body.replace('sandbox=""', 'sandbox="allow-scripts allow-modals"')
        body = re.sub(r'srcdoc="[^"]*"', f'srcdoc="{html.escape(payload, quote=True)}"', body)
        headers = {k: v for k, v in response.headers.items() if k.lower() != "content-security-policy"}
        route.fulfill(response=response, body=body, headers=headers)

    context = browser.new_context()
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    sign_in(page, site.base, site.alpha.email)
    page.goto(f"{site.base}/inbound?status=unmatched")
    link = page.locator("#inbound-messages tbody a").first
    page.route(re.compile(r".*/inbound/\d+$"), undefended)
    link.click()
    expect(page.locator("iframe.message-frame")).to_have_attribute("sandbox", "allow-scripts allow-modals")
    frame = next(f for f in page.frames if f is not page.main_frame)
    frame.wait_for_function("() => window.__pwned === 1")
    assert page.evaluate("() => typeof window.__pwned") == "undefined"  # only the frame ran it
    assert dialogs == ["1"]  # the dialog listener hears a frame's dialogs
    with pytest.raises(AssertionError, match="about:srcdoc"):
        assert_nothing_ran(page, [])  # the frame check alone sees the script that ran there
    context.close()
