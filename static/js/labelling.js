// The labelling page: the `?` keys overlay (Esc or `?` closes it) and the stored-label toast,
// which fades after a few seconds (the message itself comes from the server, issue 30 item 3).
(function () {
  "use strict";

  var TOAST_MS = 6000;
  var toastTimer = null;

  function overlay() { return document.getElementById("label-keys"); }

  function typing(event) {
    var el = event.target;
    return el && (el.tagName === "TEXTAREA" || el.tagName === "INPUT" || el.tagName === "SELECT" || el.isContentEditable);
  }

  function openKeys() {
    var box = overlay();
    if (!box) return;
    box.hidden = false;
    var close = document.getElementById("label-keys-close");
    if (close) close.focus();
  }

  function closeKeys() {
    var box = overlay();
    if (!box || box.hidden) return;
    box.hidden = true;
    var opener = document.getElementById("label-keys-open");
    if (opener) opener.focus();
  }

  // Capturing on window runs before app.js's shortcuts: while the list is open, a key
  // closes it (Esc, ?) or does nothing, so no label is stored behind the overlay.
  window.addEventListener("keydown", function (event) {
    var box = overlay();
    if (!box || event.ctrlKey || event.metaKey || event.altKey) return;
    if (!box.hidden) {
      if (event.key === "Escape" || event.key === "?") closeKeys();
      if (event.key !== "Tab") { event.preventDefault(); event.stopPropagation(); }
      return;
    }
    if (event.key === "?" && !typing(event)) {
      event.preventDefault();
      event.stopPropagation();
      openKeys();
    }
  }, true);

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!target.closest) return;
    if (target.closest("#label-keys-open")) openKeys();
    else if (target.closest("#label-keys-close") || target === overlay()) closeKeys();
  });

  function fadeToast() {
    var toast = document.getElementById("label-toast");
    if (!toast) return;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(function () { toast.classList.add("gone"); }, TOAST_MS);
  }

  document.addEventListener("DOMContentLoaded", fadeToast);
  document.addEventListener("htmx:afterSettle", fadeToast);
})();
