// replyguard: a little progressive enhancement. Every action works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // "Select all" checkboxes: <input type=checkbox data-select-all="name">.
  for (const box of document.querySelectorAll("input[data-select-all]")) {
    box.addEventListener("change", () => {
      const name = box.getAttribute("data-select-all");
      for (const other of document.querySelectorAll(`input[type=checkbox][name="${name}"]`)) {
        other.checked = box.checked;
      }
    });
  }
  // Ask before actions that cannot be undone: <form data-confirm="...">.
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.getAttribute("data-confirm"))) event.preventDefault();
    });
  }
  // Forms sent once (a person's answer): a second click while the first is on its way does
  // nothing. The server is idempotent anyway; this only spares a useless request.
  for (const form of document.querySelectorAll("form[data-once]")) {
    form.addEventListener("submit", (event) => {
      if (form.dataset.submitted) {
        event.preventDefault();
        return;
      }
      form.dataset.submitted = "1";
      for (const button of form.querySelectorAll("button[type=submit]")) button.setAttribute("aria-busy", "true");
    });
  }
  // On a narrow screen the navigation folds into its "Menu" (open without JavaScript).
  const menu = document.querySelector("details.menu");
  if (menu && window.matchMedia("(max-width: 820px)").matches) menu.open = false;
  // Stacked tables on a narrow screen: each cell says which column it is.
  for (const table of document.querySelectorAll("table")) {
    const heads = [...table.querySelectorAll("thead th")].map((th) => th.textContent.trim());
    if (!heads.length) continue;
    for (const row of table.querySelectorAll("tbody tr")) {
      [...row.children].forEach((cell, i) => {
        if (heads[i] && !cell.hasAttribute("data-label")) cell.setAttribute("data-label", heads[i]);
      });
    }
  }
  // Filters apply as soon as one changes (the Filter button stays for a browser without this).
  for (const form of document.querySelectorAll("form[data-autosubmit]")) {
    for (const field of form.querySelectorAll("select, input[type=checkbox]")) {
      field.addEventListener("change", () => form.requestSubmit());
    }
  }
  // Inbox triage by keyboard: j/k move, Enter opens, x chooses, e done, a assign to me,
  // / search, ? the keys. Typing in a field is never taken for a key.
  const list = document.querySelector("table[data-keyboard]");
  if (list) {
    const rows = () => [...list.querySelectorAll("tbody tr[data-thread]")];
    let at = -1;
    const move = (to) => {
      const all = rows();
      if (!all.length) return;
      at = Math.max(0, Math.min(all.length - 1, to));
      all.forEach((row, i) => {
        row.classList.toggle("current", i === at);
        row.setAttribute("aria-selected", i === at ? "true" : "false");
      });
      all[at].scrollIntoView({ block: "nearest" });
    };
    const current = () => rows()[at];
    const decide = (action) => {
      const row = current();
      const form = document.getElementById("bulk");
      if (!row || !form) return;
      for (const box of document.querySelectorAll("input[name=ids]")) box.checked = false;
      const box = row.querySelector("input[name=ids]");
      if (!box) return;
      box.checked = true;
      // After the page comes back, the keyboard is on the thread that followed this one.
      const next = rows()[at + 1];
      if (next) sessionStorage.setItem("rg-inbox-next", next.dataset.thread);
      form.querySelector(`button[value=${action}]`).click();
    };
    // Enter in the snooze field snoozes (the form's first button would assign).
    const until = document.querySelector("#bulk input[name=until_at]");
    if (until) {
      until.addEventListener("keydown", (event) => {
        if (event.key !== "Enter") return;
        event.preventDefault();
        document.querySelector("#bulk button[value=snooze]").click();
      });
    }
    const remembered = sessionStorage.getItem("rg-inbox-next");
    sessionStorage.removeItem("rg-inbox-next");
    const start = rows().findIndex((row) => row.dataset.thread === remembered);
    move(start < 0 ? 0 : start);
    document.addEventListener("keydown", (event) => {
      const target = event.target;
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      if (target instanceof HTMLElement && target.closest("a, input, select, textarea, button, dialog, summary")) return;
      const keys = {
        j: () => move(at + 1),
        k: () => move(at - 1),
        Enter: () => current() && current().querySelector("a").click(),
        x: () => {
          const box = current() && current().querySelector("input[name=ids]");
          if (box) box.checked = !box.checked;
        },
        e: () => decide("done"),
        a: () => decide("assign_me"),
        "/": () => document.querySelector("input[name=q]").focus(),
        s: () => {
          const box = current() && current().querySelector("input[name=ids]");
          if (box && ![...document.querySelectorAll("input[name=ids]")].some((b) => b.checked)) box.checked = true;
          document.querySelector("#bulk input[name=until_at]").focus();
        },
        "?": () => document.getElementById("keys-help").showModal(),
      };
      const act = keys[event.key];
      if (!act) return;
      event.preventDefault();
      act();
    });
  }
  // Tell the others on a thread that this person is writing an answer (a short-lived mark;
  // the thread's version, not this, decides whose answer goes).
  for (const area of document.querySelectorAll("textarea[data-presence]")) {
    area.addEventListener("input", () => {
      if (area.dataset.marked) return;
      area.dataset.marked = "1";
      const form = area.form;
      const body = new URLSearchParams({ doing: "answering", csrf_token: form.elements["csrf_token"].value });
      fetch(area.getAttribute("data-presence"), { method: "POST", body, credentials: "same-origin" });
    }, { once: false });
  }
  // A snooze time is read in the zone its form names: the reader's own zone is offered (and
  // chosen) when the browser knows it, and the label always says the zone the time is in.
  for (const choice of document.querySelectorAll("select[data-zone-choice]")) {
    const label = choice.form.querySelector("label[for]");
    const say = () => { if (label) label.textContent = `Snooze until, ${choice.value} time`; };
    const mine = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (mine && ![...choice.options].some((o) => o.value === mine)) choice.add(new Option(mine, mine), 0);
    if (mine) choice.value = mine;
    choice.addEventListener("change", say);
    say();
  }
  // A page that follows something running (an audit) reloads itself until it is over; without
  // JavaScript its Refresh link does the same.
  const following = document.querySelector("[data-refresh]");
  if (following) {
    const seconds = Number(following.getAttribute("data-refresh")) || 2;
    window.setTimeout(() => window.location.reload(), seconds * 1000);
  }
  // The new-campaign form: a new mailbox's fields only when "A new mailbox" is picked (an
  // existing mailbox's own settings are used; without this file the server ignores them).
  const pick = document.getElementById("mailbox_pick");
  const fresh = document.querySelector("fieldset.new-mailbox");
  if (pick && fresh) {
    const show = () => { fresh.hidden = pick.value.trim() !== "new"; };
    pick.addEventListener("change", show);
    show();
  }
  // Show times in the reader's own zone as a tooltip: <time datetime="...">.
  for (const t of document.querySelectorAll("time[datetime]")) {
    const when = new Date(t.getAttribute("datetime"));
    if (!Number.isNaN(when.getTime())) t.title = when.toLocaleString();
  }
});
