// evalsite's one script: keyboard shortcuts on the labelling page, the copy button, one htmx
// setting the CSP needs, and stale htmx responses dropped.
// Every shortcut presses a real button that also works without JavaScript.
(function () {
  "use strict";

  // htmx "settles" an element swapped in with the same id as the one it replaces by copying
  // the old element's class, style, width and height onto it with setAttribute. Our CSP
  // (style-src 'self') refuses every style attribute set that way, so a note box the user
  // had resized logged a CSP error on each labelling key. No element of ours carries an
  // inline style (the CSP forbids them), so there is nothing to settle there.
  if (window.htmx) {
    htmx.config.attributesToSettle = htmx.config.attributesToSettle.filter(function (name) {
      return name !== "style";
    });
  }

  // A response for a part of the page that was replaced while the request was out (a run's
  // progress poll still in flight when "Cancel run…" swapped the progress) is dropped. htmx
  // would swap it into the detached part and look for its out-of-band status badge there,
  // logging htmx:oobErrorNoTarget. htmx asks the request's target before it swaps (the
  // event does not reach the document from a detached element, hence a listener on each
  // target, added once).
  var guarded = new WeakSet();
  document.addEventListener("htmx:beforeRequest", function (event) {
    var target = event.detail.target;
    if (!target || guarded.has(target)) return;
    guarded.add(target);
    target.addEventListener("htmx:beforeSwap", function (swap) {
      if (!target.isConnected) swap.detail.shouldSwap = false;
    });
  });

  function typing(event) {
    var el = event.target;
    return el && (el.tagName === "TEXTAREA" || el.tagName === "INPUT" || el.tagName === "SELECT" || el.isContentEditable);
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var workspace = document.getElementById("label-workspace");
    if (!workspace) return;
    if (event.key === "Escape" && typing(event)) {
      event.target.blur();
      return;
    }
    if (typing(event)) return;
    var key = event.key.toLowerCase();
    if (key === "n") {
      var note = workspace.querySelector("textarea[name=note]");
      if (note) { event.preventDefault(); note.focus(); }
      return;
    }
    var button = workspace.querySelector('button[data-key="' + key + '"]');
    if (button && !button.disabled) {
      event.preventDefault();
      button.click();
    }
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[data-copy]");
    if (!button) return;
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) return;
    source.select();
    if (navigator.clipboard) {
      navigator.clipboard.writeText(source.value).then(function () {
        button.textContent = "Copied";
      });
    }
  });
})();
