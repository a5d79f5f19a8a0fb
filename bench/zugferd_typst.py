"""The invoice page's render with WeasyPrint against the same content typeset by Typst, same run (issue 40, last part:
is 150 ms over HTTP a question of the page or of the renderer?).

    pip install typst     # not a dependency of the service: only this measurement uses it
    python3 bench/zugferd_typst.py [--lines 10] [--runs 9] [--out DIR]

The page html.xsl writes for the sample invoice (`tests/test_zugferd_samples.invoice_request`) is rendered by
`page.html_to_pdf` (WeasyPrint, PDF/A-3b) and, converted section by section into Typst markup (the same texts,
headings, label/value lists, three-column facts and tables; the same fonts, sizes, colours and margins, not the same
pixels), by Typst's compiler (PDF/A-3b, no tags, one `typst.Compiler` per process as a worker would keep it, every
compile with its run number after each text, so that no memoised layout of an earlier compile is reused). Interleaved, process CPU medians (Typst's threads
included), then pikepdf's PDF/A walk (`pdfa.validate_written`, the gate's third-party part) on each output.
--out DIR writes both PDFs to look at (pdftoppm). A measurement of the renderer's cost for this content, not a
second page: the converter knows only the elements the sample page has.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lxml import html as lxml_html  # noqa: E402
from pikepdf import pdfa  # noqa: E402

from pipeline.flows.generate_xml import normalize  # noqa: E402
from pipeline.pdf import page  # noqa: E402
from tests.test_zugferd_samples import invoice_request  # noqa: E402

CLOCK = time.process_time
FONT_DIRS = ["/usr/share/fonts/truetype/liberation2", "/usr/share/fonts/truetype/liberation",
             "/usr/share/fonts/truetype/dejavu"]

# The page's look in Typst (templates/invoice.css's values); hd/facts/grid3 are the page's h2, dl.ids and dl.grid.
PREAMBLE = r"""
#set document(title: sys.inputs.title)
#let sfx = sys.inputs.at("run", default: "")
#set page(paper: "a4", margin: (top: 13mm, right: 14mm, bottom: 17mm, left: 16mm),
  footer: context [#set text(7.5pt, fill: rgb("#555"))
    #grid(columns: (82%, 18%), FOOTER, align(right)[Page #counter(page).display() of #counter(page).final().first()])])
#set text(font: ("Liberation Sans", "DejaVu Sans"), size: 8pt, fill: rgb("#111"), lang: LANG, ligatures: false)
#set par(leading: 0.3em * 1.3, spacing: 1.2mm)
#let blue = rgb("#2a4d69")
#let hd(t) = block(above: 3.5mm, below: 1.2mm, width: 100%, stroke: (bottom: 0.4pt + rgb("#9bb")),
  inset: (bottom: 0.6mm), text(fill: blue, weight: "bold", tracking: 0.06em, upper(t)))
#let lbl(t) = text(fill: rgb("#555"), t)
#let facts(..items) = table(columns: (30mm, 1fr), stroke: none, inset: (x: 0pt, y: 0.3pt),
  ..items.pos().map(((k, v)) => (lbl(k), v)).flatten())
#let grid3(..items) = grid(columns: (32%, 32%, 32%), row-gutter: 1.2mm, column-gutter: 1%,
  ..items.pos().map(((k, v)) => [#lbl(k) \ *#v*]))
#let rows(head, ..cells) = table(columns: head.len(), stroke: (x, y) => (bottom: if y == 0 { 0.8pt + blue } else { 0.3pt + rgb("#ccd") }),
  inset: (x: 1.2mm, y: 0.8mm), table.header(..head.map(t => text(fill: blue, weight: "bold", t))), ..cells.pos())
"""


def s(text: str) -> str:
    """A Typst string expression: the text, then the compile's run number (`sfx`)."""
    return f'({json.dumps(" ".join(text.split()), ensure_ascii=False)} + sfx)'


def text_of(el) -> str:
    return "".join(el.itertext())


def cell(el) -> str:
    """A table cell or a block without sections: its parts, a line each; bold where the page makes them bold."""
    parts = [c for c in el if c.tag in ("div", "p")] or [el]
    lines = []
    for part in parts:
        cls = part.get("class", "")
        t = s(text_of(part))
        if "item-name" in cls or "party-name" in cls:
            t = f"text(weight: \"bold\", {t})"
        elif "line-facts" in cls or "small" in cls:
            t = f"text(7.2pt, fill: rgb(\"#333\"), {t})"
        lines.append(f"[#{t}]")
    body = " + linebreak() + ".join(lines) if lines else "[]"
    span = el.get("colspan")
    return f"table.cell(colspan: {span}, {body})" if span else body


def table(el) -> str:
    head = [s(text_of(th)) for th in el.iter("th") if th.getparent().getparent().tag == "thead"]
    body_rows = [tr for tr in el.iter("tr") if tr.getparent().tag != "thead"]
    if not head:  # the totals: label and amount
        pairs = [f"({cell(tr[0])}, {cell(tr[1])})" for tr in body_rows]
        return f"#table(columns: (1fr, auto), stroke: none, inset: (x: 1.2mm, y: 0.7mm), align: (left, right), " \
               f"..({', '.join(pairs)},).flatten())\n"
    cells = [cell(c) for tr in body_rows for c in tr]
    return f"#rows(({', '.join(head)},), {', '.join(cells)})\n"


def block(el) -> str:
    cls = el.get("class", "").split()
    tag = el.tag
    if tag == "h2":
        return f"#hd({s(text_of(el))})\n"
    if tag == "table":
        return table(el)
    if tag == "dl":
        pairs = [f"({s(text_of(f.find('dt')))}, {s(text_of(f.find('dd')))})" for f in el if f.find("dt") is not None]
        if not pairs:
            return ""
        return f"#{'grid3' if 'grid' in cls else 'facts'}({', '.join(pairs)})\n"
    if tag == "h1" or "footer-line" in cls:
        return ""
    if {"parties", "summary", "top"} & set(cls) and len(el) > 1:  # side by side
        columns = ", ".join("1fr" for _ in el)
        return f"#grid(columns: ({columns}), column-gutter: 8mm, " + ", ".join(
            f"[{block(child)}]" for child in el) + ")\n"
    if len(el) and any(c.tag in ("h2", "dl", "table", "section", "div") for c in el) and tag != "td":
        return "".join(block(child) for child in el)
    return f"#block({cell(el)})\n" if text_of(el).strip() else ""


def typst_source(html: bytes) -> str:
    root = lxml_html.document_fromstring(html)
    footer = root.find_class("footer-line")
    body = root.find("body")
    return (PREAMBLE.replace("FOOTER", s(text_of(footer[0])) if footer else '""')
            .replace("LANG", json.dumps(root.get("lang", "en"))) + "".join(block(child) for child in body))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=10)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    try:
        import typst
    except ImportError:
        sys.exit("needs the typst package (pip install typst): only this measurement uses it")
    body = json.dumps(invoice_request(args.lines, "EN16931")).encode()
    _, canonical = normalize(body, "zugferd")
    html = page.invoice_html(canonical, "en", "EN 16931")
    source = typst_source(html).encode()
    work = Path(tempfile.mkdtemp(prefix="zugferd-typst-"))  # the compiler reads its input from a file
    (work / "page.typ").write_bytes(source)
    compiler = typst.Compiler(str(work / "page.typ"), ignore_system_fonts=True, font_paths=[d for d in FONT_DIRS if os.path.isdir(d)],
                              sys_inputs={"title": "warm-up"})
    outputs = {"weasyprint": page.html_to_pdf(html), "typst": compiler.compile(pdf_standards=["a-3b"], pdf_tags=False)}
    samples: dict[str, list[float]] = {"weasyprint": [], "typst": [], "weasyprint gate": [], "typst gate": []}
    for run in range(args.runs):
        for name in (("weasyprint", "typst") if run % 2 else ("typst", "weasyprint")):
            start = CLOCK()
            if name == "typst":  # every text new: no layout of an earlier compile is reused
                outputs[name] = compiler.compile(pdf_standards=["a-3b"], pdf_tags=False,
                                                 sys_inputs={"title": f"Invoice {run}", "run": f" {run}"})
            else:
                outputs[name] = page.html_to_pdf(html)
            samples[name].append(CLOCK() - start)
            start = CLOCK()
            report = pdfa.validate_written(io.BytesIO(outputs[name]), "3b")
            samples[f"{name} gate"].append(CLOCK() - start)
    print(f"{args.lines} lines, CPU medians of {args.runs} runs, interleaved; load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    for name in ("weasyprint", "typst"):
        from pikepdf import Pdf
        with Pdf.open(io.BytesIO(outputs[name])) as pdf:
            pages = len(pdf.pages)
        print(f"  {name:>10}: render {statistics.median(samples[name]) * 1000:7.1f} ms, {pages} pages, "
              f"{len(outputs[name]):,} bytes; pikepdf PDF/A walk {statistics.median(samples[name + ' gate']) * 1000:6.1f} ms")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, data in outputs.items():
            (args.out / f"{name}.pdf").write_bytes(data)
        (args.out / "page.typ").write_bytes(source)
    (work / "page.typ").unlink()
    work.rmdir()


if __name__ == "__main__":
    main()
