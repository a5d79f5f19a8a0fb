// The status messages tab of the page (templates/web/status_panel.html.j2): France's lifecycle status messages
// (CDV). Like every action of the page, plain calls of the public API with the person's key, through the helpers
// web.js shares (window.einvoicePage): the readable page of one message or of several (POST
// /v1/invoice/fr-ctc/status/render, a timeline per invoice), its PDF, the timeline as JSON, and a message
// generated from JSON (POST /v1/invoice/fr-ctc/status: 400 entries name the field and its MDT term).
"use strict";

(function () {
  const page = window.einvoicePage;
  const {t, $, fmt, el} = page;
  const BASE = "/v1/invoice/fr-ctc/status";
  const files = $("status-files");
  const error = $("status-error");

  function form(request) {
    const body = new FormData();
    for (const file of files.files) body.append("file", file, file.name);
    body.append("request", new Blob([JSON.stringify(request)], {type: "application/json"}));
    return body;
  }

  function ready(box) {
    box.hidden = true;
    if (!page.apiKey()) return page.showMessage(box, t.need_key), $("api-key").focus(), false;
    if (!files.files.length) return page.showMessage(box, t.status_need_files), files.focus(), false;
    return true;
  }

  async function run(button, what, action) {
    button.disabled = true;
    const work = page.progress($("status-status"));
    work.say(what);
    try {
      await action();
      work.stop(true);
    } catch (failure) {
      work.stop(false);
      if (!(failure instanceof page.ApiFailure)) throw failure;
      page.showFailure(error, failure, null);
    } finally {
      button.disabled = false;
      page.land(button); // after an error or a success that showed nothing to focus: back to the button
    }
  }

  $("status-form").addEventListener("submit", (event) => {
    event.preventDefault();
    if (!ready(error)) return;
    const request = {language: $("status-language").value, validate: true};
    run($("status-button"), fmt(t.status_reading, {count: files.files.length}), async () => {
      const html = await (await page.call(BASE + "/render", form(request), "text/html")).text();
      $("status-frame").hidden = false;
      page.fill("status-frame", page.framed(new DOMParser().parseFromString(html, "text/html")));
      page.land($("status-frame")); // the page read: keyboard scrolling moves through it
    });
  });

  $("status-pdf").addEventListener("click", () => {
    if (!ready(error)) return;
    run($("status-pdf"), fmt(t.status_reading, {count: files.files.length}), async () => {
      const response = await page.call(BASE + "/render", form({language: $("status-language").value}),
                                       "application/pdf");
      page.save(await response.blob(), "statuses.pdf");
    });
  });

  $("status-json").addEventListener("click", () => {
    if (!ready(error)) return;
    run($("status-json"), fmt(t.status_reading, {count: files.files.length}), async () => {
      const response = await page.call(BASE + "/timeline", form({validate: true}), "application/json");
      page.save(await response.blob(), "timeline.json");
    });
  });

  // ---- generate one from JSON ---------------------------------------------------------------------------------
  const area = $("status-request");
  const generateError = $("status-generate-error");
  let generatedUrl = null;

  $("status-load-example").addEventListener("click", async () => {
    generateError.hidden = true;
    try {
      const response = await fetch("/examples/" + encodeURIComponent($("status-example").value), {credentials: "omit"});
      if (!response.ok) throw new Error(fmt(t.error_status, {status: response.status}));
      area.value = await response.text();
      area.focus();
    } catch (err) {
      page.showMessage(generateError, err instanceof TypeError ? t.network_error : err.message);
    }
  });

  $("status-generate-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    generateError.hidden = true;
    if (!page.apiKey()) return page.showMessage(generateError, t.need_key), $("api-key").focus();
    if (!area.value.trim()) return page.showMessage(generateError, t.need_request), area.focus();
    $("status-generated").hidden = true;
    const button = $("status-generate-button");
    button.disabled = true;
    const work = page.progress($("status-generate-status"));
    work.say(fmt(t.generating, {endpoint: BASE}));
    try {
      const blob = await (await page.call(BASE, area.value, "application/xml")).blob();
      if (generatedUrl) URL.revokeObjectURL(generatedUrl);
      generatedUrl = URL.createObjectURL(blob);
      const name = "status.xml";
      $("status-generated-title").textContent = fmt(t.generated, {name, size: blob.size});
      const link = $("status-generated-link");
      link.href = generatedUrl;
      link.download = name;
      link.textContent = fmt(t.download_document, {name});
      $("status-generated-preview").textContent = (await blob.text()).slice(0, 200000);
      $("status-generated").hidden = false;
      work.stop(true);
      $("status-generated-title").focus();
    } catch (failure) {
      work.stop(false);
      if (!(failure instanceof page.ApiFailure)) throw failure;
      page.showFailure(generateError, failure, area);
    } finally {
      button.disabled = false;
      page.land(button); // after an error or a success that showed nothing to focus: back to the button
    }
  });
  void el;
})();
