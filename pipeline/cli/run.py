"""`pipeline run STAGE ...`: run exactly one stage of generation and print its output (for stylesheet authors).

    pipeline run normalize request.json            canonical XML, AUTO amounts filled in
    pipeline run transform canonical.xml --to cii  [--xslt my.xsl] [--spec en16931]
    pipeline run validate doc.xml                  [--spec en16931] [--version V]
    pipeline run html canonical.xml                [--lang de] [--profile-label "EN 16931"] [--xslt my.xsl]
    pipeline run pdf page.html -o pages.pdf        the HTML rendered as PDF/A-3b pages (no XML embedded yet)
    pipeline run read invoice.xml                  CII / UBL (or a ZUGFeRD PDF's invoice) -> canonical XML
                                                   [--xslt my-read.xsl] [--provenance: keep the s:src attributes]
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from pipeline.cli.files import shown
from pipeline.cli.generate import (output_refused, pdf_to_terminal, print_api_error, read_input,
                                   write_output)
from pipeline.errors import ApiError, TransformError

# every spec `pipeline generate` writes XML for (pipeline.invoice.model.XML_SPECS): with xrechnung and en16931 only,
# a fixture stating config.spec fr-ctc or peppol could not be normalized ("contradicts the endpoint, which
# generates en16931") nor its stages be run as generation runs them
SPECS = ("xrechnung", "en16931", "fr-ctc", "peppol")


def register(sub) -> None:
    p = sub.add_parser("run", help="run one stage (generation, reading, validation) and print its output")
    stages = p.add_subparsers(dest="stage", metavar="STAGE")
    stages.required = True

    s = stages.add_parser("normalize", help="request JSON -> canonical XML (model, calculation, canonical)")
    s.add_argument("request", type=Path, help="InvoiceRequest JSON file ('-' for stdin)")
    s.add_argument("--spec", choices=SPECS, help="endpoint spec the request is checked against "
                                                 "(default: config.spec, else en16931)")
    s.set_defaults(func=run_normalize)

    s = stages.add_parser("transform", help="canonical XML -> CII / UBL (or your stylesheet)")
    s.add_argument("canonical", type=Path, help="canonical XML (run normalize's output; '-' for stdin)")
    s.add_argument("--to", type=str.upper, choices=("CII", "UBL"), default="CII", help="syntax (default: CII)")
    s.add_argument("--xslt", type=Path, help="run this stylesheet instead of xslt/cii.xsl or xslt/ubl.xsl")
    s.add_argument("--spec", choices=SPECS, default="xrechnung", help="sets BT-24 and the BT-23 default "
                                                                      "(default: xrechnung)")
    s.add_argument("--specification-id", help="write this BT-24 instead (e.g. an XRechnung extension id)")
    s.set_defaults(func=run_transform)

    s = stages.add_parser("validate", help="validate a CII / UBL document with a rule pack; prints the report")
    s.add_argument("document", type=Path, help="CII or UBL XML ('-' for stdin)")
    s.add_argument("--spec", choices=SPECS, default="xrechnung", help="rule pack (default: xrechnung)")
    s.add_argument("--version", help="rule pack version (default: latest active)")
    s.set_defaults(func=run_validate)

    s = stages.add_parser("html", help="canonical XML -> the readable invoice page (HTML, ZUGFeRD path)")
    s.add_argument("canonical", type=Path, help="canonical XML ('-' for stdin)")
    s.add_argument("--lang", default="en", help="label language: en or de")
    s.add_argument("--profile-label", default="", help="profile named in the page footer, e.g. 'EN 16931'")
    s.add_argument("--xslt", type=Path, help="run this stylesheet instead of xslt/html.xsl")
    s.set_defaults(func=run_html)

    s = stages.add_parser("read", help="CII / UBL / ZUGFeRD PDF -> canonical XML (the reading direction)")
    s.add_argument("document", type=Path, help="CII / UBL XML or a ZUGFeRD PDF ('-' for stdin)")
    s.add_argument("--xslt", type=Path, help="run this stylesheet instead of xslt/read-cii.xsl or read-ubl.xsl")
    s.add_argument("--provenance", action="store_true", help="keep the s:src attributes (the source node of "
                                                             "each value)")
    s.set_defaults(func=run_read)

    s = stages.add_parser("pdf", help="HTML -> PDF/A-3b pages with WeasyPrint and templates/ (ZUGFeRD path)")
    s.add_argument("html", type=Path, help="the page as HTML (run html's output; '-' for stdin)")
    s.add_argument("-o", "--output", type=Path, help="write the PDF here (default, or '-': stdout)")
    s.set_defaults(func=run_pdf)


def _spec_of(body: bytes) -> str:
    try:
        spec = json.loads(body).get("config", {}).get("spec")
    except (ValueError, AttributeError):
        spec = None
    return spec if spec in SPECS else "en16931"


def run_normalize(args) -> int:
    from pipeline.flows.generate_xml import normalize  # lazy: each stage loads only what it needs

    body = read_input(args.request)
    try:
        _, canonical = normalize(body, args.spec or _spec_of(body), indent=True)
    except ApiError as err:
        return print_api_error(err)
    sys.stdout.buffer.write(canonical)
    return 0


@contextmanager
def _saxon_quiet():
    """Saxon writes a failed transform's error to the process's stderr itself, and TransformError carries the
    same text: hold Saxon's copy back so that the error is printed once."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


_CANONICAL_ROOT = "{urn:einvoice-pipeline:canonical:1}invoice"


def not_xml(command: str, source: Path, data: bytes, canonical: bool = False) -> int:
    """0 when `data` is XML a stylesheet can be given, else the input's fault said in one line and 1: malformed,
    or carrying a DOCTYPE (refused, as everywhere). Saxon's refusal named our stylesheet and exited 2, as if the
    stylesheet were broken. `canonical`: the root must also be the canonical invoice (html.xsl has no such check
    and answered an empty page with exit 0 for a CII or UBL document)."""
    from lxml import etree  # lazy: as above

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        why = f"the input is not well-formed XML: {exc.msg}"
    else:
        doctype = root.getroottree().docinfo.doctype
        why = ("the input carries a DOCTYPE; refused (no DTDs or entity declarations)" if doctype
               else "the input is not a canonical invoice (urn:einvoice-pipeline:canonical:1 invoice)"
               if canonical and root.tag != _CANONICAL_ROOT else None)
    if why is None:
        return 0
    print(f"pipeline {command}: {shown(source)}: {why}", file=sys.stderr)
    return 1


def transform_failed(command: str, source: Path, err: TransformError) -> int:
    """One report of a failed stage: the input named; the stylesheet's own verdict on it (an xsl:message that
    stops the transform, e.g. "the input is not a canonical invoice") when it gave one, else Saxon's error with
    the stylesheet's file and line (a fault of the stylesheet). Exit 1 for the input, 2 for the stylesheet."""
    if err.xsl_messages:
        for message in err.xsl_messages:
            print(f"pipeline {command}: {shown(source)}: {message}", file=sys.stderr)
        return 1
    print(f"pipeline {command}: {shown(source)}: {err}", file=sys.stderr)
    return 2


def run_transform(args) -> int:
    from pipeline.write.transform import transform  # lazy: as above

    data = read_input(args.canonical)
    if not_xml("run transform", args.canonical, data):
        return 1
    try:
        with _saxon_quiet():
            out = transform(data, args.to, args.spec, str(args.xslt) if args.xslt else None, args.specification_id)
    except TransformError as err:  # the message names the stylesheet file and line
        return transform_failed("run transform", args.canonical, err)
    sys.stdout.buffer.write(out)
    return 0


def run_validate(args) -> int:
    from pipeline.flows.validate_xml import validate_xml  # lazy: as above

    try:
        report = validate_xml(read_input(args.document), args.spec, args.version)
    except ApiError as err:  # an unknown --version, a document too large: not validated, so never "invalid"
        print_api_error(err)
        return 2
    args.exit_code = {"valid": 0, "invalid": 1}.get(report.verdict, 3)  # (kept if stdout's reader goes away)
    print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
    return args.exit_code


def run_html(args) -> int:
    from pipeline.pdf import page  # lazy: as above

    data = read_input(args.canonical)
    # an author's own page stylesheet may take other input; ours takes the canonical invoice only
    if not_xml("run html", args.canonical, data, canonical=args.xslt is None):
        return 1
    try:
        with _saxon_quiet():
            out = page.invoice_html(data, page.language_of(args.lang), args.profile_label, args.xslt or page.HTML_XSL)
    except ApiError as err:
        return print_api_error(err)
    except TransformError as err:
        return transform_failed("run html", args.canonical, err)
    sys.stdout.buffer.write(out)
    return 0


def run_pdf(args) -> int:
    from pipeline.pdf import page  # lazy: as above

    if output_refused("pipeline run pdf", args.output) or pdf_to_terminal("pipeline run pdf", args.output):
        return 2
    write_output(args.output, page.html_to_pdf(read_input(args.html)))
    return 0


def run_read(args) -> int:
    from lxml import etree  # lazy: as above

    from pipeline.flows import parse  # lazy: as above
    from pipeline.read import canonical, provenance  # lazy: as above

    try:
        source = parse.source_of(read_input(args.document))
        with _saxon_quiet():
            # source nodes named by id, as parse does: the stylesheets' path() on every value made the stage
            # quadratic (a 20,000-line UBL had not finished after 6 minutes; parse reads it in seconds)
            out = canonical.to_canonical(source.xml, source.doc, args.xslt, tree=source.reading_tree(), ids=True)
    except ApiError as err:
        return print_api_error(err)
    except TransformError as err:
        return transform_failed("run read", args.document, err)
    root = source.doc.tree.getroot()
    out = _with_paths(out, root) if args.provenance else provenance.split(out, root).canonical
    sys.stdout.buffer.write(etree.tostring(etree.fromstring(out), xml_declaration=True, encoding="UTF-8",
                                           pretty_print=True))
    return 0


def _with_paths(traced: bytes, source) -> bytes:
    """The canonical document with its s:src naming source nodes by path(), as the stylesheets write them without
    `$src = 'id'` (an author's stylesheet that writes paths itself is left as it is)."""
    from lxml import etree  # lazy: as above

    from pipeline.read import provenance  # lazy: as above
    from pipeline.read.canonical import SOURCE_NS  # lazy: as above

    root = etree.fromstring(traced)
    ids = root.attrib.pop(f"{{{SOURCE_NS}}}ids", None)
    if ids is not None:
        path = provenance.path_namer(ids.split(), source)
        for element in root.iter(etree.Element):
            src = element.get(f"{{{SOURCE_NS}}}src")
            if src:
                element.set(f"{{{SOURCE_NS}}}src", " ".join(map(path, src.split())))
    return etree.tostring(root)
