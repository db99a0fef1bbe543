// evalsite's one script: keyboard shortcuts on the labelling page, the copy button, and one
// htmx setting the CSP needs.
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
