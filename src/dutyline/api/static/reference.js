// Starts Swagger UI on /docs over the server's own /openapi.json. Loaded as a file, not
// inline, so the page runs under a Content-Security-Policy without 'unsafe-inline' scripts.
// The app key typed into "Authorize" lives in this page's memory only: it is never written
// to localStorage (persistAuthorization: false) and is gone when the page is closed.
(function () {
  "use strict";
  window.SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#reference",
    // Deep links put a link inside each operation's toggle button, which screen readers and
    // axe refuse (nested-interactive).
    deepLinking: false,
    persistAuthorization: false,
    // No badge from the public validator: the page loads nothing from elsewhere.
    validatorUrl: null,
    docExpansion: "none",
    defaultModelsExpandDepth: 0,
    defaultModelExpandDepth: 2,
    displayRequestDuration: true,
    filter: true,
    tryItOutEnabled: false,
    layout: "BaseLayout",
    // Plain JSON: the highlighting themes colour some values below readable contrast.
    syntaxHighlight: { activated: false },
  });
})();

// Swagger UI leaves some controls without a name a screen reader can match to what is
// shown: the dialog's close cross and the copy buttons (no text), buttons whose aria-label
// leaves out their visible text ("Authorize" labelled "Apply credentials"), and the request
// body's text box. Name them as they show, and let the keyboard reach the code blocks.
(function () {
  "use strict";
  function nameButtons() {
    document.querySelectorAll("button").forEach(function (button) {
      var text = button.textContent.trim();
      var label = button.getAttribute("aria-label");
      if (!text && !label && button.classList.contains("close-modal")) {
        button.setAttribute("aria-label", "Close");
      } else if (!text && !label && button.closest(".copy-to-clipboard")) {
        button.setAttribute("aria-label", "Copy to clipboard");
      } else if (text && label && label.toLowerCase().indexOf(text.toLowerCase()) < 0) {
        button.setAttribute("aria-label", text + " (" + label.toLowerCase() + ")");
      }
    });
    document.querySelectorAll("textarea.body-param__text:not([aria-label])").forEach(
      function (box) { box.setAttribute("aria-label", "Request body (JSON)"); });
    // An example or an answer taller or wider than its box scrolls: a keyboard reaches it
    // too (Tab, then the arrow keys).
    document.querySelectorAll("pre.microlight:not([tabindex])").forEach(
      function (code) { code.setAttribute("tabindex", "0"); });
  }
  new MutationObserver(nameButtons).observe(document.body, { childList: true, subtree: true });
})();
