// The incident list's keyboard shortcuts and its live rows. No inline script anywhere (the
// console's CSP forbids it): this file is loaded by the list page and does nothing elsewhere.
//   j / k    focus the next / previous incident (its title link)
//   Enter    open the focused incident (the link's own behaviour)
//   a        acknowledge the focused incident (its row's form, with its CSRF token)
//   /        focus the search field
//   ?        show or hide the list of shortcuts
(function () {
  "use strict";

  function list() { return document.getElementById("incident-list"); }

  function rows() {
    var l = list();
    return l ? Array.prototype.slice.call(l.querySelectorAll(":scope > li.incident")) : [];
  }

  function currentRow() {
    var el = document.activeElement;
    return el && el.closest ? el.closest("#incident-list > li.incident") : null;
  }

  function focusRow(row) {
    var link = row && row.querySelector("a.title");
    if (link) {
      link.focus();
      row.scrollIntoView({block: "nearest"});
    }
  }

  function move(step) {
    var all = rows();
    if (!all.length) { return; }
    var at = all.indexOf(currentRow());
    var next = at < 0 ? (step > 0 ? 0 : all.length - 1)
                      : Math.min(all.length - 1, Math.max(0, at + step));
    focusRow(all[next]);
  }

  function typing(target) {
    if (!target) { return false; }
    var tag = target.tagName;
    return tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || target.isContentEditable;
  }

  document.addEventListener("keydown", function (event) {
    if (!list() || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) {
      return;
    }
    var key = event.key;
    if (key === "j") { move(1); }
    else if (key === "k") { move(-1); }
    else if (key === "a") {
      var row = currentRow();
      var form = row && row.querySelector("form.ack");
      if (!form) { return; }
      if (form.requestSubmit) { form.requestSubmit(); } else { form.submit(); }
    } else if (key === "/") {
      var search = document.getElementById("f-q");
      if (!search) { return; }
      search.focus();
    } else if (key === "?") {
      var help = document.getElementById("shortcuts");
      if (!help) { return; }
      help.open = !help.open;
    } else {
      return;
    }
    event.preventDefault();
  });

  // Whether the list is live, for people (the notice beside the heading) and for tests.
  function liveState(state, text) {
    var live = document.querySelector(".live");
    var notice = document.getElementById("live-state");
    if (live) { live.setAttribute("data-live", state); }
    if (notice) { notice.textContent = text; }
  }
  document.addEventListener("htmx:sseOpen", function () {
    liveState("open", "Live: new incidents appear here as they open.");
  });
  document.addEventListener("htmx:sseError", function () {
    liveState("retrying", "Reconnecting for live updates…");
  });
  document.addEventListener("htmx:sseClose", function () {
    liveState("closed", "Live updates stopped: reload the page.");
  });

  // A new incident the page already shows (it opened between the page's read and the
  // stream's start) replaces its row instead of showing twice.
  document.addEventListener("htmx:sseBeforeMessage", function (event) {
    var message = event.detail;
    if (!message || message.type !== "incident-new") { return; }
    var holder = document.createElement("template");
    holder.innerHTML = String(message.data).trim();
    var row = holder.content.firstElementChild;
    var old = row && row.id ? document.getElementById(row.id) : null;
    if (old) {
      event.preventDefault();
      old.replaceWith(row);
      if (window.htmx) { window.htmx.process(row); }
    }
  });

  // A row replaced while it had the focus keeps it (j/k go on from where they were).
  var focusedId = null;
  document.addEventListener("htmx:sseBeforeMessage", function () {
    var row = currentRow();
    focusedId = row ? row.id : null;
  });
  document.addEventListener("htmx:sseMessage", function () {
    if (focusedId && !currentRow()) {
      focusRow(document.getElementById(focusedId));
    }
    focusedId = null;
  });
})();
