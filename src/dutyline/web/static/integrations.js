// Copy buttons of the integration pages: each button[data-copy] copies the text of the
// element its value names. Without this file the text stays selectable and the buttons
// stay hidden (they do nothing without it).
(function () {
  "use strict";
  function wire(button) {
    var target = document.getElementById(button.getAttribute("data-copy"));
    if (!target || !navigator.clipboard) { return; }
    var label = button.firstChild.nodeValue;
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(target.textContent).then(function () {
        button.firstChild.nodeValue = button.getAttribute("data-copied") || "Copied";
        window.setTimeout(function () { button.firstChild.nodeValue = label; }, 2000);
      });
    });
  }
  function start() {
    var buttons = document.querySelectorAll("button[data-copy]");
    for (var i = 0; i < buttons.length; i++) { wire(buttons[i]); }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
