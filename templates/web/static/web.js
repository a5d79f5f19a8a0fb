// The page for people (GET /): validate a received invoice, generate one from JSON. Plain script, loaded from our
// origin (the CSP allows no inline script). Every action is a call of the public API with the key the person
// entered; the page itself decides nothing: verdicts, findings and pages are the service's own answers.
"use strict";

(function () {
  const data = JSON.parse(document.getElementById("page-data").textContent);
  const t = data.strings;
  const KEY = "einvoice.apiKey"; // sessionStorage: this tab only, gone when it closes; never a cookie or a URL
  const $ = (id) => document.getElementById(id);

  // "{count}" is the value; "{count|file|files}" the form for one, else the other, "#" in it the value ("1 file",
  // "2 files": no "file(s)"). A count may come formatted for the language ("5.000"): its digits decide.
  function fmt(text, values) {
    const one = (name) => Number(String(values[name]).replace(/\D/g, "")) === 1;
    return text
      .replace(/\{(\w+)\|([^{}|]*)\|([^{}|]*)\}/g, (whole, name, single, plural) =>
        (name in values ? (one(name) ? single : plural).replace(/#/g, String(values[name])) : whole))
      .replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
  }

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  // A JSON field path (`invoice.invoiceLines[1].quantity`) that may break after each dot and before each bracket,
  // never inside a name ("invoice.sellerS / iren" on a phone)
  function pathEl(tag, path, className) {
    const node = el(tag, null, className);
    String(path).split(/(?<=\.)|(?=\[)/).forEach((piece, i) => {
      if (i) node.append(document.createElement("wbr"));
      node.append(piece);
    });
    node.classList.add("path");
    return node;
  }

  // ---- the key ------------------------------------------------------------------------------------------------
  const keyInput = $("api-key");
  keyInput.value = sessionStorage.getItem(KEY) || "";
  keyInput.addEventListener("input", () => {
    const value = keyInput.value.trim();
    if (value) sessionStorage.setItem(KEY, value);
    else sessionStorage.removeItem(KEY);
  });
  $("forget-key").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    keyInput.value = "";
    keyInput.focus();
  });
  const apiKey = () => keyInput.value.trim();

  // ---- tabs (WAI-ARIA tab pattern: arrow keys move between the tabs, Tab goes on into the panel) ---------------
  const tabs = Array.from(document.querySelectorAll('[role="tab"]'));

  function selectTab(tab, focus) {
    for (const other of tabs) {
      const on = other === tab;
      other.setAttribute("aria-selected", String(on));
      other.tabIndex = on ? 0 : -1;
      $(other.getAttribute("aria-controls")).hidden = !on;
    }
    if (focus) tab.focus();
  }

  tabs.forEach((tab, i) => {
    tab.addEventListener("click", () => selectTab(tab, false));
    tab.addEventListener("keydown", (event) => {
      const to = {ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1}[event.key];
      if (to === undefined) return;
      event.preventDefault();
      selectTab(tabs[(to + tabs.length) % tabs.length], true);
    });
  });

  // ---- calling the API ----------------------------------------------------------------------------------------
  class ApiFailure extends Error {
    constructor(status, error) {
      super(error.message || "");
      this.status = status;
      this.error = error; // the ErrorResponse (or a stand-in with a message when the answer was none)
    }
  }

  async function call(path, body, accept) {
    const headers = {Authorization: "Bearer " + apiKey()};
    if (accept) headers.Accept = accept;
    if (typeof body === "string") headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(path, {method: "POST", headers, body, credentials: "omit", cache: "no-store"});
    } catch (_) { // the browser's own words ("Failed to fetch") are English whatever the page's language
      throw new ApiFailure(0, {message: t.network_error});
    }
    if (!response.ok) {
      let error;
      try {
        error = await response.json();
      } catch (_) {
        error = {};
      }
      if (!error || typeof error !== "object") error = {};
      if (!error.message) error.message = fmt(t.error_status, {status: response.status});
      throw new ApiFailure(response.status, error);
    }
    return response;
  }

  function upload(file, request) {
    const form = new FormData();
    form.append("file", file, file.name);
    form.append("request", new Blob([JSON.stringify(request)], {type: "application/json"}));
    return form;
  }

  // A size for people in the page's language: 28.6 MB / 28,6 MB (MiB, as the service counts its limits).
  function megabytes(bytes) {
    const mb = bytes / (1024 * 1024);
    return mb.toLocaleString(data.lang, {maximumFractionDigits: mb < 10 ? 1 : 0}) + " MB";
  }

  // A file past the service's upload limit, said before it is sent: the 413 came after the whole upload, with the
  // limit in bytes (English) or, on the German page, without it.
  function tooLarge(file) {
    return file.size > data.maxUpload ?
      fmt(t.too_large_file, {name: shownName(file.name), size: megabytes(file.size), limit: megabytes(data.maxUpload)})
      : "";
  }

  function save(blob, name) {
    const url = URL.createObjectURL(blob);
    const link = el("a");
    link.href = url;
    link.download = name;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  }

  // ---- progress and errors ------------------------------------------------------------------------------------
  // A status line says what runs; a clock beside it (hidden from screen readers, which hear the line once)
  // shows that slow work (a ZUGFeRD PDF, a long invoice) is still going.
  function progress(box) {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    const line = el("span");
    const clock = el("span", fmt(t.working, {seconds: 0}), "clock");
    clock.setAttribute("aria-hidden", "true");
    const bar = el("progress");
    bar.setAttribute("aria-hidden", "true");
    box.replaceChildren(bar, line, clock);
    box.classList.add("busy");
    const timer = setInterval(() => { clock.textContent = fmt(t.working, {seconds: seconds().toFixed(0)}); }, 500);
    return {
      say(text) { line.textContent = text; },
      stop(ok) {
        clearInterval(timer);
        box.classList.remove("busy");
        // "0,2 s" on the German page, as its other numbers
        const shown = seconds().toLocaleString(data.lang, {minimumFractionDigits: 1, maximumFractionDigits: 1});
        box.replaceChildren(ok ? el("span", fmt(t.done, {seconds: shown})) : "");
      },
    };
  }

  // A button disabled while its call runs drops the keyboard focus to <body>, and a keyboard user had to start again
  // from the top: the focus then goes where the answer is (an error, a result). Where the person has moved on
  // meanwhile (typing elsewhere), it stays there.
  function land(target) {
    if (!target) return;
    if (document.activeElement && document.activeElement !== document.body) return;
    if (target.tabIndex < 0 && !target.hasAttribute("tabindex")) target.tabIndex = -1;
    target.focus();
  }

  function showMessage(box, text) {
    box.replaceChildren(el("p", text));
    box.hidden = false;
  }

  // The service's message in the page's language: its code's sentence where the page has one (the German page
  // has one for every code a person meets here), else the service's own words.
  // A message the service words for one case of a code (NOT_AN_EINVOICE for a ZUGFeRD 1.0 invoice, not "no CII, no
  // UBL, no PDF") is said as such where the page has it (strings' messages), before the code's general sentence.
  function known(message) {
    return (t.messages && Object.hasOwn(t.messages, message) && t.messages[message]) || "";
  }

  function said(code, message) {
    return known(message) || (code && t.errors && t.errors[code]) || message;
  }

  function showFailure(box, failure, area) {
    const error = failure.error;
    const head = el("p");
    const what = [failure.status || "", error.errorCode || ""].join(" ").trim();
    if (what) head.append(el("strong", what + ": "));
    // a code of ours that refines the spec's (503 RATE_LIMIT_CONFIGURATION_UNAVAILABLE for STORAGE_UNAVAILABLE,
    // RULES_CHANGED or JOBS_DISK_FULL) says what happened; the spec's says only its class
    const refined = (error.errors || []).map((e) => e.code).find((code) => data.refines[code] === error.errorCode);
    head.append(said(refined || error.errorCode, error.message));
    box.replaceChildren(head);
    if (Array.isArray(error.errors) && error.errors.length) box.append(errorTable(error.errors, area));
    if (error.requestId) box.append(el("p", t.request_id + ": " + error.requestId, "small"));
    box.hidden = false;
    land(box);
  }

  // ErrorResponse.errors[] as a table: the JSON field (a button that selects it in the request, where there is
  // one), its business term, the message and the value sent. A column no entry fills is left out: a file's 400
  // (INVALID_PDF) drew empty "Business term" and "Sent value" columns beside its one row.
  function errorTable(errors, area) {
    const rows = errors.map((entry) => {
      const field = el("td");
      if (entry.field && area) {
        const button = pathEl("button", entry.field, "link");
        button.type = "button";
        button.addEventListener("click", () => selectField(area, entry.field));
        field.append(button);
      } else {
        field.append(pathEl("code", entry.field || "–"));
      }
      const rejected = entry.rejectedValue === undefined || entry.rejectedValue === null ? "" :
        JSON.stringify(entry.rejectedValue);
      // a field's entry: the German the service wrote for its own finding (a content check refused by
      // config.strict), else its code's sentence in the page's language where there is one (the field and term
      // stand beside it); a rule's text as the official rules give it
      const message = data.lang === "de" && entry.messageDe ? entry.messageDe : known(entry.message)
        || (t.errors && t.errors[entry.code] ? inLanguage(entry, rejected) : withoutField(entry));
      return [field, el("td", entry.businessTerm || ""), el("td", `${message} (${entry.code})`), el("td", rejected)];
    });
    const names = [t.field, t.term, t.message, t.rejected];
    // the field and the message always; the term and the value sent where an entry has one
    const shown = names.map((_, i) => i === 0 || i === 2 || rows.some((cells) => cells[i].textContent !== ""));
    const table = el("table", null, "findings");
    const head = el("tr");
    names.forEach((name, i) => {
      if (!shown[i]) return;
      const th = el("th", name);
      th.scope = "col";
      head.append(th);
    });
    table.append(el("thead"), el("tbody"));
    table.tHead.append(head);
    for (const cells of rows) {
      const row = el("tr");
      cells.forEach((cell, i) => {
        if (!shown[i]) return;
        // each cell names its column: on a narrow screen the rows are stacked and the header row is not shown
        cell.dataset.label = names[i];
        row.append(cell);
      });
      table.tBodies[0].append(row);
    }
    return table;
  }

  // The service's message begins with the field it is about ("invoice.issueDate (Invoice issue date, BT-2): is not
  // a valid calendar date"), which the row's first column already names: the path said twice in one row. The
  // term's name stays ("Invoice issue date: is not a valid calendar date"); its id is in the term column.
  function withoutField(entry) {
    const message = String(entry.message || "");
    if (!entry.field) return message;
    if (message.startsWith(entry.field + ": ")) return message.slice(entry.field.length + 2);
    const lead = entry.field + " (";
    const close = message.startsWith(lead) ? message.indexOf("): ", lead.length) : -1;
    if (close < 0) return message;
    let name = message.slice(lead.length, close);
    const term = entry.businessTerm ? ", " + entry.businessTerm : null;
    if (term && name.endsWith(term)) name = name.slice(0, -term.length);
    return `${name}: ${message.slice(close + 3)}`;
  }

  // The code's sentence stood alone, and said less than the service's (English) message: three rows "Pflichtangabe
  // fehlt." for three different notes, and "Pflichtangabe fehlt." beside the value sent ("HRB 12345" where a SIREN
  // is required). The rules the message names come along (a person can look BR-FR-05 up), and a required value
  // that was sent but is not what the rules ask for is said as such.
  const RULE_ID = /\b(?:BR|PEPPOL|CII|UBL)(?:-[A-Z0-9]+)*-[A-Z]*\d+\b/g;
  // A required note is told by its subject code (BT-21): France's PMT, PMD and AAB notes (BR-FR-05) gave three
  // identical rows "Pflichtangabe fehlt." on one field.
  const NOTE_CODE = /\bsubject code ([A-Z0-9]+) \(BT-21\)/;

  // The form of a date the message asks for ("must be a date string YYYY-MM-DD"), as German writes it (JJJJ-MM-TT):
  // "Der Wert hat nicht die verlangte Form." alone did not say which.
  const FORMAT = /\bYYYY-MM-DD(?:THH:MM:SS)?/;
  // A source's value the target cannot carry (NOT_CARRIED) names its place and value in front ("/rsm:.../ram:X
  // (line 12) = 'value': reason"): they stay, the reason is the code's sentence.
  const PLACE = /^(\S+)(?: \(line (\d+)\))? = ('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^:]*):/;

  // A file the service could not read at all (a damaged PDF, a broken ZIP, JSON or multipart body): the German row
  // said only "Die Datei ist kein lesbares PDF." where the English one gave the reader's own words ("unable to find
  // trailer dictionary"), which are what a person searches for or sends to the file's sender. Those words (after
  // the service's lead "the PDF cannot be parsed (truncated or damaged): ") stay, marked as the reader's.
  const READER_DETAIL = new Set(["INVALID_PDF", "INVALID_ARCHIVE", "MALFORMED_JSON", "MALFORMED_MULTIPART"]);

  // The JSON reader's few sentences ("Expecting ',' delimiter: line 3 column 5 (char 40)") are known ones: the German
  // page says them in German with their line and column (the request is the page's own text, not a sender's file);
  // one it does not know stays the reader's words.
  const JSON_AT = /^(.*?):? line (\d+) column (\d+)(?: \(char \d+\))?$/;

  function readerDetail(entry, message) {
    if (!READER_DETAIL.has(entry.code)) return "";
    const colon = message.indexOf(": ");
    const detail = colon < 0 ? "" : message.slice(colon + 2).trim().replace(/[.\s]+$/, "");
    const at = entry.code === "MALFORMED_JSON" ? JSON_AT.exec(detail) : null;
    if (at && Object.hasOwn(t.json_reader, at[1])) {
      return " " + fmt(t.json_detail, {what: t.json_reader[at[1]], line: at[2], column: at[3]});
    }
    return detail ? " " + fmt(t.detail_named, {detail}) : "";
  }

  function inLanguage(entry, rejected) {
    const message = String(entry.message || "");
    const note = entry.code === "REQUIRED" ? NOTE_CODE.exec(message) : null;
    let sentence = note ? fmt(t.required_note, {code: note[1]})
      : entry.code === "REQUIRED" && rejected !== "" ? t.required_sent : t.errors[entry.code];
    const format = FORMAT.exec(message);
    if (format) sentence += " " + fmt(t.format_named, {format: format[0].replace("YYYY", "JJJJ").replace("DD", "TT")});
    const place = entry.code === "NOT_CARRIED" ? PLACE.exec(message) : null;
    if (place) sentence = `${place[1]}${place[2] ? ` (${fmt(t.at_line, {line: place[2]})})` : ""} = ${place[3]}: ${sentence}`;
    sentence += readerDetail(entry, message);
    const rules = [...new Set(message.match(RULE_ID) || [])];
    return rules.length ? `${sentence} ${fmt(t.rules_named, {rules: rules.join(", ")})}` : sentence;
  }

  // Where a JSON path (`invoice.invoiceLines[1].quantity`) is in the request text: each key in turn after the
  // last; the n-th element of an array is where the next key occurs for the (n+1)-th time. Good enough to point at
  // the field in a request as people write it; nothing depends on it.
  function selectField(area, path) {
    const text = area.value;
    let at = 0;
    let start = -1;
    let key = "";
    let repeat = 1;
    for (const step of path.split(".")) {
      const m = /^(.*?)((?:\[\d+\])?)$/.exec(step);
      key = JSON.stringify(m[1]);
      for (let n = 0; n < repeat; n++) {
        start = text.indexOf(key, at);
        if (start < 0) return;
        at = start + key.length;
      }
      repeat = m[2] ? Number(m[2].slice(1, -1)) + 1 : 1;
    }
    area.focus();
    area.setSelectionRange(start, start + key.length);
    const line = text.slice(0, start).split("\n").length;
    area.scrollTop = Math.max(0, (line - 3) * (parseFloat(getComputedStyle(area).lineHeight) || 18));
  }

  // ---- validate -----------------------------------------------------------------------------------------------
  const STATUS = "fr-ctc/status"; // France's lifecycle status messages (CDV): their own endpoints, not an invoice's
  const SPEC_NAMES = {xrechnung: t.spec_xrechnung, en16931: t.spec_en16931, peppol: t.spec_peppol,
                      "fr-ctc": t["spec_fr-ctc"], zugferd: t.spec_zugferd, [STATUS]: t["spec_fr-ctc/status"]};
  const fileInput = $("file");
  const drop = $("drop");
  let droppedFolder = null; // a folder dropped on the drop zone, [{file, path}]: the job's until another is chosen
  const validateStatus = $("validate-status");
  const validateError = $("validate-error");
  let current = null; // the validated file: {file, spec, targets}

  // The spec from the file, decided as the service decides it for a job's "auto" and `pipeline validate` without
  // --spec (pipeline/check/detect.py, whose markers and paths come in data.detect): a PDF is ZUGFeRD / Factur-X;
  // XML whose BT-24 names XRechnung, Peppol BIS Billing (UBL) or EXTENDED-CTC-FR is that; XML whose parties are
  // all in France is held to the French rules; any other EN 16931. A lifecycle status message (data.statusRoot) is
  // no invoice: it goes to POST /v1/invoice/fr-ctc/status/validate (an invoice endpoint said XML-UNKNOWN-ROOT).
  // `targets` are what the convert buttons offer: a PDF's embedded CII (validated) and UBL; an XML document's other
  // syntax and a ZUGFeRD PDF; none for a status message.
  const TARGET_NAMES = {CII: "CII", UBL: "UBL", ZUGFERD: t.target_zugferd}; // "ZUGFeRD-PDF" in German
  const convertButtons = [$("convert-button"), $("convert-button-2")];
  const rules = data.detect;

  // The texts at a path of [namespace, name] steps below `root`, spaces collapsed (as lxml's iterfind reads them).
  function textsAt(root, path) {
    let nodes = [root];
    for (const [ns, name] of path) {
      nodes = nodes.flatMap((n) => Array.from(n.children).filter((c) => c.namespaceURI === ns && c.localName === name));
    }
    return nodes.map((n) => n.textContent.trim().replace(/\s+/g, " "));
  }

  function detect(text) {
    if (text.slice(0, 1024).includes("%PDF-")) return {spec: "zugferd", syntax: null};
    const doc = new DOMParser().parseFromString(text, "application/xml"); // inert: nothing loads, nothing runs
    const root = doc.documentElement;
    const [statusNs, statusName] = data.statusRoot;
    if (root.namespaceURI === statusNs && root.localName === statusName) return {spec: STATUS, syntax: null};
    const known = rules.roots.find(([ns, name]) => root.namespaceURI === ns && root.localName === name);
    if (!known || doc.getElementsByTagName("parsererror").length) return {spec: "en16931", syntax: null};
    const syntax = known[2];
    const specId = textsAt(root, rules.specId[syntax])[0] || "";
    const parties = rules.parties[syntax];
    const countries = new Set([...parties.countries.flatMap((p) => textsAt(root, p)),
                               ...parties.vatIds.flatMap((p) => textsAt(root, p)).map((v) => v.slice(0, 2))]
      .map((c) => c.toUpperCase()).filter((c) => /^[A-Z]{2}$/.test(c)));
    const spec = specId.toLowerCase().includes(rules.xrechnung) ? "xrechnung"
      : syntax === "UBL" && rules.peppol.some((mark) => specId.includes(mark)) ? "peppol"
      : specId.includes(rules.french) || (countries.size === 1 && countries.has("FR")) ? "fr-ctc" : "en16931";
    return {spec, syntax};
  }

  async function sniff(file) {
    const head = await file.slice(0, 1024).text();
    const found = detect(head.includes("%PDF-") ? head : await file.text());
    if (found.spec === "zugferd") return {spec: "zugferd", targets: ["CII", "UBL"]};
    if (found.spec === STATUS) return {spec: STATUS, targets: []};
    return {spec: found.spec, targets: [found.syntax === "CII" ? "UBL" : "CII", "ZUGFERD"]};
  }

  drop.addEventListener("dragover", (event) => {
    event.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));

  // The page's file pickers (the label after each file input): what was chosen, in the page's language.
  function showPicked(input) {
    const picked = input.nextElementSibling && input.nextElementSibling.querySelector(".picked");
    if (!picked) return;
    const files = input.files ? input.files.length : 0;
    picked.textContent = !files ? t.picked_none
      : files === 1 ? input.files[0].name : fmt(t.picked_count, {count: files});
  }
  for (const input of document.querySelectorAll("input.own-picker")) {
    input.addEventListener("change", () => showPicked(input));
  }
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    if (!event.dataTransfer || !event.dataTransfer.files.length) return;
    // a folder dropped (Apple Mail's exported "Rechnungen.mbox", Thunderbird's "Local Folders") is a job of its
    // files as the job tab's folder input takes them; before, the folder itself went up as a file and could not be
    // read. Its entries are only to be had while the event lasts.
    const entries = [...event.dataTransfer.items].map((item) => item.webkitGetAsEntry && item.webkitGetAsEntry());
    if (entries.some((entry) => entry && entry.isDirectory)) return folderAsJob(entries.filter(Boolean));
    // several files are a job: before, the first was validated and the rest silently dropped
    if (event.dataTransfer.files.length > 1) return asJob(event.dataTransfer.files);
    fileInput.files = event.dataTransfer.files;
    fileInput.dispatchEvent(new Event("change"));
  });

  // A ZIP archive, a signed file (.p7m) or several files on this tab go to the job tab and run there as a job (a ZIP
  // was judged as one broken XML document: "format error", a code frame of binary): the files as its input holds them.
  const ZIP = /\.(zip|p7m)$/i;
  function asJob(files) {
    droppedFolder = null;
    const moved = new DataTransfer();
    for (const file of files) moved.items.add(file);
    $("job-files").files = moved.files;
    $("job-folder").value = "";
    $("job-spec").value = $("spec").value;
    fileInput.value = "";
    for (const input of [$("job-files"), $("job-folder"), fileInput]) showPicked(input);
    selectTab($("tab-jobs"), false);
    $("job-form").requestSubmit();
  }
  fileInput.addEventListener("change", () => {
    if (fileInput.files.length && apiKey()) $("validate-form").requestSubmit();
  });

  // Each file under the entries dropped, as {file, path} (its path in the folder, as the folder input's
  // webkitRelativePath); a folder's reader gives its entries in batches until one is empty.
  async function filesUnder(entries) {
    const found = [];
    for (const entry of entries) {
      if (entry.isFile) {
        found.push({file: await new Promise((resolve, reject) => entry.file(resolve, reject)),
                    path: entry.fullPath.replace(/^\//, "")});
      } else if (entry.isDirectory) {
        const reader = entry.createReader();
        for (;;) {
          const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
          if (!batch.length) break;
          found.push(...await filesUnder(batch));
        }
      }
    }
    return found;
  }

  $("job-folder").addEventListener("change", () => { droppedFolder = null; }); // a folder chosen takes its place

  async function folderAsJob(entries) {
    droppedFolder = await filesUnder(entries);
    $("job-files").value = "";
    $("job-folder").value = "";
    $("job-spec").value = $("spec").value;
    fileInput.value = "";
    for (const input of [$("job-files"), fileInput]) showPicked(input);
    $("job-folder").nextElementSibling.querySelector(".picked").textContent = droppedFolder.length === 1
      ? droppedFolder[0].file.name : fmt(t.picked_count, {count: droppedFolder.length});
    selectTab($("tab-jobs"), false);
    $("job-form").requestSubmit();
  }

  // A file name as its characters are: a bidi control (U+202A-202E, U+2066-2069) in a name only disguises it
  // ("Rechnung<RLO>lmx.exe" is painted "Rechnungexe.xml"), so it is written out, as the reports do (pdf/bidi.py).
  function shownName(name) {
    return String(name).replace(/[\u202A-\u202E\u2066-\u2069]/g,
                                (c) => `<U+${c.codePointAt(0).toString(16).toUpperCase()}>`);
  }

  function baseName(name) {
    return name.replace(/\.[^.]*$/, "") || "invoice";
  }

  // A document of the service for a sandboxed frame, with the invoice page's stylesheets (html.xsl's HTML carries
  // none, WeasyPrint adds the first for the PDF; the report takes its fonts and headings from it too; the second
  // holds the rules for narrow screens).
  function framed(doc) {
    const links = data.invoiceCss.map((href) => {
      const link = doc.createElement("link");
      link.rel = "stylesheet";
      link.href = new URL(href, location.href).href;
      return link;
    });
    const screen = doc.createElement("style");
    // The frame's body is a tab stop, outlined while it has the focus: chromium's Tab skips a frame with nothing
    // focusable inside (a short report, the invoice page), so the keyboard never reached the panes to scroll them.
    screen.textContent = "body { margin: 16px; }\n"
      + "body:focus-visible { outline: 3px solid #1a73e8; outline-offset: -3px; }";
    doc.body.tabIndex = 0;
    doc.head.prepend(...links);
    doc.head.append(screen);
    return "<!DOCTYPE html>\n" + doc.documentElement.outerHTML;
  }

  // A frame gets its document as a fresh element, and only once the result is shown: Chromium does not paint a
  // sandboxed frame whose srcdoc changed while it was hidden (display: none) until something inside it scrolls,
  // so a short report that needs no scrollbar stayed blank.
  function fill(id, srcdoc) {
    const old = $(id);
    const frame = old.cloneNode(false);
    frame.srcdoc = srcdoc;
    old.replaceWith(frame);
  }

  function showInvoice(html) {
    fill("invoice-frame", framed(new DOMParser().parseFromString(html, "text/html")));
  }

  // One line of the report's verdict block as a sentence. A block with a heading says it before its items: "Not
  // judged" with each reason in full (its code alone, "RULES-NOT-INSTALLED", told a person nothing), the rules
  // that ran by their names; counts and plain lines as they are.
  function verdictLine(line) {
    const clean = (node) => node.textContent.trim().replace(/\s+/g, " ");
    const head = line.querySelector(":scope > .head");
    if (head) {
      const items = Array.from(line.querySelectorAll(":scope > .item"));
      if (!items.length) return clean(head);
      // each pack once: France's chain read "fr-ctc 1.4.0.04, en16931 1.3.16, fr-ctc 1.4.0.04" (its XSD, the CEN
      // rules, BR-FR); the frame below lists every step in order
      const said = line.classList.contains("applied")
        ? [...new Set(items.map((item) => clean(item.querySelector(".code") || item)))].join(", ")
        : items.map(clean).join(" · ");
      return `${clean(head)}: ${said}`;
    }
    const parts = line.querySelectorAll("span");
    return parts.length ? Array.from(parts, clean).join(", ") : clean(line);
  }

  // The verdict above the panes from the report; returns the report's document for its frame.
  function showReport(html) {
    const doc = new DOMParser().parseFromString(html, "text/html"); // inert: nothing runs, nothing loads
    const verdict = doc.querySelector("section.verdict");
    // valid, invalid or indeterminate (not judged on what it claims: never valid)
    const kind = (verdict && ["valid", "indeterminate"].find((k) => verdict.classList.contains(k))) || "invalid";
    const box = $("verdict");
    box.className = "verdict " + kind;
    $("verdict-title").textContent = t[kind];
    const lines = $("verdict-lines");
    lines.replaceChildren();
    if (verdict) {
      for (const line of verdict.querySelectorAll(":scope > div")) {
        lines.append(el("p", verdictLine(line)));
      }
      // what the worst class of the findings means for the receiver (BMF letter of 15 October 2025)
      const meaning = verdict.querySelector(":scope > p.meaning");
      if (meaning) lines.append(el("p", meaning.textContent.trim(), "meaning"));
    }
    const firstError = doc.querySelector(".finding .severity.ERROR");
    const rule = firstError && firstError.closest(".finding").querySelector(".rule");
    $("first-failed").hidden = !rule;
    $("first-failed-rule").textContent = rule ? rule.textContent.trim() : "";
    // The readable page is shown beside the findings (styled); the report's own copy below a valid verdict goes.
    doc.querySelectorAll("section.invoice-page").forEach((node) => node.remove());
    return framed(doc);
  }

  $("validate-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    validateError.hidden = true;
    const file = fileInput.files[0];
    if (!apiKey()) return showMessage(validateError, t.need_key), keyInput.focus();
    if (!file) return showMessage(validateError, t.need_file), fileInput.focus();
    $("mail-result").hidden = true;
    // a mailbox of no extension (Thunderbird's "Inbox", Apple Mail's export "mbox") is mail by its first bytes
    if (MAIL.test(file.name) || !FOLDER_SUFFIXES.test(file.name) && isMail(await headOf(file))) {
      return validateMail(file, $("spec").value);
    }
    if (ZIP.test(file.name) || fileInput.files.length > 1) return asJob(fileInput.files);
    if (tooLarge(file)) return showMessage(validateError, tooLarge(file)), $("result").hidden = true;
    const sniffed = await sniff(file);
    const spec = $("spec").value === "auto" ? sniffed.spec : $("spec").value;
    current = {file, spec, targets: sniffed.targets};
    $("result").hidden = true;
    // what the downloads said was about the document before (a conversion's notes, a 422): not about this one
    $("download-status").replaceChildren();
    $("convert-notes").hidden = true;
    $("download-error").hidden = true;
    $("validate-button").disabled = true;
    const work = progress(validateStatus);
    work.say(fmt(t.validating, {name: shownName(file.name), spec: SPEC_NAMES[spec]}));
    const request = {metadataLanguage: data.lang};
    // The report and the page are asked at once; the page's answer is read after the report's.
    const reportCall = call(`/v1/invoice/${spec}/validate`, upload(file, request), "text/html");
    const pageCall = spec === STATUS ? call(`/v1/invoice/${STATUS}/render`, upload(file, {language: data.lang}),
                                            "text/html")
      : call("/v1/invoice/render", upload(file, request), "text/html");
    pageCall.catch(() => {}); // read below, or dropped when the report failed
    try {
      const report = showReport(await (await reportCall).text());
      // converting answers 400 / 422 for a document the rules found invalid: offered for a valid one, and for one
      // not judged on what it claims (indeterminate: what is written is validated). A UBL that states Peppol's BT-24
      // and fails Peppol's own rules may be valid EN 16931: it converts to CII as EN 16931 (its Peppol findings are
      // said under the download), so that one button is offered for it.
      const valid = !$("verdict").classList.contains("invalid");
      const asEn16931 = !valid && spec === "peppol" && await validEn16931(file);
      $("result").dataset.spec = spec;
      convertButtons.forEach((button, i) => {
        button.hidden = !current.targets[i] || !(valid || (asEn16931 && current.targets[i] === "CII"));
        button.dataset.to = current.targets[i];
        button.textContent = fmt(t.dl_convert, {syntax: TARGET_NAMES[current.targets[i]]});
      });
      $("invoice-error").hidden = true;
      const asJson = document.querySelector('[data-download="parsed"]');
      asJson.hidden = spec === STATUS; // "Invoice as JSON" parses invoices
      $("result").hidden = false;
      fill("report-frame", report);
      work.say(spec === STATUS ? t.rendering_status : t.rendering);
      // the right pane shows the message, not an invoice
      $("invoice-heading").textContent = spec === STATUS ? t.status_heading : t.invoice;
      $("invoice-frame").title = spec === STATUS ? t.status_title : t.invoice_title;
      try {
        const invoice = await (await pageCall).text();
        $("invoice-frame").hidden = false;
        showInvoice(invoice);
      } catch (failure) {
        if (!(failure instanceof ApiFailure)) throw failure;
        $("invoice-frame").hidden = true;
        // the page and "Invoice as JSON" read the file alike: where the one has no invoice, the other answers 400
        asJson.hidden = true;
        // and so does converting: a ZUGFeRD 1.0 invoice (not judged: no rules for it) was offered two conversions
        // that answered 400 NOT_AN_EINVOICE
        if (failure.status === 400) convertButtons.forEach((button) => { button.hidden = true; });
        showMessage($("invoice-error"), fmt(t.no_invoice_page, {message: said(failure.error.errorCode, failure.error.message)}));
      }
      work.stop(true);
      $("verdict").focus();
    } catch (failure) {
      work.stop(false);
      if (!(failure instanceof ApiFailure)) throw failure;
      showFailure(validateError, failure);
    } finally {
      $("validate-button").disabled = false;
    }
  });

  async function validEn16931(file) {
    try {
      // the EN 16931 rules ran and found no error (the document claims Peppol, so that endpoint calls it
      // indeterminate: not judged as Peppol there)
      const report = await (await call("/v1/invoice/en16931/validate", upload(file, {}), "application/json")).json();
      return report.verdict !== "invalid" && report.rules.length > 0;
    } catch (failure) {
      if (!(failure instanceof ApiFailure)) throw failure;
      return false;
    }
  }

  // A changed value's fixed words ("(not written)", "net price + price discount"; the header's, in English) in the
  // page's language (strings' convert_words, none in English); the source's values and the business terms as sent.
  function inWords(change) {
    return Object.entries(t.convert_words).reduce((text, [english, said]) => text.split(english).join(said), change);
  }

  // What a conversion did besides the document, from its headers: the rules that judged the source, the findings of
  // the rules it claims that the target does not apply, values written otherwise, technical values left out.
  // The service sends header values as visible ASCII, other characters (a BT-24 in another script) percent-encoded
  // as UTF-8 and "%" as %25: shown decoded (a value that does not decode, as sent).
  function showConversion(response) {
    const box = $("convert-notes");
    const header = (name) => {
      const value = response.headers.get(name);
      if (value === null) return null;
      try {
        return decodeURIComponent(value);
      } catch (_) {
        return value;
      }
    };
    const lines = [];
    if (header("X-Source-Rules")) lines.push(fmt(t.convert_judged, {rules: header("X-Source-Rules")}));
    if (header("X-Source-Findings")) lines.push(fmt(t.convert_findings, {rules: header("X-Source-Findings")}));
    for (const change of (header("X-Conversion-Changed") || "").split("; ").filter(Boolean)) {
      lines.push(fmt(t.convert_changed, {change: inWords(change)}));
    }
    if (header("X-Conversion-Losses")) lines.push(fmt(t.convert_lost, {count: header("X-Conversion-Losses")}));
    if (header("X-Conversion-Technical")) {
      lines.push(fmt(t.convert_technical, {count: header("X-Conversion-Technical")}));
    }
    if (header("X-Target-Findings")) {  // a French invoice's result that France's rules refuse
      lines.push(fmt(t.convert_not_french, {rules: header("X-Target-Rules"), findings: header("X-Target-Findings")}));
    }
    box.replaceChildren(...lines.map((line) => el("li", line)));
    box.hidden = lines.length === 0;
  }

  // ---- e-mail (.eml, .emlx, .mbox, .msg): a job of each message's invoices (routed by what each is), shown under it
  const MAIL = /\.(eml|emlx|mbox|msg)$/i;

  async function validateMail(file, spec) {
    $("result").hidden = true;
    $("validate-button").disabled = true;
    const work = progress(validateStatus);
    work.say(fmt(t.mail_reading, {name: shownName(file.name)}));
    const form = new FormData();
    form.append("file", file, file.name);
    form.append("request", new Blob([JSON.stringify({operation: "validate", spec})], {type: "application/json"}));
    try {
      let job = await (await jobCall("POST", "/v1/jobs", form)).json();
      const path = `/v1/jobs/${encodeURIComponent(job.id)}`;
      while (["queued", "running"].includes(job.state)) {
        work.say(fmt(t.mail_progress, job));
        await new Promise((resolve) => setTimeout(resolve, 1000));
        job = await (await jobCall("GET", path)).json();
      }
      const entries = [];
      for await (const entry of jsonLines(await jobCall("GET", `${path}/results`))) entries.push(entry);
      showMessages(entries, job);
      work.stop(true);
      $("mail-title").focus();
    } catch (failure) {
      work.stop(false);
      if (!(failure instanceof ApiFailure)) throw failure;
      showFailure(validateError, failure);
    } finally {
      $("validate-button").disabled = false;
    }
  }

  // A JSON Lines answer (a job's results), one parsed line at a time as it arrives: the results API has no pages,
  // and a job of thousands of documents (reports of a few kB each) is never held as one string.
  async function* jsonLines(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let searched = 0; // a long line arriving in many chunks is searched for its end once, not once per chunk
    for (;;) {
      const {done, value} = await reader.read();
      buffer += decoder.decode(value || new Uint8Array(0), {stream: !done});
      let start = 0;
      let end;
      while ((end = buffer.indexOf("\n", Math.max(start, searched))) >= 0) {
        const line = buffer.slice(start, end);
        start = end + 1;
        if (line.trim()) yield JSON.parse(line);
      }
      buffer = buffer.slice(start);
      searched = buffer.length;
      if (done) break;
    }
    if (buffer.trim()) yield JSON.parse(buffer);
  }

  const FINDINGS_SHOWN = 3; // per document: the first few say what is wrong; its report (the download) has them all

  // What one result line says, for a person: its verdict (a report's; a document that could not be read, "error";
  // a message without an invoice, "notice") and why, as {code, message} (at most FINDINGS_SHOWN, the rest counted).
  // An invalid report's reasons are its errors; an indeterminate one's what was not judged.
  function outcome(entry) {
    let kind, found;
    if (entry.report) {
      const report = entry.report;
      kind = report.verdict;
      const errors = report.issues.filter((issue) => issue.severity === "ERROR");
      // {code, term, message}; in German where the service wrote the finding itself (messageDe: its content, input
      // and PDF checks), the official rules' texts as published; the term is the first the finding is about (its
      // id: the page has no names of terms; the report for people has them)
      found = (errors.length ? errors : report.notJudged || []).map((f) => ({code: f.code,
        term: (f.businessTerms || [])[0] || "",
        message: prefixed((data.lang === "de" && f.messageDe) || f.message, f.location && f.location.xpath)}));
    } else if (entry.notice) {
      kind = "notice";
      found = [{code: "", message: said(entry.notice.code, entry.notice.message)}];
    } else {
      kind = "error";
      const error = entry.error || {};
      const message = String(error.message || "");
      // the page's sentence for the code keeps the reader's words the service gave ("File is not a zip file")
      const head = known(message)
        || (t.errors && t.errors[error.code] ? said(error.code, message) + readerDetail(error, message) : message);
      // each entry in the page's language; its field unless it is the document itself ("file": every line of a
      // job is about a file)
      const entries = (error.errors || []).map((e) => ({code: e.code, message: [e.field === "file" ? "" : e.field,
        data.lang === "de" && e.messageDe ? e.messageDe
          : known(e.message) || (t.errors && t.errors[e.code] ? inLanguage(e, "") : e.message)]
        .filter(Boolean).join(": ")}));
      // a damaged PDF said "INVALID_PDF: Die Datei ist kein lesbares PDF." and below it the same with the reader's
      // words: the document's error line is left out where an entry of its own code says more
      found = [...(entries.some((e) => e.code === error.code) ? [] : [{code: error.code, message: head}]), ...entries];
    }
    // the same finding at several places (BR-S-02 on each of three lines) once, with how often: three equal lines
    // read as the page repeating itself and hid the document's other findings behind "and 9 more"
    const once = new Map();
    for (const finding of found) {
      const key = `${finding.code}\u0000${finding.message}`;
      if (once.has(key)) once.get(key).times += 1;
      else once.set(key, {...finding, times: 1});
    }
    const distinct = [...once.values()];
    return {kind, findings: distinct.slice(0, FINDINGS_SHOWN), rest: distinct.slice(FINDINGS_SHOWN)};
  }

  // An XSD finding names elements in Clark notation ("Element '{urn:un:unece:...:100}Name'", 90 characters of
  // namespace); its path has the document's own prefix for the element ("/rsm:.../ram:Name"), as the report for
  // people shows it: each namespace whose element the path names is written with that prefix ("ram:Name"), and
  // so are the other names of that namespace in the message ("Expected is ( {same}ID )").
  const CLARK = /\{([^{}\s]+)\}([A-Za-z_][\w.-]*)/g;
  function prefixed(message, xpath) {
    const text = String(message || "");
    if (!xpath || !text.includes("{")) return text;
    const steps = String(xpath).split("/").map((step) => step.replace(/\[.*$/, ""))
      .filter((step) => /^\w[\w.-]*:/.test(step)); // prefixed steps; Saxon's "*:Name[namespace-uri()=...]" name none
    const prefixes = new Map();
    for (const [, ns, local] of text.matchAll(CLARK)) {
      const step = steps.find((s) => s.endsWith(":" + local));
      if (step && !prefixes.has(ns)) prefixes.set(ns, step.slice(0, step.indexOf(":")));
    }
    return text.replace(CLARK, (whole, ns, local) => (prefixes.has(ns) ? `${prefixes.get(ns)}:${local}` : whole));
  }

  // A rule's message repeats its id in front ("[BR-06]-An Invoice shall…"); the id stands beside it already.
  function bare(finding) {
    const message = String(finding.message || "");
    const head = `[${finding.code}]`;
    return finding.code && message.startsWith(head) ? message.slice(head.length).replace(/^\s*[-:]?\s*/, "") : message;
  }

  // One document as a list item: its verdict in words, its name, its first findings. The e-mail view (under each
  // message) and a job's list of documents that are not valid both draw their documents with it.
  function documentItem(entry, name) {
    const {kind, findings, rest} = outcome(entry);
    const item = el("li", null, "invoice " + kind);
    item.append(el("span", t["doc_" + kind], "badge"), el("span", name, "name"));
    if (entry.signature) item.append(signatureLine(entry.signature));
    if (findings.length) {
      const list = el("ul", null, "detail");
      for (const finding of findings) list.append(findingLine(finding));
      // "and 24 more" opens to them (drawn when opened): before, a person saw three and could not reach the rest
      if (rest.length) {
        const more = el("details");
        more.append(el("summary", fmt(t.doc_more, {count: count(rest.length)})));
        more.addEventListener("toggle", () => {
          if (!more.open || more.childElementCount > 1) return;
          const rows = el("ul", null, "detail");
          rows.append(...rest.map(findingLine));
          more.append(rows);
        });
        const line = el("li", null, "more");
        line.append(more);
        list.append(line);
      }
      item.append(list);
    }
    return item;
  }

  // What the signature of a signed file (.p7m, S/MIME) says of a document out of it (pipeline/unpack/signature.py):
  // intact, broken or unchecked, and the service's sentence in the page's language (who signed it when, and that
  // the certificate's trust was not checked).
  function signatureLine(signature) {
    const meaning = signature.meaning || {};
    const line = el("p", null, "signature " + signature.status);
    line.append(el("strong", t["signature_" + signature.status] || signature.status), " ",
                meaning[data.lang] || meaning.en || "");
    return line;
  }

  function findingLine(finding) {
    const line = el("li");
    if (finding.code) line.append(el("code", finding.code));
    if (finding.code && finding.term) line.append(" · ", el("span", finding.term, "term"));
    if (finding.code) line.append(": ");
    line.append(bare(finding));
    if (finding.times > 1) line.append(" ", el("span", fmt(t.doc_times, {count: count(finding.times)}), "times"));
    return line;
  }

  const count = (n) => n.toLocaleString(data.lang); // 5,000 / 5.000

  // One item per message (its subject, sender, date), its invoices under it with their verdicts.
  function showMessages(entries, job) {
    const groups = new Map();
    for (const entry of entries) {
      const key = entry.email ? `${entry.email.index} ${entry.email.messageId}` : entry.name;
      if (!groups.has(key)) groups.set(key, {email: entry.email, entries: []});
      groups.get(key).entries.push(entry);
    }
    const list = $("mail-messages");
    list.replaceChildren();
    for (const {email, entries: found} of groups.values()) {
      const item = el("li", null, "message");
      const head = el("div", null, "message-head");
      head.append(el("strong", email ? email.subject || t.mail_no_subject : shownName(found[0].name)));
      if (email) head.append(el("span", email.from, "from"), el("span", email.date.slice(0, 16).replace("T", " "), "date"));
      const invoices = el("ul", null, "invoices");
      // the message's head names it: a notice's line needs no name, an invoice's its file name in the message
      for (const entry of found) invoices.append(documentItem(entry, entry.notice ? "" : shownName(entry.name.split("/").pop())));
      item.append(head, invoices);
      list.append(item);
    }
    const title = $("mail-title");
    title.textContent = fmt(t.mail_summary, {messages: groups.size, valid: job.valid,
                                             invalid: job.invalid - job.indeterminate, indeterminate: job.indeterminate,
                                             errors: job.errors, none: job.noInvoice});
    title.tabIndex = -1;
    $("mail-result").hidden = false;
  }

  // The downloads: each asks the API again for the representation it names.
  const DOWNLOADS = {
    json: (c) => [`/v1/invoice/${c.spec}/validate`, {metadataLanguage: data.lang}, "application/json", ".report.json"],
    pdf: (c) => [`/v1/invoice/${c.spec}/validate`, {metadataLanguage: data.lang}, "application/pdf", ".report.pdf"],
    parsed: () => ["/v1/invoice/parse", {}, "application/json", ".json"],
    convert: (c, to) => ["/v1/invoice/convert",
      {to, ...(["xrechnung", "en16931"].includes(c.spec) ? {spec: c.spec} : {}), ...(to === "ZUGFERD" ? {metadataLanguage: data.lang} : {})},
      to === "ZUGFERD" ? "application/pdf" : "application/xml", to === "ZUGFERD" ? ".zugferd.pdf" : `.${to.toLowerCase()}.xml`],
  };

  for (const button of document.querySelectorAll("[data-download]")) {
    button.addEventListener("click", () => download(button, false));
  }

  // `lossy`: a conversion asked again with allowLoss after the service listed what the target cannot carry (a
  // 422 CONVERSION_LOSS told a person to "send request.allowLoss true", which the page gave no way to do)
  async function download(button, lossy) {
    if (!current) return;
    const [path, asked, accept, suffix] = DOWNLOADS[button.dataset.download](current, button.dataset.to);
    const request = lossy ? {...asked, allowLoss: true} : asked;
    $("download-error").hidden = true;
    $("convert-notes").hidden = true;
    button.disabled = true;
    const work = progress($("download-status"));
    work.say(fmt(t.downloading, {what: button.textContent}));
    try {
      const response = await call(path, upload(current.file, request), accept);
      save(await response.blob(), baseName(current.file.name) + suffix);
      if (button.dataset.download === "convert") showConversion(response);
      work.stop(true);
    } catch (failure) {
      work.stop(false);
      if (!(failure instanceof ApiFailure)) throw failure;
      showFailure($("download-error"), failure);
      // only where the service says allowLoss helps (a structure the target syntax has no place for is refused
      // with allowLoss too)
      if (failure.error.errorCode === "CONVERSION_LOSS" && /allowLoss true/.test(failure.error.message) && !lossy) {
        const again = el("button", fmt(t.convert_lossy, {what: button.textContent}), "secondary");
        again.type = "button";
        again.id = "convert-lossy";
        again.addEventListener("click", () => download(button, true));
        $("download-error").append(el("p", t.convert_lossy_hint), again);
      }
    } finally {
      button.disabled = false;
      land(button);
    }
  }

  // ---- generate -----------------------------------------------------------------------------------------------
  const requestArea = $("request");
  const endpoint = $("endpoint");
  const generateError = $("generate-error");
  let generatedUrl = null;

  function syncOptions() {
    const pdf = endpoint.value === "zugferd"; // profile and page language are the PDF's; the XML endpoints refuse them
    $("profile").disabled = !pdf;
    $("doc-language").disabled = !pdf;
  }
  endpoint.addEventListener("change", syncOptions);
  syncOptions();

  $("load-example").addEventListener("click", async () => {
    generateError.hidden = true;
    try {
      const response = await fetch("/examples/" + encodeURIComponent($("example").value), {credentials: "omit"});
      if (!response.ok) throw new Error(fmt(t.error_status, {status: response.status}));
      requestArea.value = await response.text();
      // the endpoint the example is written for: its config.spec, else the first (XRechnung), never the one an
      // earlier example left (a German invoice sent to the French endpoint is a 400); the options that override
      // its config go back to "As in the request", so that every example gives its document as it is written
      const spec = ((JSON.parse(requestArea.value) || {}).config || {}).spec;
      const offered = Array.from(endpoint.options).some((o) => o.value === spec);
      endpoint.value = offered ? spec : endpoint.options[0].value;
      for (const id of ["syntax", "profile", "doc-language"]) $(id).value = "";
      syncOptions();
      requestArea.focus();
    } catch (err) {
      showMessage(generateError, err instanceof TypeError ? t.network_error : err.message);
    }
  });

  $("request-file").addEventListener("change", async (event) => {
    const file = event.target.files[0];
    if (file) requestArea.value = await file.text();
  });

  // The request as typed, byte for byte; only when an option overrides a config field is it parsed and written
  // again (JSON.parse reads amounts as doubles: exact for amounts of up to 15 digits).
  function requestBody() {
    const overrides = {};
    if ($("syntax").value) overrides.syntax = $("syntax").value;
    if (!$("profile").disabled && $("profile").value) overrides.profile = $("profile").value;
    if (!$("doc-language").disabled && $("doc-language").value) overrides.metadataLanguage = $("doc-language").value;
    if (!Object.keys(overrides).length) return requestArea.value;
    const parsed = JSON.parse(requestArea.value);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
      parsed.config = Object.assign({}, parsed.config, overrides);
    }
    return JSON.stringify(parsed, null, 2);
  }

  $("generate-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    generateError.hidden = true;
    if (!apiKey()) return showMessage(generateError, t.need_key), keyInput.focus();
    if (!requestArea.value.trim()) return showMessage(generateError, t.need_request), requestArea.focus();
    let body;
    try {
      body = requestBody();
    } catch (err) {
      return showMessage(generateError, fmt(t.not_json, {detail: err.message})), requestArea.focus();
    }
    const spec = endpoint.value;
    const pdf = spec === "zugferd";
    $("generated").hidden = true;
    $("generate-button").disabled = true;
    const work = progress($("generate-status"));
    work.say(fmt(t.generating, {endpoint: `/v1/invoice/${spec}`}));
    try {
      const response = await call(`/v1/invoice/${spec}`, body, pdf ? "application/pdf" : "application/xml");
      const blob = await response.blob();
      const name = `invoice-${spec}${pdf ? ".pdf" : ".xml"}`;
      if (generatedUrl) URL.revokeObjectURL(generatedUrl);
      generatedUrl = URL.createObjectURL(blob);
      $("generated-title").textContent = fmt(t.generated, {name, size: blob.size});
      const link = $("generated-link");
      link.href = generatedUrl;
      link.download = name;
      link.textContent = fmt(t.download_document, {name});
      const warnings = (response.headers.get("X-Content-Warnings") || "").split("; ").filter(Boolean);
      // X-Validation-Warnings counts the official rules' warnings too, which the answer does not list
      const ruleWarnings = Number(response.headers.get("X-Validation-Warnings") || 0) - warnings.length;
      if (ruleWarnings > 0) warnings.push(fmt(t.rule_warnings, {count: ruleWarnings}));
      $("generated-warning-list").replaceChildren(...warnings.map((w) => el("li", w)));
      $("generated-warnings").hidden = !warnings.length;
      const preview = $("generated-preview");
      preview.hidden = pdf;
      preview.textContent = pdf ? "" : (await blob.text()).slice(0, 200000);
      $("generated").hidden = false;
      work.stop(true);
      $("generated-title").focus();
    } catch (failure) {
      work.stop(false);
      if (!(failure instanceof ApiFailure)) throw failure;
      showFailure(generateError, failure, requestArea);
    } finally {
      $("generate-button").disabled = false;
    }
  });
  // ---- many invoices as a job (POST /v1/jobs), followed until it ends --------------------------------------------
  // A folder's files are chosen as `pipeline jobs submit` chooses them (pipeline/cli/files.py `_read_here`): its
  // documents by extension, mail of any name by its first bytes (a mailbox has none where Thunderbird keeps it,
  // "Inbox", nor in Apple Mail's export, "Rechnungen.mbox/mbox"); what an operating system or a mail program keeps
  // beside them is left out unsaid, as the service leaves it out of an upload (an export's Info.plist is XML: it was
  // sent and came back an invalid invoice); the rest is named as skipped.
  const FOLDER_SUFFIXES = /\.(xml|pdf|eml|emlx|mbox|msg|p7m|zip)$/i; // pipeline.cli.files.DOCUMENT_SUFFIXES
  const HEAD = 4096; // pipeline.unpack.HEAD: the bytes read to tell what a file is
  const METADATA_HEAD = 512; // pipeline.unpack.members.OS_METADATA_HEAD

  // A file's first bytes as a string of one character per byte (\x00-\xff), to be held against the service's byte
  // tests as they are written (a decoded text would turn a binary index's bytes into replacement characters).
  async function headOf(file) {
    const bytes = new Uint8Array(await file.slice(0, HEAD).arrayBuffer());
    let head = "";
    for (let i = 0; i < bytes.length; i += 1024) head += String.fromCharCode(...bytes.subarray(i, i + 1024));
    return head;
  }

  // pipeline.unpack.mail.looks_like_mail: header lines up to the first blank line (or the head's last whole line),
  // among them one a message has
  function looksLikeMail(head) {
    let lines = head.replace(/^[\r\n]+/, "").split("\n").slice(0, -1);
    if (!lines.length) lines = [head];
    const names = new Set();
    for (let line of lines.slice(0, 200)) {
      line = line.replace(/\r+$/, "");
      if (!line) break;
      if ((line[0] === " " || line[0] === "\t") && names.size) continue;
      const colon = line.indexOf(":");
      if (colon < 0 || !/^[!-9;-~]+$/.test(line.slice(0, colon))) return false;
      names.add(line.slice(0, colon).toLowerCase());
    }
    return ["from", "date", "message-id", "mime-version", "received", "return-path"].some((n) => names.has(n));
  }

  // pipeline.unpack.kind's mail: an mbox's "From " line, an .emlx's length line before a message, a message's headers
  function isMail(head) {
    const count = /^[ \t]*\d{1,15}[ \t]*\r?\n/.exec(head);
    return head.startsWith("From ") || (count !== null && looksLikeMail(head.slice(count[0].length))) ||
      looksLikeMail(head);
  }

  // pipeline.unpack.members._OS_METADATA: by name and first bytes both, so that an invoice is never taken for one
  const plist = (head) => head.startsWith("bplist0") ||
    (/^[\xef\xbb\xbf \t\r\n]*</.test(head) && head.includes("<plist"));
  const binary = (head) => head.includes("\x00") && !["\xff\xfe", "\xfe\xff", "<\x00", "\x00<", "PK"]
    .includes(head.slice(0, 2)) && !head.includes("%PDF-");
  const METADATA = [
    [(base) => base.startsWith("._"), (head) => head.startsWith("\x00\x05\x16\x07")], // macOS's AppleDouble
    [(base) => base === ".ds_store", (head) => head.startsWith("\x00\x00\x00\x01Bud1")],
    [(base) => base === "thumbs.db", (head) => head.startsWith("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")],
    [(base) => base === "info.plist", plist], // Apple Mail's, beside an exported mailbox
    [(base) => base === "table_of_contents", binary], // Apple Mail's index of an exported mailbox
    [(base) => base.endsWith(".msf"), (head) => head.startsWith("// <!-- <mdb:mork:")], // Thunderbird's index
    [(base) => base === "msgfilterrules.dat", (head) => head.startsWith('version="')], // Thunderbird's filters
  ];

  // pipeline.unpack.apple: the attachments Apple Mail stored apart from a message of the folder (a .partial.emlx's
  // `Attachments/<n>/<section>/<file>` beside its Messages folder, Mail 2's `Messages/<n>.<section>.emlxpart`) are
  // sent with it, and the service reads them as that message's attachments (a logo among them is no skipped file)
  const SECTION = "\\d{1,9}(?:\\.\\d{1,9}){0,31}";
  const STORED_FILE = new RegExp(`^(?:(.*)/)?Attachments/(\\d{1,15})/${SECTION}/[^/]+$`);
  const EMLXPART = new RegExp(`^(?:(.*)/)?(\\d{1,15})\\.${SECTION}\\.emlxpart$`, "i");
  const APPLE_MESSAGE = /^(?:(.*)\/)?(\d{1,15})(?:\.partial)?\.emlx$/i;
  function mailboxOf(folder) { // the folder both Messages and Attachments are in
    const at = folder.lastIndexOf("/");
    return folder.slice(at + 1).toLowerCase() === "messages" ? folder.slice(0, Math.max(at, 0)) : folder;
  }
  function storedOf(path) { // "<mailbox>\n<message number>" of a stored attachment's file, else null
    let found = STORED_FILE.exec(path);
    if (found) return `${found[1] || ""}\n${found[2]}`;
    found = EMLXPART.exec(path);
    return found ? `${mailboxOf(found[1] || "")}\n${found[2]}` : null;
  }

  // {taken, skipped (their paths)} of a folder's files ({file, path})
  async function chooseFolder(files) {
    const paths = new Set(files.map(({path}) => path));
    const messages = new Set(files.map(({path}) => APPLE_MESSAGE.exec(path)).filter(Boolean)
      .map((found) => `${mailboxOf(found[1] || "")}\n${found[2]}`));
    const taken = [], skipped = [];
    for (const {file, path} of files) {
      if (messages.has(storedOf(path))) { taken.push({file, path}); continue; }
      const test = METADATA.find(([named]) => named(file.name.toLowerCase()));
      const head = test || !FOLDER_SUFFIXES.test(file.name) ? await headOf(file) : "";
      if (test && test[1](head.slice(0, METADATA_HEAD))) continue;
      if (FOLDER_SUFFIXES.test(file.name) || isMail(head)) taken.push({file, path});
      // Thunderbird keeps its empty mail folders (Trash, Drafts) as 0 bytes beside their index: nothing to say
      else if (!(file.size === 0 && paths.has(path + ".msf"))) skipped.push(path);
    }
    return {taken, skipped};
  }
  const jobError = $("job-error");
  let jobId = null;
  let jobHtml = false; // the job was asked for reports for people: its ZIP holds them

  async function jobCall(method, path, body) {
    let response;
    try {
      response = await fetch(path, {method, body, headers: {Authorization: "Bearer " + apiKey()},
                                    credentials: "omit", cache: "no-store"});
    } catch (_) {
      throw new ApiFailure(0, {message: t.network_error});
    }
    if (!response.ok) {
      let error = {};
      try { error = (await response.json()) || {}; } catch (_) { error = {}; }
      if (!error.message) error.message = fmt(t.error_status, {status: response.status});
      throw new ApiFailure(response.status, error);
    }
    return response;
  }

  function showJob(job) {
    // a message without an invoice is an entry of the job too (the counts said 6 of 7 without it), but no document
    // (as the CLI counts them): with one the line counts entries
    const sentence = job.noInvoice ? t.job_progress_none : t.job_progress;
    $("job-status").replaceChildren(el("span", fmt(sentence, {...job, invalid: job.invalid - job.indeterminate,
                                                              state: t["job_state_" + job.state] || job.state})));
    // a job that failed as a whole says why (its documents' folder gone, a chunk failing on every attempt): the
    // page said only "failed"; in German the service's German of it
    const why = job.state === "failed" ? (data.lang === "de" && job.messageDe) || job.message : "";
    if (why) $("job-status").append(el("p", why, "failure"));
    const bar = $("job-progress");
    bar.max = Math.max(job.total, 1);
    bar.value = job.done;
    bar.hidden = false;
  }

  // A job still queued after this long is one no worker has taken: on PostgreSQL the jobs run in `pipeline worker`
  // processes, which a newcomer who started `pipeline serve` alone has not got (the page said "queued" for ever).
  const QUEUED_HINT_MS = 8000;

  async function follow(id) {
    const since = Date.now();
    for (;;) {
      const job = await (await jobCall("GET", `/v1/jobs/${encodeURIComponent(id)}`)).json();
      showJob(job);
      if (job.state === "queued" && Date.now() - since > QUEUED_HINT_MS) {
        $("job-status").append(el("span", t.job_waiting, "waiting"));
      }
      if (!["queued", "running"].includes(job.state)) return job;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }

  $("job-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    jobError.hidden = true;
    if (!apiKey()) return showMessage(jobError, t.need_key), keyInput.focus();
    // a folder's documents as `pipeline jobs submit` takes a folder: its other files (a README, a spreadsheet) went
    // up too and came back as "not well-formed XML"; they are named instead. The button is off while the folder's
    // first bytes are read: a second click meanwhile started the same job twice.
    $("job-button").disabled = true;
    let chosen;
    try {
      chosen = await chooseFolder(droppedFolder || [...$("job-folder").files].map((file) => ({file,
        path: file.webkitRelativePath || file.name})));
    } finally {
      $("job-button").disabled = false;
    }
    const {taken, skipped} = chosen;
    const files = [...[...$("job-files").files].map((file) => ({file, path: file.name})), ...taken];
    $("job-skipped").hidden = !skipped.length;
    $("job-skipped").textContent = skipped.length ? fmt(t.job_skipped, {count: count(skipped.length),
      names: skipped.slice(0, 10).join(", ") + (skipped.length > 10 ? ", …" : "")}) : "";
    if (!files.length) return showMessage(jobError, t.job_need_files), $("job-files").focus();
    const total = files.reduce((sum, {file}) => sum + file.size, 0);
    if (total > data.maxJob) {
      return showMessage(jobError, fmt(t.too_large_job, {count: count(files.length), size: megabytes(total),
                                                         limit: megabytes(data.maxJob)}));
    }
    const form = new FormData();
    for (const {file, path} of files) form.append("file", file, path);
    // in the page's language: the verdict's sentence, and the report for people of each document when asked
    jobHtml = $("job-html").checked;
    const request = {operation: "validate", spec: $("job-spec").value, metadataLanguage: data.lang,
                     ...(jobHtml ? {html: true} : {})};
    form.append("request", new Blob([JSON.stringify(request)], {type: "application/json"}));
    $("job-button").disabled = true;
    $("job-done").hidden = true;
    $("job-list").hidden = true;
    $("job-progress").hidden = true;
    jobId = null;
    $("job-status").replaceChildren(el("span", fmt(t.job_uploading, {count: files.length})));
    try {
      const job = await (await jobCall("POST", "/v1/jobs", form)).json();
      jobId = job.id;
      $("job-cancel").hidden = false;
      await follow(job.id);
      $("job-cancel").hidden = true; // before the focus moves: a focused button that goes would drop it to <body>
      $("job-zip").textContent = jobHtml ? t.job_zip_reports : t.job_zip_results;
      $("job-done").hidden = false;
      await showJobList(job.id);
      land($("job-list-title"));
    } catch (failure) {
      if (!(failure instanceof ApiFailure)) throw failure;
      $("job-list").hidden = true; // its results could not be read: no heading left saying "Reading…"
      if (!jobId) { // the upload was refused: no job to follow or cancel, and the line no longer says "Uploading"
        $("job-status").replaceChildren();
        $("job-progress").hidden = true;
      }
      showFailure(jobError, failure, null);
    } finally {
      $("job-button").disabled = false;
      $("job-cancel").hidden = true;
    }
  });

  // When a job has ended: its documents that are not valid, each with its verdict and first findings (the first
  // JOB_LISTED drawn, the rest counted: a list of 5,000 is read by nobody and costs the page seconds), the valid ones
  // one line that opens to their names, drawn only when opened. The results are read once, as they stream in; while
  // the job runs they are not: the API answers every document done so far each time (no "from" to go on from), so
  // following them as they arrive would read a 5,000-document job's results thousands of times over.
  const JOB_LISTED = 300;
  const VALID_LISTED = 2000;
  let validNames = [];

  async function showJobList(id) {
    const title = $("job-list-title");
    const list = $("job-documents");
    const valid = $("job-valid");
    title.textContent = t.job_list_reading;
    list.replaceChildren();
    valid.open = false;
    valid.hidden = true;
    $("job-valid-names").replaceChildren();
    $("job-list-cap").hidden = true;
    $("job-unprocessed").hidden = true;
    $("job-list").hidden = false;
    const items = document.createDocumentFragment();
    const names = [];
    let total = 0, bad = 0, good = 0, unprocessed = 0;
    for await (const entry of jsonLines(await jobCall("GET", `/v1/jobs/${encodeURIComponent(id)}/results`))) {
      total++;
      if (entry.error && entry.error.code === "NOT_PROCESSED") { // a cancelled job's rest: one line says it
        unprocessed++;
      } else if (entry.report && entry.report.verdict === "valid") {
        if (++good <= VALID_LISTED) names.push({name: entry.name, signature: entry.signature}); // not its report
      } else if (++bad <= JOB_LISTED) {
        items.append(documentItem(entry, shownName(entry.name))); // the whole name: a mail's says which message
      }
    }
    list.append(items);
    list.hidden = bad === 0;
    title.textContent = bad || !good ? fmt(t.job_list_title, {count: count(bad), total: count(total)})
      : fmt(t.job_list_none, {count: count(good)});
    $("job-list-cap").textContent = fmt(t.job_list_cap, {shown: count(JOB_LISTED), count: count(bad)});
    $("job-list-cap").hidden = bad <= JOB_LISTED;
    $("job-unprocessed").textContent = fmt(t.job_unprocessed, {count: count(unprocessed)});
    $("job-unprocessed").hidden = !unprocessed;
    validNames = names;
    $("job-valid-summary").textContent = fmt(t.job_valid, {count: count(good)});
    valid.dataset.count = String(good);
    valid.hidden = good === 0;
  }

  $("job-valid").addEventListener("toggle", () => {
    const box = $("job-valid-names");
    if (!$("job-valid").open || box.childElementCount) return;
    const items = document.createDocumentFragment();
    for (const entry of validNames) {
      const item = el("li", shownName(entry.name));
      if (entry.signature) item.append(signatureLine(entry.signature));
      items.append(item);
    }
    const rest = Number($("job-valid").dataset.count) - validNames.length;
    if (rest > 0) items.append(el("li", fmt(t.doc_more, {count: count(rest)}), "more"));
    box.append(items);
  });

  $("job-cancel").addEventListener("click", async () => {
    if (!jobId) return;
    try {
      await jobCall("DELETE", `/v1/jobs/${encodeURIComponent(jobId)}`);
    } catch (failure) {
      if (!(failure instanceof ApiFailure)) throw failure;
      showFailure(jobError, failure, null);
    }
  });

  // What the status messages tab (static/status.js) shares of this page: its calls, progress lines and frames.
  window.einvoicePage = {t, data, $, fmt, el, apiKey, call, ApiFailure, progress, showMessage, showFailure, save,
                         framed, fill, land};

  // The results as JSON Lines, or as a ZIP: each document's report for people (HTML) when the job was asked for
  // them, else its JSON entry, named after the document (GET /v1/jobs/{id}/results?format=zip).
  for (const [button, query, extension] of [["job-results", "", ".jsonl"], ["job-zip", "?format=zip", ".zip"]]) {
    $(button).addEventListener("click", async () => {
      try {
        const response = await jobCall("GET", `/v1/jobs/${encodeURIComponent(jobId)}/results${query}`);
        save(await response.blob(), jobId + extension);
      } catch (failure) {
        if (!(failure instanceof ApiFailure)) throw failure;
        showFailure(jobError, failure, null);
      }
    });
  }
})();
