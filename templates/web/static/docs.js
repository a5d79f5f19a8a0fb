// GET /docs: Swagger UI over our OpenAPI document, started from this file (the CSP allows no inline script).
// The document comes in the page's language (<html lang>: its texts in German on /docs?lang=de; Swagger UI's own
// controls stay English). The key entered on the validation page (sessionStorage of this tab) is set for
// "Try it out"; "Authorize" takes another one. No online validator badge: the page fetches nothing from elsewhere.
"use strict";

(function () {
  const key = sessionStorage.getItem("einvoice.apiKey");
  const lang = document.documentElement.lang === "de" ? "de" : "en";
  const ui = SwaggerUIBundle({
    url: "/v1/openapi.json?lang=" + lang,
    dom_id: "#swagger-ui",
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
    displayRequestDuration: true,
    validatorUrl: null,
    onComplete() {
      if (!key) return;
      ui.preauthorizeApiKey("bearerAuth", key);
      document.getElementById("docs-key").hidden = false;
    },
  });
  window.ui = ui;
})();
