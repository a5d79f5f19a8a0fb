"""Transform stage speed: canonical -> CII / UBL for 1-, 100- and 1000-line invoices (median of N runs,
in-process, parse + transform + serialise), indented (the default, issue 27) and flat (indent=False), so the
cost of readable output is a measured number; and, for scale, the validation of the same output on the XRechnung
rules (pipeline.flows.validate_xml; needs the installed rule packs). Lines are the plain second line of tests/data/canonical/full.xml
("typical") or its first line using every line-level term ("full"). Run: python3 bench/bench_transform.py [runs]"""
from __future__ import annotations

import statistics
import sys
import time
from copy import deepcopy
from pathlib import Path

from lxml import etree

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pipeline.write import transform  # noqa: E402

SAMPLE = Path(__file__).resolve().parent.parent / "tests" / "data" / "canonical" / "full.xml"
C = "{urn:einvoice-pipeline:canonical:1}"


def invoice_with_lines(n: int, which: int = 1) -> bytes:
    """full.xml with one of its lines repeated n times (amounts are not re-added: the transform does not care)."""
    root = etree.parse(str(SAMPLE)).getroot()
    lines = root.findall(f"{C}invoiceLine")
    for extra in lines:
        root.remove(extra)
    anchor = root.find(f"{C}vatBreakdown[last()]")
    for i in range(n, 0, -1):
        line = deepcopy(lines[which])
        line.find(f"{C}lineIdentifier").text = str(i)
        anchor.addnext(line)
    return etree.tostring(root, encoding="UTF-8", xml_declaration=True)


def paired_medians(a, b, runs: int) -> tuple[float, float]:
    """Median ms of a and of b, interleaved run by run so that load from other processes hits both alike."""
    a(), b()  # warm (compile once per process)
    ta, tb = [], []
    for _ in range(runs):
        for fn, times in ((a, ta), (b, tb)):
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1000)
    return statistics.median(ta), statistics.median(tb)


def main(runs: int = 30) -> None:
    params = transform.params_for("xrechnung")
    from pipeline.flows.validate_xml import validate_xml

    print(f"{'lines':>6} {'kind':>8} {'syntax':>6} {'flat ms':>9} {'indent ms':>10} {'indent cost':>12} {'out KB':>7}"
          f" {'validate ms':>12} {'xslt/valid.':>12}")
    for n in (1, 100, 1000):
        for kind, which in (("typical", 1), ("full", 0)):
            data = invoice_with_lines(n, which)
            for name, fn in (("cii", transform.to_cii), ("ubl", transform.to_ubl)):
                k = runs if n < 1000 else max(5, runs // 3)
                flat, indented = paired_medians(lambda: fn(data, params, indent=False), lambda: fn(data, params), k)
                out = fn(data, params)
                check, _ = paired_medians(lambda: validate_xml(out, "xrechnung"), lambda: None, max(3, k // 3))
                print(f"{n:>6} {kind:>8} {name:>6} {flat:>9.2f} {indented:>10.2f} "
                      f"{100 * (indented - flat) / flat:>11.1f}% {len(out) / 1024:>7.0f} {check:>12.1f}"
                      f" {100 * flat / check:>11.1f}%")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
