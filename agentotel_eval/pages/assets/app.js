// agentotel-eval pages: filters that apply on change, copy buttons, and new runs without a reload.
(function () {
  "use strict";

  function wire(root) {
    root.querySelectorAll("select[data-autosubmit]").forEach(function (el) {
      el.addEventListener("change", function () { el.form.submit(); });
    });
    root.querySelectorAll("button[data-copy]").forEach(function (button) {
      button.addEventListener("click", function () {
        var text = button.getAttribute("data-copy");
        var done = function () { button.textContent = "copied"; setTimeout(function () { button.textContent = "copy"; }, 1500); };
        // a file opened from disk, or a browser that refuses the clipboard API: copy through a selection
        var fallback = function () {
          var area = document.createElement("textarea");
          area.value = text; document.body.appendChild(area); area.select();
          try { if (document.execCommand("copy")) { done(); } } catch (e) { /* the id stays selectable */ }
          document.body.removeChild(area);
        };
        if (navigator.clipboard && window.isSecureContext) {
          navigator.clipboard.writeText(text).then(done, fallback);
        } else {
          fallback();
        }
      });
    });
  }

  // Poll a small JSON document; when runs or scores have been written since the page was made, fetch the page
  // again and swap its content in, unless the reader is typing in a filter or has a call's details toggled.
  function poll(url) {
    var busy = false;
    setInterval(function () {
      if (busy || document.hidden) { return; }
      var active = document.activeElement;
      if (active && (active.tagName === "INPUT" || active.tagName === "SELECT")) { return; }
      busy = true;
      fetch(url, { cache: "no-store" }).then(function (r) { return r.ok ? r.json() : null; }).then(function (latest) {
        if (!latest || latest.version === document.body.dataset.version) { return null; }
        return fetch(window.location.href, { cache: "no-store" }).then(function (r) { return r.ok ? r.text() : null; })
          .then(function (html) {
            if (!html) { return; }
            var doc = new DOMParser().parseFromString(html, "text/html");
            var main = document.querySelector("main"), fresh = doc.querySelector("main");
            if (!main || !fresh) { return; }
            main.innerHTML = fresh.innerHTML;
            document.body.dataset.version = doc.body.dataset.version || latest.version;
            document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
            wire(main);
          });
      }).catch(function () { /* the collector may be restarting: try again at the next tick */ })
        .then(function () { busy = false; });
    }, Number(document.body.dataset.pollInterval || 3000));
  }

  wire(document);
  if (document.body.dataset.poll) { poll(document.body.dataset.poll); }
})();
