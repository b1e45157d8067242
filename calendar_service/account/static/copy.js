// Copy buttons for secrets shown once. A convenience only: without JavaScript the buttons stay
// hidden and the secret can be selected by hand. No inline script, so the CSP stays strict.
(function () {
  "use strict";
  function status(id, text) {
    var el = document.querySelector('[data-copy-status="' + id + '"]');
    if (el) { el.textContent = text; }
  }
  function copied(id) { status(id, "Copied to the clipboard."); }
  function fallback(input, id) {
    input.focus();
    input.select();
    try {
      if (document.execCommand("copy")) { copied(id); return; }
    } catch (e) { /* fall through */ }
    status(id, "Press Ctrl+C (⌘C on a Mac) to copy the selected text.");
  }
  document.addEventListener("DOMContentLoaded", function () {
    var buttons = document.querySelectorAll("button[data-copy]");
    Array.prototype.forEach.call(buttons, function (button) {
      var id = button.getAttribute("data-copy");
      var input = document.getElementById(id);
      if (!input) { return; }
      button.hidden = false;
      input.addEventListener("focus", function () { input.select(); });
      button.addEventListener("click", function () {
        if (navigator.clipboard && window.isSecureContext) {
          navigator.clipboard.writeText(input.value).then(
            function () { copied(id); },
            function () { fallback(input, id); }
          );
        } else {
          fallback(input, id);
        }
      });
    });
  });
})();
