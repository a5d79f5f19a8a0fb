// GET /docs: Swagger UI over our OpenAPI document, started from this file (the CSP allows no inline script).
// The document comes in the page's language (<html lang>: its texts in German on /docs?lang=de), and so do Swagger
// UI's own controls ("Try it out", "Parameters", "Responses"): it words them in English only, so each text and label
// it paints is said again from the page's strings (`swagger`: its English -> German) as it paints it. The key
// entered on the validation page (sessionStorage of this tab) is set for "Try it out"; "Authorize" takes another
// one. No online validator badge: the page fetches nothing from elsewhere.
"use strict";

(function () {
  const key = sessionStorage.getItem("einvoice.apiKey");
  const lang = document.documentElement.lang === "de" ? "de" : "en";
  const strings = JSON.parse(document.getElementById("page-data").textContent).strings;
  const words = strings.swagger || {};
  // The operations' groups are headed by their tag's name ("validation"), an identifier of the document (its deep
  // links, #/validation, keep it): the heading alone says it in the page's language.
  const tagNames = strings.swagger_tags || {};
  const LABELS = ["aria-label", "title", "placeholder"];

  // A text node or a label whose whole text (spaces aside) is one of Swagger UI's words: the page's word instead.
  // The document's own texts are never touched: none of them is one of those words alone.
  function sayText(node) {
    const text = node.nodeValue.trim();
    if (Object.hasOwn(words, text)) node.nodeValue = node.nodeValue.replace(text, words[text]);
    else if (Object.hasOwn(tagNames, text) && node.parentElement && node.parentElement.matches(".opblock-tag a span")) {
      node.nodeValue = node.nodeValue.replace(text, tagNames[text]);
    }
  }
  function sayLabels(element) {
    for (const name of LABELS) {
      const value = element.getAttribute(name);
      if (value && Object.hasOwn(words, value.trim())) element.setAttribute(name, words[value.trim()]);
    }
  }
  function say(root) {
    if (root.nodeType === Node.TEXT_NODE) return sayText(root);
    if (root.nodeType !== Node.ELEMENT_NODE) return;
    sayLabels(root);
    root.querySelectorAll("[aria-label], [title], [placeholder]").forEach(sayLabels);
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) sayText(node);
  }
  const host = document.getElementById("swagger-ui");
  if (Object.keys(words).length) {
    // React paints and repaints the operations as they are opened: each change is said again as it comes
    new MutationObserver((changes) => {
      for (const change of changes) {
        if (change.type === "childList") change.addedNodes.forEach(say);
        else if (change.type === "characterData") sayText(change.target);
        else sayLabels(change.target);
      }
    }).observe(host, {childList: true, characterData: true, attributes: true, attributeFilter: LABELS,
                      subtree: true});
  }

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
