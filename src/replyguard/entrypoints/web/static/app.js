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
  // Show times in the reader's own zone as a tooltip: <time datetime="...">.
  for (const t of document.querySelectorAll("time[datetime]")) {
    const when = new Date(t.getAttribute("datetime"));
    if (!Number.isNaN(when.getTime())) t.title = when.toLocaleString();
  }
});
