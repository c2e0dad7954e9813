// durable ui: live updates (docs/reference/ui.md §16.5). The page works without this file; with it, an open
// page listens to the server's event stream and, on each change, fetches itself and swaps the parts that
// changed (marked data-live-part), keeping the scroll position and anything being typed.
(function () {
  "use strict";
  var live = document.body.getAttribute("data-live");
  if (!live || !window.EventSource || !window.fetch || !window.DOMParser) { return; }
  var busy = false, again = false, held = false;
  function swap(html) {
    var fresh = new DOMParser().parseFromString(html, "text/html");
    var parts = document.querySelectorAll("[data-live-part]");
    for (var i = 0; i < parts.length; i++) {
      var part = parts[i], next = fresh.getElementById(part.id);
      if (!next || part.innerHTML === next.innerHTML) { continue; }
      if (part.hasAttribute("data-keep-focus") && part.contains(document.activeElement) && document.activeElement !== document.body) {
        held = true;  // someone is typing an answer: swap when they leave the form
        continue;
      }
      part.innerHTML = next.innerHTML;
    }
  }
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(window.location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html) { swap(html); } })
      .catch(function () {})
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  document.addEventListener("focusout", function () {
    if (held) { held = false; setTimeout(refresh, 50); }
  });
  var source = new EventSource(live);
  source.addEventListener("changed", refresh);
})();
