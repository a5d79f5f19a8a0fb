"""Validation speed: our end-to-end endpoint vs the bare cost of the official checks, and growth with size.

    python3 bench/bench_validate.py [--runs 60] [--sizes 1,100,1000] [--big]

Bare cost = what any saxonche/lxml user must pay for the same checks on the same document, same process:
parse (lxml) + XSD (lxml, schema preloaded) + parse (Saxon) + each official rule XSLT of the scenario (compiled
once). End-to-end = POST /v1/invoice/xrechnung/validate through Falcon's TestClient (multipart build excluded,
multipart parsing included), i.e. upload parsing, safe parse, scenario selection, XSD, rules, reading the SVRL,
locating findings and the JSON report. Target: median end-to-end <= 1.25 x median bare.
Size series: the lines of a corpus invoice repeated to 1 / 100 / 1000 (/ 5000 with --big) lines.
"""
from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
import uuid
from pathlib import Path

from lxml import etree

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
CORPUS = REPO.parent / "shared" / "corpus"

import falcon.testing  # noqa: E402

from pipeline import saxon  # noqa: E402
from pipeline.check import engine, packs, scenarios, xmlinput  # noqa: E402
from pipeline.flows import validate_xml as validate  # noqa: E402
from pipeline.service.app import create_app  # noqa: E402

SAMPLES = {
    "UBL": CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml",
    "CII": CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml",
}
LINE_XPATH = {
    "UBL": ("//cac:InvoiceLine", {"cac": "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"},
            "{urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2}ID"),
    "CII": ("//ram:IncludedSupplyChainTradeLineItem",
            {"ram": "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"},
            "{urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100}LineID"),
}


def with_lines(data: bytes, syntax: str, n: int) -> bytes:
    """The invoice with its first line repeated to n lines (unique line ids; totals are left as they are)."""
    tree = etree.ElementTree(etree.fromstring(data))
    xpath, ns, id_tag = LINE_XPATH[syntax]
    lines = tree.xpath(xpath, namespaces=ns)
    first, parent = lines[0], lines[0].getparent()
    pos = parent.index(first)
    for line in lines:
        parent.remove(line)
    for i in range(n):
        line = copy.deepcopy(first)
        ident = next(line.iter(id_tag))
        ident.text = str(i + 1)
        parent.insert(pos + i, line)
    return etree.tostring(tree, encoding="utf-8", xml_declaration=True)


def multipart(data: bytes) -> tuple[bytes, str]:
    b = uuid.uuid4().hex
    body = (f'--{b}\r\nContent-Disposition: form-data; name="file"; filename="i.xml"\r\n'
            f"Content-Type: application/xml\r\n\r\n").encode() + data + (
        f'\r\n--{b}\r\nContent-Disposition: form-data; name="request"\r\nContent-Type: application/json\r\n\r\n'
        f"{{}}\r\n--{b}--\r\n").encode()
    return body, f"multipart/form-data; boundary={b}"


def bare(data: bytes, xsd: Path, sheets) -> None:
    tree = etree.ElementTree(etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True)))
    engine.load_schema(xsd).validate(tree)
    sdoc = saxon.parse(data)
    for sheet in sheets:
        saxon.compile_stylesheet(sheet).transform_to_value(xdm_node=sdoc)


def medians_ms(fns, runs: int) -> list[float]:
    """Median time of each function, calls interleaved so that load from other processes hits all alike."""
    for fn in fns:
        fn()  # warm
    times = [[] for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - t)
    return [statistics.median(t) * 1000 for t in times]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--big", action="store_true", help="include the 5000-line invoices (slow)")
    ap.add_argument("--sizes", default="1,100,1000", help="line counts of the size series (comma-separated)")
    args = ap.parse_args()

    t = time.perf_counter()
    n_sheets = engine.warm_up()
    print(f"warm-up: {n_sheets} stylesheets compiled + schemas loaded in {time.perf_counter() - t:.2f} s")

    client = falcon.testing.TestClient(create_app(platform=False))
    pack = packs.latest_active("xrechnung")
    chosen = scenarios.load_scenarios(pack.scenarios)

    def endpoint(data: bytes):
        body, ctype = multipart(data)
        def call():
            r = client.simulate_post("/v1/invoice/xrechnung/validate", body=body, headers={"Content-Type": ctype})
            assert r.status_code == 200, r.text
        return call

    sizes = [int(n) for n in args.sizes.split(",") if n] + ([5000] if args.big else [])
    print(f"\n{'document':32} {'KB':>6} {'bare ms':>9} {'engine ms':>9} {'e2e ms':>9} {'ratio':>6} {'issues':>6}")
    for syntax, path in SAMPLES.items():
        original = path.read_bytes()
        docs = [(path.name, original)] + [(f"{syntax} x{n} lines", with_lines(original, syntax, n)) for n in sizes]
        for name, data in docs:
            sc = scenarios.select_scenario(chosen, saxon.parse(xmlinput.load(data).text))
            runs = args.runs if len(data) < 200_000 else max(3, args.runs // 10)
            b, v, e = medians_ms([lambda: bare(data, sc.xsd, sc.stylesheets), lambda: validate.validate_xml(data),
                                  endpoint(data)], runs)
            issues = len(validate.validate_xml(data).issues)
            print(f"{name:32} {len(data) / 1024:6.0f} {b:9.1f} {v:9.1f} {e:9.1f} {e / b:6.2f} {issues:6}")
    print("\nbare = lxml parse + XSD + Saxon parse + the scenario's official XSLTs; engine = validate_xml();"
          "\ne2e = the endpoint via TestClient; ratio = e2e / bare (target <= 1.25 for a typical invoice)")


if __name__ == "__main__":
    main()
