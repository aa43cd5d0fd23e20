// The page's one script (docs/web.md). No inline script anywhere: the Content-Security-Policy allows only this file.
// It posts resolutions with the X-Eventlog-Token header (a plain form post carries only the cookie and is refused),
// and refreshes the status strip until doctor and verify have answered.
"use strict";
(function () {
  const meta = document.querySelector('meta[name="eventlog-token"]');
  const token = meta ? meta.getAttribute("content") : "";

  async function resolve(form) {
    const id = form.getAttribute("data-alert-id");
    const out = form.querySelector('[data-testid="resolve-message"]');
    const button = form.querySelector('[data-testid="resolve-submit"]');
    const body = {
      resolution: form.elements.namedItem("resolution").value,
      note: form.elements.namedItem("note").value,
    };
    button.disabled = true;
    out.textContent = "…";
    out.setAttribute("data-ok", "");
    try {
      const r = await fetch("/api/alerts/" + encodeURIComponent(id) + "/resolution", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-Eventlog-Token": token },
        body: JSON.stringify(body),
      });
      const data = await r.json().catch(() => ({ error: "HTTP " + r.status }));
      if (r.ok) {
        const a = data.alert;
        out.textContent = "recorded: " + a.verdict + " (" + a.state + ")";
        out.setAttribute("data-ok", "true");
        document.querySelectorAll('[data-testid="alert-row"]').forEach((row) => {
          if (row.getAttribute("data-alert-id") !== a.id) return;
          row.setAttribute("data-state", a.state);
          row.setAttribute("data-resolution", a.resolution || "");
          const st = row.querySelector('[data-testid="alert-state"]');
          if (st) st.textContent = a.state + (a.verdict ? " (" + a.verdict + ")" : "");
        });
        form.elements.namedItem("note").value = "";
      } else {
        out.textContent = data.error || "HTTP " + r.status;
        out.setAttribute("data-ok", "false");
      }
    } catch (e) {
      out.textContent = String(e);
      out.setAttribute("data-ok", "false");
    } finally {
      button.disabled = false;
    }
  }

  document.addEventListener("submit", (ev) => {
    const form = ev.target;
    if (!(form instanceof HTMLFormElement) || form.getAttribute("data-testid") !== "resolve-form") return;
    ev.preventDefault();
    resolve(form);
  });

  function showStatus(snap) {
    const strip = document.querySelector('[data-testid="status"]');
    if (!strip) return;
    strip.textContent = "";
    for (const c of snap.checks) {
      const s = document.createElement("span");
      s.className = "status-item " + (c.ok ? "ok" : "fail");
      s.setAttribute("data-testid", "status-item");
      s.setAttribute("data-check", c.check);
      s.setAttribute("data-ok", c.ok ? "true" : "false");
      s.title = c.detail;
      s.textContent = c.check + ": " + (c.ok ? "ok" : "FAIL") + (c.check === "last-event" && c.ok ? " " + (c.local || c.detail) : "");
      strip.appendChild(s);
    }
    strip.setAttribute("data-ready", "true");
  }

  async function pollStatus(tries) {
    const strip = document.querySelector('[data-testid="status"]');
    if (!strip || strip.getAttribute("data-ready") === "true" || tries <= 0) return;
    try {
      const r = await fetch("/api/status", { credentials: "same-origin", headers: { "X-Eventlog-Token": token } });
      const snap = await r.json();
      if (snap.ready) { showStatus(snap); return; }
    } catch (e) { /* the server stopped: leave the strip as it is */ }
    setTimeout(() => pollStatus(tries - 1), 1000);
  }

  pollStatus(120);
})();
