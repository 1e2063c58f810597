// Reloads the page's live part (#live) every data-refresh seconds while
// the tab is visible: each reload is one request to the console, which
// makes a few admin calls (docs/console.md). No other script runs; actions are plain forms.
(function () {
  "use strict";
  var live = document.getElementById("live");
  var toggle = document.getElementById("live-toggle");
  var status = document.getElementById("live-status");
  // A page without data-refresh (an ended job) does not change.
  if (!live || !live.getAttribute("data-refresh")) return;
  var every = parseInt(live.getAttribute("data-refresh"), 10) * 1000;
  var on = true, busy = false;
  if (toggle) {
    toggle.hidden = false;
    toggle.addEventListener("click", function () {
      on = !on;
      toggle.setAttribute("aria-pressed", String(on));
      toggle.textContent = on ? "Pause live updates" : "Resume live updates";
      if (on) tick();
    });
  }
  function say(text) { if (status) status.textContent = text; }
  function tick() {
    if (!on || busy || document.hidden) return;
    busy = true;
    var u = new URL(window.location.href);
    u.searchParams.set("part", "live");
    u.searchParams.delete("done");
    fetch(u.toString(), { cache: "no-store", credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.text();
      })
      .then(function (html) {
        // Keep an open <details> open across reloads.
        var open = Array.prototype.map.call(live.querySelectorAll("details[open] summary"), function (s) { return s.textContent; });
        live.innerHTML = html;
        Array.prototype.forEach.call(live.querySelectorAll("details summary"), function (s) {
          if (open.indexOf(s.textContent) >= 0) s.parentNode.open = true;
        });
        live.setAttribute("data-updated", String(Date.now()));
        say("updated " + new Date().toISOString().slice(11, 19) + " UTC");
      })
      .catch(function (e) { say("update failed: " + e.message); })
      .then(function () { busy = false; });
  }
  setInterval(tick, every);
  document.addEventListener("visibilitychange", function () { if (!document.hidden) tick(); });
})();
