// evalsite's one script: keyboard shortcuts on the labelling page and the copy button.
// Every shortcut presses a real button that also works without JavaScript.
(function () {
  "use strict";

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
