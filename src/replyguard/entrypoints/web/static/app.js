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
  // Show times in the reader's own zone as a tooltip: <time datetime="...">.
  for (const t of document.querySelectorAll("time[datetime]")) {
    const when = new Date(t.getAttribute("datetime"));
    if (!Number.isNaN(when.getTime())) t.title = when.toLocaleString();
  }
});
