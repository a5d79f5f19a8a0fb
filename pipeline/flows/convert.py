"""Product path: convert an e-invoice to another syntax (or to a ZUGFeRD PDF): read + write.

    parse (the reading path) -> the source judged by the official rules -> what the target cannot carry -> the
    parsed invoice generated again (the generation path: canonical -> CII / UBL / PDF -> official validation)

To CII / UBL the parsed model and the canonical XML its loss check wrote go straight to the generation stylesheets
(the model checked for the target's config only): the same document as sending the parse's JSON to the XML
endpoint gives (tests/test_convert.py), without writing and reading that JSON and the canonical XML again.

Two refusals a user must be able to tell apart: the source itself is invalid (422 SOURCE_INVALID, with the source's
findings) and the target cannot carry something the source has (422 CONVERSION_LOSS, each unmapped value with its
xpath and business term; `allow_loss` converts anyway and hands the losses back).

The source is judged on the rules of its target (`judge_source`): going to EN 16931 (CII, or UBL under en16931) a
source is converted when it is valid EN 16931, and the errors of the CIUS its BT-24 claims (Peppol, XRechnung) travel
with the answer as source findings; where the target is a CIUS the source claims, those errors refuse. The output's
BT-24 names the rules that judged it (`target_specification_id`), said in `changed`. Values with no business term
that a syntax requires (`provenance.is_technical`: plumbing, fillers) are never a loss: written where the target
syntax has their place (the same syntax), else listed as technical. A French invoice's converted document is held
to France's rules as a French platform would hold it (`held_in_france`): what allowLoss left out may leave it valid
EN 16931 but no valid French invoice, and the answer says so (target findings).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal

from pipeline.check import detect, fr_ctc
from pipeline.check.rejection import GENERATED_FAILED, as_json, error_detail
from pipeline.check.report import ERROR, Issue, Report
from pipeline.check.verdict import INVALID
from pipeline.errors import ApiError, ErrorDetail, invalid_input
from pipeline.flows.generate_xml import write_validated
from pipeline.flows.generate_zugferd import generate_zugferd
from pipeline.flows.parse import (Parsed, changed_value, keep_specification_id, names_xrechnung_extension, only_read,
                                  parse, read_canonical, source_of, source_spec, validate_source, written_again,
                                  written_specification_id)
from pipeline.flows.validate_xml import validate_xml
from pipeline.invoice import peppol
from pipeline.invoice.model import DATE_RE, InvoiceRequest, term_label, validate_request
from pipeline.invoice.request_json import dump_request
from pipeline.invoice.specs import EN16931_ID, XRECHNUNG_EXTENSION_ID, profile_for_guideline, profile_named
from pipeline.invoice.terms import business_term, term_for, term_name
from pipeline.read import provenance
from pipeline.read.to_json import invoice_json
from pipeline.settings import get_settings
from pipeline.write.transform import to_profile

TARGETS = ("CII", "UBL", "ZUGFERD")
SPECS = ("xrechnung", "en16931", "peppol")
MAX_LISTED = 100  # errors[] entries of a 422


@dataclass
class Conversion:
    document: bytes
    media_type: str
    losses: list[dict] = field(default_factory=list)  # unmapped content of the source, left out (with allow_loss)
    changed: list[dict] = field(default_factory=list)  # source values the target writes otherwise (BT-24)
    technical: list[dict] = field(default_factory=list)  # plumbing and fillers the target has no place for
    judged_on: str | None = None  # the rules the source was judged on ("en16931 1.3.16")
    source_findings: list[dict] = field(default_factory=list)  # errors of the CIUS the source claims (`judge_source`)
    target_rules: str | None = None  # France's rules ("fr-ctc 1.4.0.04") the converted French invoice was held to
    target_findings: list[dict] = field(default_factory=list)  # their errors on it (`held_in_france`)

    def summary(self) -> dict:
        """What the conversion did besides the document, as the CLI's JSON and a job's result line state it (the
        endpoint's X-Conversion-* and X-Source-Findings headers say the same)."""
        return {"judgedOn": self.judged_on, "sourceFindings": self.source_findings, "changed": self.changed,
                "lost": self.losses, "technical": self.technical, "targetRules": self.target_rules,
                "targetFindings": self.target_findings}


def _refusal(code: str, message: str, errors: list[ErrorDetail]) -> ApiError:
    shown = f" (the first {MAX_LISTED} are listed)" if len(errors) > MAX_LISTED else ""
    return ApiError(422, code, message + shown, errors[:MAX_LISTED])


def loss_details(unmapped: list[dict]) -> list[ErrorDetail]:
    return [_loss_detail(u) for u in unmapped]


# Why a value of the source is not carried where no flow below names a reason of its own: (English, German)
_NO_FIELD = ("no field of the model carries it", "das Rechnungsmodell hat kein Feld für sie")


def _loss_detail(u: dict) -> ErrorDetail:
    if "code" in u:  # an entry that says itself (a PDF's second invoice file)
        return ErrorDetail(u["code"], u["message"], rejectedValue=u["value"], messageDe=u.get("messageDe"))
    value = u["value"] if isinstance(u["value"], str) else str(u["value"])   # (a Decimal as its digits)
    # the German page and a German job's report say the entry's own reason, not only the code's general sentence
    return ErrorDetail("NOT_CARRIED", f"{u['xpath']}{_line(u)} = {value!r}: " + u.get("reason", _NO_FIELD[0])
                       + ", so the converted document would not have it",
                       businessTerm=(u.get("businessTerm") or "").split(" ")[0] or None,
                       messageDe=f"{u['xpath']}{_line(u, 'de')} = {value!r}: " + u.get("reasonDe", _NO_FIELD[1])
                       + "; das umgewandelte Dokument hätte sie daher nicht")


def _line(entry: dict, language: str = "en") -> str:
    return f" ({_IN_SOURCE[language][2]} {entry['line']})" if entry.get("line") is not None else ""


def second_invoices(parsed: Parsed) -> list[dict]:
    """A PDF's second invoice file with other content (FX_SECOND_INVOICE) as loss entries: the conversion writes the
    invoice file it read, and a receiver's software may have read the other one, so leaving it out is said (and
    refuses without allowLoss) like any content the target does not carry."""
    source = parsed.source
    german = source.pdf_problems_de or (None,) * len(source.pdf_problems)
    return [{"xpath": f"PDF embedded file {p.rejectedValue!r}" if p.rejectedValue else "PDF embedded file",
             "line": None, "value": p.rejectedValue, "businessTerm": None, "code": p.code,
             "message": f"{p.message} {only_read(source, 'converted')}",
             "messageDe": f"{de} {only_read(source, 'converted', 'de')}" if de else None}
            for p, de in zip(source.pdf_problems, german) if p.code == "FX_SECOND_INVOICE"]


def _cut(parsed: Parsed, values, reason: tuple[str, str]) -> list[dict]:
    """Loss entries of (JSON field, value) pairs the target does not carry, each at its source node, with the
    reason in English and German (`reason`, `reasonDe`). An amount is given as its digits, as an unmapped value is
    (a Decimal broke the JSON of a job's line and of `pipeline convert --json`)."""
    cut = []
    for field, value in values:
        node = provenance.source_node(parsed.read, parsed.source.doc, field) if parsed.read is not None else None
        cut.append({"xpath": node["xpath"] if node else field, "line": node["line"] if node else None,
                    "value": str(value) if isinstance(value, Decimal) else value,
                    "businessTerm": business_term(field), "reason": reason[0],
                    "reasonDe": reason[1]})
    return cut


def vatex_in_capitals(parsed: Parsed, to: str) -> list[dict]:
    """A ZUGFeRD PDF's BT-121 as the VATEX code list writes it ("VATEX-EU-132-1A"): the EN 16931 rules compare a
    VATEX code in capitals (BR-CL-22 upper-cases it), the Factur-X rules as written (FX-SCH-A-000589 refused the
    CEN example XRechnung-O's "vatex-eu-132-1a"). The parsed invoice (JSON, model, canonical XML) gets the code in
    capitals; the `changed` entries say so. Other targets keep the value verbatim."""
    breakdowns = parsed.invoice.get("vatBreakdowns") or []
    if to != "ZUGFERD" or parsed.request is None or not any(_lower_vatex(b) for b in breakdowns):
        return []
    changed, json, models = [], [], []
    for item, model in zip(breakdowns, parsed.request.invoice.vatBreakdowns):
        code = _lower_vatex(item)
        if code:
            changed.append(changed_value("BT-121", code, code.upper(), VATEX_CAPITALS[0], VATEX_CAPITALS[1]))
            item, model = {**item, "exemptionReasonCode": code.upper()}, model.model_copy(
                update={"exemptionReasonCode": code.upper()})
        json.append(item)
        models.append(model)
    _drop(parsed, "vatBreakdowns", json, models)
    return changed


VATEX_CAPITALS = ("the VATEX code list writes its codes in capitals, which the Factur-X rules require "
                  "(FX-SCH-A-000589) and the EN 16931 rules compare the code in (BR-CL-22)",
                  "die VATEX-Codeliste schreibt ihre Codes in Großbuchstaben, die die Factur-X-Regeln verlangen "
                  "(FX-SCH-A-000589) und in denen die EN-16931-Regeln den Code vergleichen (BR-CL-22)")


def _lower_vatex(breakdown: dict) -> str | None:
    code = breakdown.get("exemptionReasonCode")
    return code if isinstance(code, str) and code.upper().startswith("VATEX-") and code != code.upper() else None


def further_preceding(parsed: Parsed, to: str, allow_loss: bool) -> list[dict]:
    """CII (and a ZUGFeRD PDF's CII) carries one preceding invoice reference (BG-3): the further ones of a UBL source
    as loss entries. With allowLoss they are taken out of the parsed invoice (its JSON, model and canonical XML), so
    that the target is written without them; without it the entries refuse the conversion."""
    refs = parsed.invoice.get("additionalPrecedingInvoiceReferences")
    if _syntax(to) != "CII" or not refs or parsed.request is None:
        return []
    cut = _cut(parsed, _scalars(refs, "invoice.additionalPrecedingInvoiceReferences"),
               ("CII (D16B) carries one preceding invoice reference (BG-3)",
                "CII (D16B) trägt nur einen Verweis auf eine vorausgegangene Rechnung (BG-3)"))
    if allow_loss:
        _drop(parsed, "additionalPrecedingInvoiceReferences")
    return cut


def _drop(parsed: Parsed, field: str, value=None, model=None) -> None:
    """The parsed invoice (JSON, model and canonical XML) without the invoice field `field` (allowLoss), or with
    `value` (JSON) and `model` (its model) in its place."""
    parsed.invoice = {k: v if k != field else value for k, v in parsed.invoice.items()
                      if k != field or value is not None}
    parsed.request = parsed.request.model_copy(update={"invoice": parsed.request.invoice.model_copy(
        update={field: model})})
    parsed.written = written_again(parsed.request)


_SUB_LINES_LEFT = ("XRechnung binds sub-invoice lines (BG-DEX-01) in UBL under its extension only; the line above "
                   "keeps its amounts, which already hold theirs (BR-DEX-02)",
                   "XRechnung bindet Unterpositionen (BG-DEX-01) nur in UBL unter ihrer Extension; die übergeordnete "
                   "Position behält ihre Beträge, die die der Unterpositionen schon enthalten (BR-DEX-02)")


def sub_lines_cut(parsed: Parsed, to: str, endpoint: str, spec_id: str | None, allow_loss: bool) -> list[dict]:
    """XRechnung's sub-invoice lines (BG-DEX-01) where the target has no place for them (anything but a UBL under
    the extension), as loss entries: each value of every sub-line. Without them the invoice still adds up, since a
    line with sub-lines states their sum. With allowLoss they are taken out of the parsed invoice (JSON, model and
    canonical XML), so that the target is written without them; without it the entries refuse the conversion.
    (Factur-X EXTENDED's line hierarchy is flat in the model: `hierarchy_cut`.)"""
    lines = parsed.invoice.get("invoiceLines") or []
    if parsed.request is None or _extension_target(to, endpoint, spec_id):
        return []
    cut = [entry for i, line in enumerate(lines) if line.get("subInvoiceLines")
           for entry in _cut(parsed, _scalars(line["subInvoiceLines"], f"invoice.invoiceLines[{i}].subInvoiceLines"),
                             _SUB_LINES_LEFT)]
    if cut and allow_loss:
        _keep_lines(parsed, range(len(lines)), "subInvoiceLines")
    return cut


def _extension_target(to: str, endpoint: str, spec_id: str | None) -> bool:
    """The one target that carries the XRechnung extension's groups: UBL under xrechnung with the extension's BT-24."""
    return _syntax(to) == "UBL" and endpoint == "xrechnung" and (spec_id or "").strip() == XRECHNUNG_EXTENSION_ID


def _no_place_for_payments(to: str, language: str = "en") -> str:
    """Why a target other than the extension's UBL has no place for third-party payments (BG-DEX-09), in
    `language` (en | de)."""
    if _syntax(to) == "CII":
        return ("XRechnung binds them in UBL only (CII D16B has no place for a payment's type and description)"
                if language == "en" else
                "XRechnung bindet sie nur in UBL (CII D16B hat keinen Platz für Art und Beschreibung einer Zahlung)")
    if language == "en":
        return ("EN 16931 has no term for them: XRechnung binds them in UBL under its extension only (spec xrechnung, "
                f"BT-24 {XRECHNUNG_EXTENSION_ID})")
    return ("EN 16931 hat keinen Geschäftsbegriff für sie: XRechnung bindet sie nur in UBL unter ihrer Extension "
            f"(spec xrechnung, Spezifikationskennung BT-24 {XRECHNUNG_EXTENSION_ID})")


def _payments_sum(parsed: Parsed) -> Decimal:
    return sum((Decimal(str(p.get("amount") or 0)) for p in parsed.invoice.get("thirdPartyPayments") or []),
               Decimal(0))


def _due_without_payments(parsed: Parsed) -> Decimal | None:
    """BT-112 - BT-113 + BT-114 (BR-CO-16's amount due) of the source's totals, None when BT-112 is not stated."""
    totals = parsed.invoice.get("documentTotals") or {}
    if totals.get("taxInclusiveAmount") is None:
        return None
    return (Decimal(str(totals["taxInclusiveAmount"])) - Decimal(str(totals.get("prepaidAmount") or 0))
            + Decimal(str(totals.get("payableRoundingAmount") or 0)))


def _payments_in_amount_due(parsed: Parsed) -> bool:
    """The source's amount due (BT-115) includes its third-party payments (BR-DEX-09) and so differs from what
    EN 16931 counts (BR-CO-16): leaving them out would leave an amount due that does not add up."""
    totals = parsed.invoice.get("documentTotals") or {}
    due = _due_without_payments(parsed)
    if due is None or totals.get("payableAmount") is None or _payments_sum(parsed) == 0:
        return False
    return Decimal(str(totals["payableAmount"])) == due + _payments_sum(parsed)


def payments_refusal(parsed: Parsed, to: str) -> ApiError:
    """422 CONVERSION_LOSS for third-party payments (BG-DEX-09) a target has no place for while the amount due
    includes them: allowLoss cannot drop them, since the amount due would not add up (BR-CO-16) and changing it
    would change what is owed. Each payment is named at its source node."""
    message = (f"The target cannot carry the source's third-party payments (BG-DEX-09): {_no_place_for_payments(to)}; "
               "the amount due (BT-115) includes them (BR-DEX-09), which the EN 16931 rules refuse (BR-CO-16). "
               "allowLoss does not apply: the amount due (BT-115) would not add up without them. UBL with spec "
               "xrechnung keeps them.")
    cii = _syntax(to) == "CII"
    place = "CII" if cii else "UBL without the XRechnung extension"
    place_de = "CII" if cii else "UBL ohne die Extension von XRechnung"
    nodes = [_source_node(parsed, f"invoice.thirdPartyPayments[{i}].paymentType")
             for i in range(len(parsed.invoice.get("thirdPartyPayments") or []))]
    errors = [ErrorDetail("INVALID_VALUE", f"Third party payment (BG-DEX-09): {place} has no place for it"
                          + _where(node), None, "BG-DEX-09",
                          messageDe=f"Fremdforderung (BG-DEX-09): {place_de} hat keinen Platz für sie"
                          + _where(node, "de"))
              for node in nodes]
    return _refusal("CONVERSION_LOSS", message, errors)


def payments_cut(parsed: Parsed, to: str, endpoint: str, spec_id: str | None, allow_loss: bool) -> list[dict]:
    """XRechnung's third-party payments (BG-DEX-09) where the target has no place for them (anything but a UBL under
    the extension). An amount due that includes them refuses (`payments_refusal`); one that does not (the invoice adds
    up without them, BR-CO-16) makes them loss entries: each value of every payment. With allowLoss they are taken
    out of the parsed invoice (JSON, model and canonical XML); without it the entries refuse the conversion."""
    payments = parsed.invoice.get("thirdPartyPayments")
    if parsed.request is None or not payments or _extension_target(to, endpoint, spec_id):
        return []
    if _payments_in_amount_due(parsed):
        raise payments_refusal(parsed, to)
    cut = _cut(parsed, _scalars(payments, "invoice.thirdPartyPayments"),
               (f"third-party payments (BG-DEX-09): {_no_place_for_payments(to)}; the invoice adds up without them, "
                "as the amount due (BT-115) does not include them (BT-112 - BT-113 + BT-114, BR-CO-16)",
                f"Fremdforderungen (BG-DEX-09): {_no_place_for_payments(to, 'de')}; die Rechnung geht ohne sie auf, "
                "da der fällige Betrag (BT-115) sie nicht enthält (BT-112 - BT-113 + BT-114, BR-CO-16)"))
    if allow_loss:
        _drop(parsed, "thirdPartyPayments")
    return cut


# VAT categories whose breakdown EN 16931 forbids an exemption reason (BT-120, BT-121) on, by the rule saying so
_NO_EXEMPTION = {"S": "BR-S-10", "Z": "BR-Z-10", "L": "BR-AF-10", "M": "BR-AG-10"}


def _under_en16931(request: dict, endpoint: str) -> bool:
    """Whether the target is judged on rules that hold EN 16931's (anything but Factur-X EXTENDED, whose rules let a
    standard-rated breakdown state an exemption reason)."""
    if endpoint == "zugferd":
        return profile_named(request["config"]["profile"]).name != "EXTENDED"
    spec_id = (request["invoice"].get("processControl") or {}).get("specificationIdentifier")
    profile = profile_for_guideline((spec_id or "").strip())
    return profile is None or profile.name != "EXTENDED"


def exemption_cut(parsed: Parsed, request: dict, endpoint: str, allow_loss: bool) -> list[dict]:
    """An exemption reason (BT-120, BT-121) on a VAT breakdown of a category that EN 16931 gives none (S, Z, L, M),
    as Factur-X EXTENDED allows it (e.g. "Normalsatz" on a standard rate), going to a target judged on EN 16931:
    a loss entry per value, named by the rule that forbids it. With allowLoss the reasons are taken out of the parsed
    invoice (JSON, model and canonical XML); without it the entries refuse (the written document failed that rule
    after allowLoss, a refusal no client could get past)."""
    breakdowns = parsed.invoice.get("vatBreakdowns") or []
    if parsed.request is None or not _under_en16931(request, endpoint):
        return []
    reasons = ("exemptionReason", "exemptionReasonCode")
    found = [(i, key) for i, b in enumerate(breakdowns) if b.get("vatCategoryCode") in _NO_EXEMPTION
             for key in reasons if b.get(key) is not None]
    cut = [entry for i, key in found for entry in _cut(
        parsed, [(f"invoice.vatBreakdowns[{i}].{key}", breakdowns[i][key])],
        (f"EN 16931 gives a VAT breakdown of category {breakdowns[i]['vatCategoryCode']} no exemption reason "
         f"({_NO_EXEMPTION[breakdowns[i]['vatCategoryCode']]}); Factur-X EXTENDED allows one",
         f"EN 16931 gibt einer Umsatzsteueraufschlüsselung der Kategorie {breakdowns[i]['vatCategoryCode']} keinen "
         f"Befreiungsgrund ({_NO_EXEMPTION[breakdowns[i]['vatCategoryCode']]}); Factur-X EXTENDED lässt einen zu"))]
    if found and allow_loss:
        drop = {i for i, _ in found}
        _drop(parsed, "vatBreakdowns",
              [{k: v for k, v in b.items() if k not in reasons} if i in drop else b for i, b in enumerate(breakdowns)],
              [b.model_copy(update=dict.fromkeys(reasons)) if i in drop else b
               for i, b in enumerate(parsed.request.invoice.vatBreakdowns)])
    return cut


def _payments_explain(parsed: Parsed, report: Report) -> bool:
    """The source's only errors on EN 16931's rules are BR-CO-16, which its third-party payments explain (the amount
    due includes them, as the XRechnung extension counts it): no fault of the source, a target without their place."""
    errors = [i for i in report.issues if i.severity == ERROR]
    return (bool(parsed.invoice.get("thirdPartyPayments")) and bool(errors)
            and all(i.code == "BR-CO-16" for i in errors) and _payments_in_amount_due(parsed))


def _keep_lines(parsed: Parsed, kept, *without: str) -> None:
    """The parsed invoice (JSON, model and canonical XML) with only the lines at the indexes `kept`, each without
    the fields `without`: what the target is written from once allowLoss left the rest out."""
    lines, models = parsed.invoice["invoiceLines"], parsed.request.invoice.invoiceLines
    parsed.invoice = {**parsed.invoice, "invoiceLines": [{k: v for k, v in lines[i].items() if k not in without}
                                                         for i in kept]}
    parsed.request = parsed.request.model_copy(update={"invoice": parsed.request.invoice.model_copy(update={
        "invoiceLines": [models[i].model_copy(update=dict.fromkeys(without)) for i in kept]})})
    parsed.written = written_again(parsed.request)


_HIERARCHY_LEFT = ("UBL has no place for Factur-X EXTENDED's line hierarchy (the CEN rules warn of sub-invoice lines, "
                   "UBL-CR-646): a top-level line that is a whole EN 16931 line (quantity, net price, VAT category) "
                   "stays with its amounts, which hold its sub-lines'; a group line short of that gives way to its "
                   "sub-lines; information lines, which count in no total, and the hierarchy's own terms (BT-X-8, "
                   "BT-X-304) are left out",
                   "UBL hat keinen Platz für die Positionshierarchie von Factur-X EXTENDED (die CEN-Regeln warnen vor "
                   "Unterpositionen, UBL-CR-646): eine Position der obersten Ebene, die eine vollständige Position "
                   "nach EN 16931 ist (Menge, Nettopreis, Umsatzsteuerkategorie), bleibt mit ihren Beträgen, die die "
                   "ihrer Unterpositionen enthalten; eine Gruppenposition, der dazu etwas fehlt, weicht ihren "
                   "Unterpositionen; Informationspositionen, die in keine Summe eingehen, und die eigenen Begriffe der "
                   "Hierarchie (Untertyp der Rechnungsposition BT-X-8, Kennung der übergeordneten Rechnungsposition "
                   "BT-X-304) werden weggelassen")


def _whole_line(line: dict) -> bool:
    """A line that states what EN 16931 requires of each (BR-22, BR-26, BR-CO-04), so it can stand for its sub-lines."""
    return (line.get("quantity") is not None and (line.get("priceDetails") or {}).get("netPrice") is not None
            and (line.get("lineVatInformation") or {}).get("vatCategoryCode") is not None)


def _invoiced_lines(lines: list[dict]) -> list[int]:
    """The indexes of the lines of a Factur-X EXTENDED hierarchy that make its EN 16931 invoice, in document order:
    from the top, a whole line (`_whole_line`) or one without sub-lines stands for itself and its sub-lines (the
    line total, BT-106, sums the top-level lines); a group line short of a whole line is replaced by its sub-lines,
    taken the same way; an INFORMATION line counts in no total and goes with its sub-lines."""
    ids = {line.get("lineIdentifier") for line in lines}
    below: dict[str | None, list[int]] = {}
    for i, line in enumerate(lines):
        parent = line.get("parentLineIdentifier")
        below.setdefault(parent if parent in ids else None, []).append(i)
    kept: list[int] = []
    level = list(below.get(None, []))
    while level:
        i = level.pop(0)
        line, under = lines[i], below.get(lines[i].get("lineIdentifier"), [])
        if line.get("lineStatusReasonCode") == "INFORMATION":
            continue
        if _whole_line(line) or not under:
            kept.append(i)
        else:
            level[:0] = under
    return sorted(kept)


def hierarchy_cut(parsed: Parsed, to: str, allow_loss: bool) -> list[dict]:
    """Factur-X EXTENDED's line hierarchy (BT-X-304 parent line, BT-X-8 GROUP / DETAIL / INFORMATION) going to UBL,
    as loss entries: every value of each line `_invoiced_lines` leaves out (a line its kept parent stands for, a
    group line its sub-lines replace, an information line) and the hierarchy's terms of the lines kept, which stay as
    EN 16931 lines with everything else they state. With allowLoss they are taken out of the parsed invoice, so that
    the target is written without them; without it the entries refuse the conversion."""
    lines = parsed.invoice.get("invoiceLines") or []
    hierarchy = ("parentLineIdentifier", "lineStatusReasonCode")
    if _syntax(to) != "UBL" or parsed.request is None or not any(line.get(k) for line in lines for k in hierarchy):
        return []
    kept = _invoiced_lines(lines)
    cut = []
    for i, line in enumerate(lines):
        path = f"invoice.invoiceLines[{i}]"
        values = (_scalars(line, path) if i not in kept else
                  [(f"{path}.{k}", line[k]) for k in hierarchy if line.get(k) is not None])
        cut += _cut(parsed, values, _HIERARCHY_LEFT)
    if allow_loss:
        _keep_lines(parsed, kept, *hierarchy)
    return cut


_GROSS_BELOW_NET = ("UBL carries the gross price (BT-148) in a price allowance whose amount (BT-147) would be gross - "
                    "net, here below zero: a charge on the price in disguise, which EN 16931 has no term for (BT-147 "
                    "is a discount; Peppol refuses a price charge, PEPPOL-EN16931-R044); the net price (BT-146) stays",
                    "UBL trägt den Bruttopreis (BT-148) in einem Preisnachlass, dessen Betrag (BT-147) Brutto - Netto "
                    "wäre, hier unter null: ein verdeckter Zuschlag auf den Preis, für den EN 16931 keinen "
                    "Geschäftsbegriff hat (BT-147 ist ein Nachlass; Peppol lehnt einen Zuschlag auf den Preis ab, "
                    "PEPPOL-EN16931-R044); der Nettopreis (BT-146) bleibt")


def _gross_below_net(details: dict) -> bool:
    """A gross price without a stated discount below the net price: a price that a charge raised (Factur-X
    EXTENDED's, left out as content EN 16931 has no term for), or stated so."""
    gross, net = details.get("grossPrice"), details.get("netPrice")
    return (gross is not None and net is not None and details.get("priceDiscount") is None
            and Decimal(str(net)) > Decimal(str(gross)))


def gross_cut(parsed: Parsed, to: str, allow_loss: bool) -> list[dict]:
    """A line's gross price (BT-148) below its net price with no discount stated, going to UBL, as a loss entry:
    UBL binds the gross price in a price allowance that needs an amount, and gross - net would be a negative discount
    made up to stand for a charge that the answer names as left out (the target read back had a BT-147 of -1 where
    the source has a charge of 1). With allowLoss the gross price is taken out of the parsed invoice (JSON, model
    and canonical XML), so that the line is written with its net price alone; without it the entry refuses."""
    lines = parsed.invoice.get("invoiceLines") or []
    if _syntax(to) != "UBL" or parsed.request is None:
        return []
    below = [i for i, line in enumerate(lines) if _gross_below_net(line.get("priceDetails") or {})]
    cut = _cut(parsed, [(f"invoice.invoiceLines[{i}].priceDetails.grossPrice", lines[i]["priceDetails"]["grossPrice"])
                        for i in below], _GROSS_BELOW_NET)
    if below and allow_loss:
        models = parsed.request.invoice.invoiceLines
        parsed.invoice = {**parsed.invoice, "invoiceLines": [
            {**line, "priceDetails": {k: v for k, v in line["priceDetails"].items() if k != "grossPrice"}}
            if i in below else line for i, line in enumerate(lines)]}
        parsed.request = parsed.request.model_copy(update={"invoice": parsed.request.invoice.model_copy(update={
            "invoiceLines": [line.model_copy(update={"priceDetails": line.priceDetails.model_copy(
                update={"grossPrice": None})}) if i in below else line for i, line in enumerate(models)]})})
        parsed.written = written_again(parsed.request)
    return cut


def profile_cut(parsed: Parsed, profile_name: str, fillers: dict[str, str] | None = None) -> list[dict]:
    """The source's values a Factur-X subset profile (BASIC, BASIC WL, MINIMUM) has no place for, as loss entries
    (like `parsed.unmapped`'s): the profile's CII is the EN 16931 CII reduced to what its XSD declares, so every
    field the source has that the reduced document, read back, lacks is cut. (The PDF's page still shows them; the
    invoice a machine reads is the XML.) `fillers`: the conversion's, as generation will write them."""
    profile = profile_named(profile_name)
    if not profile.subset:
        return []
    # only the fields the reduced document keeps are needed: read, not parsed whole (no model, no loss check)
    reduced = source_of(to_profile(parsed.written, profile, fillers=fillers))
    kept = {field for field, _ in _scalars(invoice_json(read_canonical(reduced).root), "invoice")}
    # (BT-24 is the profile's own, said in `changed`)
    return _cut(parsed, ((field, value) for field, value in _scalars(parsed.invoice, "invoice")
                         if field not in kept and field != "invoice.processControl.specificationIdentifier"),
                (f"the Factur-X profile {profile.name} has no place for it",
                 f"das Factur-X-Profil {profile.name} hat keinen Platz für sie"))


def _scalars(value, path: str):
    """(concrete field path, value) of every value of request JSON."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _scalars(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _scalars(item, f"{path}[{i}]")
    elif value is not None:
        yield path, value


def request_for(parsed: Parsed, to: str, spec: str, profile: str | None, language: str | None) -> tuple[dict, str]:
    """(InvoiceRequest of the parsed invoice for the target, the endpoint spec it is generated for). BT-24 stays
    as the source states it where the target may write it (`parse.keep_specification_id`)."""
    invoice = dict(parsed.invoice)
    config = {"calculationMode": "MANUAL"}
    if to == "ZUGFERD":
        default = parsed.source.profile.name if parsed.source.profile else (
            "XRECHNUNG" if spec == "xrechnung" else "EN16931")
        config.update(syntax="CII", profile=profile or default, **({"metadataLanguage": language} if language else {}))
        keep_specification_id(invoice, parsed.source.specification_id, "zugferd", config["profile"])
        return {"invoice": invoice, "config": config}, "zugferd"
    process = (invoice.get("processControl") or {}).get("businessProcessType")
    keep_specification_id(invoice, target_specification_id(parsed.source.specification_id, to, spec, process), spec)
    config.update(syntax=to)
    return {"invoice": invoice, "config": config}, spec


def target_specification_id(spec_id: str | None, to: str, spec: str, process: str | None = None) -> str | None:
    """The BT-24 a conversion offers the target (`keep_specification_id` still refuses what the target cannot
    write): the output names the rules that judged it. Under en16931 that is the EN 16931 identifier; a CII keeps
    a Factur-X profile's (a CII names its profile by it; EXTENDED is judged on that profile's rules). A CIUS the
    EN 16931 rules do not check (Peppol, or any other that builds on EN 16931) is not claimed for the output.
    Under peppol, a source that states no Peppol identifier but Peppol's self-billing process (BT-23 `process`,
    e.g. a Peppol self-billing invoice that went to CII) gets the self-billing identifier: the billing one beside
    that process fails PEPPOL-EN16931-R007."""
    if (spec == "peppol" and (process or "").strip() == peppol.SELF_BILLING_PROCESS
            and (spec_id or "").strip() not in peppol.PROCESSES):
        return peppol.SELF_BILLING_ID
    if spec != "en16931" or spec_id is None or spec_id.strip() == EN16931_ID:
        return spec_id
    profile = profile_for_guideline(spec_id.strip())   # (XRechnung's id, any version, is no profile's claim here)
    return spec_id if to == "CII" and profile is not None and profile.name != "XRECHNUNG" else EN16931_ID


def _lines(lines: list[dict]):
    for line in lines:
        yield line
        yield from _lines(line.get("subInvoiceLines") or [])


def _lines_with(request: dict, price_term: str, without: str) -> str:
    """The ids of the lines whose price details hold `price_term` and not `without` (the first 20, then "..."),
    or "" when there are none."""
    ids = [str(line.get("lineIdentifier")) for line in _lines(request["invoice"].get("invoiceLines") or [])
           if price_term in (line.get("priceDetails") or {}) and without not in line["priceDetails"]]
    return ", ".join(ids[:20]) + (" ..." if len(ids) > 20 else "")


def _zoned_dates(value, path: str):
    """(field, value) of each date with a time zone (`2016-04-04+01:00`, an xs:date as UBL may send it)."""
    return ((field, item) for field, item in _scalars(value, path)
            if field.endswith("Date") and isinstance(item, str) and len(item) > 10 and DATE_RE.fullmatch(item))


def _why_specification_id(endpoint: str, config: dict) -> tuple[str, str]:
    """(English, German)"""
    if endpoint == "zugferd":
        return (f"the ZUGFeRD profile {config['profile']} writes its own specification identifier",
                f"das ZUGFeRD-Profil {config['profile']} schreibt seine eigene Spezifikationskennung")
    source = endpoint == "en16931"
    return (f"the converted document was judged on the {endpoint} rules, and its specification identifier names "
            "them" + (" (the source's names rules that were not applied to it)" if source else ""),
            f"das umgewandelte Dokument wurde nach den Regeln {endpoint} geprüft, und seine Spezifikationskennung "
            "nennt sie" + (" (die der Quelle nennt Regeln, die auf sie nicht angewandt wurden)" if source else ""))


# The fixed words of `changed` values the target writes in place of a price or charge (in the page's German:
# strings.json's convert_words, as parse.NOT_IN_SOURCE and NOT_WRITTEN)
NET_AND_DISCOUNT, GROSS_LESS_NET, LOGISTICS = ("net price + price discount", "gross price - net price",
                                               "logistics service charge")


def changed_for(parsed: Parsed, request: dict, endpoint: str) -> list[dict]:
    """The `changed` entries of a conversion: BT-24 when the target writes another identifier than the source's;
    BT-147 on UBL lines with a gross price and no discount (UBL binds BT-148 in an allowance that needs an amount:
    gross - net, which EN 16931 defines BT-146 by), BT-148 on CII lines with a discount and no gross price (net +
    discount), a date's time zone in CII (format 102 has none), BT-13 "NA" beside a lone BT-14 in UBL, BT-81 "1"
    (instrument not defined) in UBL beside a BT-83 the source states without a means code, BT-110 (the sum of the
    breakdowns' tax) where the source states no tax total."""
    out = []
    source_id = parsed.source.specification_id
    sent = (request["invoice"].get("processControl") or {}).get("specificationIdentifier")
    if endpoint == "zugferd":  # a profile writes its own identifier whatever the request keeps (`to_profile`)
        sent = None
    written = sent or written_specification_id(endpoint, request["config"].get("profile"))
    if source_id is not None and written != source_id:
        out.append(changed_value("BT-24", source_id, written, *_why_specification_id(endpoint, request["config"])))
    if request["config"]["syntax"] == "CII":
        out += [changed_value(business_term(path) or path, value, value[:10], "CII's date format 102 has no time "
                              "zone", "das Datumsformat 102 in CII hat keine Zeitzone")
                for path, value in _zoned_dates(request["invoice"], "invoice")]
        lines = _lines_with(request, "priceDiscount", without="grossPrice")
        if lines:
            out.append(changed_value("BT-148", None, NET_AND_DISCOUNT, "CII carries the price discount "
                                     "(BT-147) inside the gross price, which needs its amount; lines " + lines,
                                     "CII trägt den Preisnachlass (BT-147) im Bruttopreis, der dessen Betrag braucht; "
                                     "Positionen " + lines))
    if request["config"]["syntax"] == "UBL":
        invoice = request["invoice"]
        if endpoint == "xrechnung" and invoice.get("salesOrderReference") and not invoice.get("purchaseOrderReference"):
            out.append(changed_value("BT-13", None, "NA", "UBL requires an order id beside the sales order "
                                     "reference (BT-14) and XRechnung refuses it empty; Peppol's placeholder is "
                                     "written", "UBL verlangt neben der Auftragsreferenz (BT-14) eine "
                                     "Bestellnummer, die XRechnung nicht leer annimmt; Peppols Platzhalter wird "
                                     "geschrieben"))
        payment = invoice.get("paymentInstructions")
        if payment and not payment.get("meansCode"):
            out.append(changed_value("BT-81", None, "1", "UBL binds the payment reference (BT-83) in a payment means, "
                                     "whose code it requires; the source states none: UNTDID 4461 1, instrument not "
                                     "defined", "UBL bindet den Verwendungszweck (BT-83) an ein Zahlungsmittel, "
                                     "dessen Code es verlangt; die Quelle nennt keinen: UNTDID 4461 1, Zahlungsmittel "
                                     "nicht festgelegt"))
        lines = _lines_with(request, "grossPrice", without="priceDiscount")
        if lines:
            out.append(changed_value("BT-147", None, GROSS_LESS_NET, "UBL carries the gross price "
                                     "(BT-148) in a price allowance that needs its amount; lines " + lines,
                                     "UBL trägt den Bruttopreis (BT-148) in einem Preisnachlass, der dessen Betrag "
                                     "braucht; Positionen " + lines))
    return out + _tax_total(request) + _tax_currency(parsed) + _logistics_charges(parsed, request)


def _logistics_charges(parsed: Parsed, request: dict) -> list[dict]:
    """BT-99 for each document level charge read from a Factur-X EXTENDED logistics service charge (read-cii.xsl):
    the target writes it as a BG-21 (UBL's cac:AllowanceCharge, CII's SpecifiedTradeAllowanceCharge), which is what it
    is in EN 16931 terms, since the EXTENDED rules count it into the sum of charges (BT-108) and into the VAT
    breakdown's taxable amount like one. Said, as the element it came from is not the one written."""
    if parsed.read is None:
        return []
    out = []
    for i, charge in enumerate(request["invoice"].get("documentLevelCharges") or []):
        node = provenance.source_node(parsed.read, parsed.source.doc, f"invoice.documentLevelCharges[{i}].amount")
        if node and not node["near"] and "SpecifiedLogisticsServiceCharge" in node["xpath"]:
            amount = str(charge.get("amount"))
            out.append(changed_value("BT-99", f"{amount} ({LOGISTICS}, BT-X-272)", amount,
                                     "Factur-X EXTENDED's logistics service charge is a document level charge "
                                     "(BG-21) in EN 16931 terms: the EXTENDED rules count it into the sum of "
                                     "charges (BT-108) and the VAT breakdown's taxable amount as one",
                                     "Die Logistikservicegebühr von Factur-X EXTENDED ist nach EN 16931 eine "
                                     "Abgabe auf Dokumentebene (BG-21): die EXTENDED-Regeln zählen sie wie eine in die "
                                     "Summe der Abgaben (BT-108) und die Bemessungsgrundlage der "
                                     "Umsatzsteueraufschlüsselung"))
    return out


# BT-6 where a document states it: CII in the settlement, UBL on the root
_TAX_CURRENCY = {"CII": "/*/*[local-name()='SupplyChainTradeTransaction']"
                        "/*[local-name()='ApplicableHeaderTradeSettlement']/*[local-name()='TaxCurrencyCode']",
                 "UBL": "/*/*[local-name()='TaxCurrencyCode']"}


def _tax_currency(parsed: Parsed) -> list[dict]:
    """BT-6 where the source states it equal to BT-5: read as the invoice currency (the VAT accounted in it, which a
    document without BT-6 says too) and not written, since CII's BR-53 and Peppol's R005 refuse BT-6 = BT-5. Said,
    so that a value of the source is never left out silently."""
    currency = (parsed.invoice.get("currencyCode") or "").strip()
    if not currency or parsed.invoice.get("vatAccountingCurrencyCode"):
        return []
    stated = parsed.source.doc.tree.xpath(_TAX_CURRENCY[parsed.source.syntax])
    if not stated or (stated[0].text or "").strip() != currency:
        return []
    return [changed_value("BT-6", currency, None, "the VAT accounting currency equals the invoice currency (BT-5), "
                          "which a document without it says too; CII (BR-53) and Peppol (PEPPOL-EN16931-R005) refuse "
                          "it equal to BT-5, so it is not written",
                          "die Umsatzsteuer-Abrechnungswährung gleicht der Rechnungswährung (BT-5), was ein Dokument "
                          "ohne sie ebenso sagt; CII (BR-53) und Peppol (PEPPOL-EN16931-R005) lehnen sie gleich BT-5 "
                          "ab, daher wird sie nicht geschrieben")]


def _tax_total(request: dict) -> list[dict]:
    """BT-110 where the source states none (EN 16931 allows it absent): written as the sum of the VAT breakdowns'
    tax amounts (BT-117, BR-CO-14), since UBL requires it and the calculation fills it for every target."""
    invoice = request["invoice"]
    if (invoice.get("documentTotals") or {}).get("taxTotalAmount") is not None:
        return []
    taxes = [b.get("vatCategoryTaxAmount") for b in invoice.get("vatBreakdowns") or []]
    if not taxes or None in taxes:
        return []
    total = sum((Decimal(str(t)) for t in taxes), Decimal(0))
    return [changed_value("BT-110", None, str(total.quantize(Decimal("0.01"))), "the invoice's tax total is written as the sum of the VAT "
                          "breakdowns' tax amounts (BT-117): UBL requires it (cac:TaxTotal/cbc:TaxAmount), and the "
                          "calculation fills it for CII too",
                          "die Umsatzsteuer-Gesamtsumme der Rechnung wird als Summe der Steuerbeträge der "
                          "Aufschlüsselungen (BT-117) geschrieben: UBL verlangt sie (cac:TaxTotal/cbc:TaxAmount), und "
                          "die Berechnung füllt sie auch für CII")]


def target_model(parsed: Parsed, request: dict, spec: str) -> InvoiceRequest:
    """`request` (of `request_for`) as the model generation builds from its JSON: the invoice parse validated
    (its BT-24 as `request` has it) with the target's config, checked as the XML endpoint of `spec` checks a
    request (config and the checks across fields; ApiError 400 as there). The content checks are left out: the
    report's warnings are not returned (with config.strict they would refuse; convert sends none)."""
    invoice = parsed.request.invoice
    spec_id = (request["invoice"].get("processControl") or {}).get("specificationIdentifier")
    if invoice.processControl is not None and invoice.processControl.specificationIdentifier != spec_id:
        invoice = invoice.model_copy(update={"processControl": invoice.processControl.model_copy(
            update={"specificationIdentifier": spec_id})})
    return validate_request({"invoice": invoice, "config": request["config"]}, spec, reading=True)


def _source_node(parsed: Parsed, json_field: str | None) -> dict | None:
    """The node a JSON field was read from (or, with "near", the nearest enclosing one the source has); None when
    the reading path did not record it."""
    return provenance.source_node(parsed.read, parsed.source.doc, json_field) if (
        parsed.read is not None and (json_field or "").startswith("invoice.")) else None


# Where a refusal's entry is in what the client sent, in the language of its `message` / `messageDe`
_IN_SOURCE = {"en": ("in the source", ", near", "line", "in the PDF"),
              "de": ("in der Quelle", ", nahe", "Zeile", "im PDF")}


def _where(node: dict | None, language: str = "en") -> str:
    """" (in the source: xpath, line n)" of a `_source_node` ("" for None), in `language` (en | de)."""
    if not node:
        return ""
    where, near, line, _ = _IN_SOURCE[language]
    return f" ({where}{near if node['near'] else ''}: {node['xpath']}, {line} {node['line']})"


def _source_finding(parsed: Parsed, issue: Issue) -> ErrorDetail:
    """A finding of the source as a refusal's entry: its rule, business term and message, and where it is in what
    the client sent (readable xpath, line; a PDF's object) instead of a JSON field the client never sent."""
    e = error_detail(issue, parsed.source.syntax, written=as_json(parsed.request))
    german = issue.message_de or e.message  # the rule's text as the rules give it where they have no German
    where = issue.location
    if where is not None and where.pdfObject:
        return ErrorDetail(e.code, f"{e.message} ({_IN_SOURCE['en'][3]}: {where.pdfObject})", None, e.businessTerm,
                           messageDe=f"{german} ({_IN_SOURCE['de'][3]}: {where.pdfObject})")
    path = provenance.short_path(parsed.source.doc, where.xpath) if where is not None and where.xpath else None

    def shown(language: str) -> str:
        source, _, line, _ = _IN_SOURCE[language]
        at = ", ".join(filter(None, (path, f"{line} {where.line}" if where is not None and where.line else None)))
        return f" ({source}: {at})" if at else ""
    return ErrorDetail(e.code, e.message + shown("en"), None, e.businessTerm, e.rejectedValue,
                       messageDe=german + shown("de"))


def _named(field: str, language: str = "en") -> str:
    """"Name (BT-n)" of a JSON field in `language` (en | de), or the field itself when no business term has it."""
    name, _, bt = term_label(field).rpartition(", ")
    term = term_for(field) if name and language != "en" else None
    return f"{term_name(term, language) if term else name} ({bt})" if name else (bt or field)


_JSON_FIELD = re.compile(r"\binvoice(\.[A-Za-z]+(\[\d+\])?)+")

# Structure one syntax binds and the other has no place for, by the model's field: (what, why the target has no
# place for it, why allowLoss cannot drop it). The model refuses it for the target (400); what is left would not add
# up as the target's rules count it. (XRechnung's sub-lines and Factur-X EXTENDED's line hierarchy are left out with
# allowLoss: `sub_lines_cut`, `hierarchy_cut`; third-party payments are said before generation, `payments_cut`, so
# this entry answers only a request that reached the model with them.)
_STRUCTURE = {
    "CII": {"thirdPartyPayments": ("third-party payments (BG-DEX-09)", "XRechnung binds them in UBL only (CII D16B "
                                   "has no place for a payment's type and description), and the amount due (BT-115) "
                                   "that includes them fails the EN 16931 rules on CII (BR-CO-16)",
                                   "the amount due (BT-115) would not add up without them")},
}


def _structure(field: str | None, to: str) -> tuple[str, str, str] | None:
    return _STRUCTURE.get(_syntax(to), {}).get(field.rpartition(".")[2]) if field else None


def _syntax(to: str) -> str:
    return "CII" if to == "ZUGFERD" else to   # a ZUGFeRD PDF holds CII


def _in_terms(e: ErrorDetail, to: str) -> str:
    """A model entry's message for a client that sent a document: its field and any other JSON field it mentions
    named by business term ("invoice.x (Name, BT-n): ..." -> "Name (BT-n): ..."); a line structure the target has
    no place for said as such."""
    if _structure(e.field, to):
        return f"{_named(e.field)}: {_syntax(to)} has no place for it"
    label = term_label(e.field)
    prefix = (f"{e.field} ({label}): " if label else f"{e.field}: ") if e.field else None
    text = e.message
    if prefix and text.startswith(prefix):
        text = f"{_named(e.field)}: {text[len(prefix):]}" if label else text[len(prefix):]
    return _JSON_FIELD.sub(lambda m: _named(m.group(0)), text)


def in_source_terms(parsed: Parsed, errors: list[ErrorDetail], to: str = "", rules: bool = False) -> list[ErrorDetail]:
    """The entries of a refused target in the source's terms: the client sent a document, not JSON, so an entry
    names the source node (xpath, line) the field was read from, or the nearest enclosing one the source has,
    instead of a JSON field it never sent. `messageDe` beside: the entry's own German, or with `rules` (the entries
    of a VALIDATION_FAILED) the rule's text as the rules give it, with the German names of the fields and place;
    an entry of ours without German has none (the page says its code's sentence)."""
    out = []
    for e in errors:
        node = _source_node(parsed, e.field)
        german = e.messageDe or (e.message if rules else None)
        if german:
            german = _JSON_FIELD.sub(lambda m: _named(m.group(0), "de"), german) + _where(node, "de")
        out.append(ErrorDetail(e.code, _in_terms(e, to) + _where(node), None, e.businessTerm, e.rejectedValue,
                               messageDe=german))
    return out


def _cannot_carry(errors: list[ErrorDetail], to: str, message: str) -> str:
    """The refusal's message: the reasons of structure the target has no place for when that is among the entries."""
    structure = dict.fromkeys(filter(None, (_structure(e.field, to) for e in errors)))
    if structure:
        return " ".join(f"The target cannot carry the source's {what}: {why}. allowLoss does not apply: {left}."
                        for what, why, left in structure)
    # the model's message counts "invalid field(s)" of a request the client never sent: the terms are named instead
    named = ", ".join(dict.fromkeys(_named(e.field) if e.field else e.businessTerm or e.code for e in errors))
    return (f"The target cannot carry the source's {named}." if named
            else f"The target cannot carry the source: {message}")


def _check_pdf_lines(parsed: Parsed) -> None:
    """400 TOO_MANY_LINES, as generation answers it, for a source whose ZUGFeRD page would hold more lines than
    EINVOICE_MAX_PDF_LINES (the page is laid out line by line); CII and UBL take it."""
    lines = sum(1 for _ in _lines(parsed.invoice.get("invoiceLines") or []))
    limit = get_settings().max_pdf_lines
    if lines > limit:
        raise invalid_input(f"The invoice has {lines} lines; a ZUGFeRD PDF holds at most {limit} "
                            "(EINVOICE_MAX_PDF_LINES). Convert it to CII or UBL.", [ErrorDetail(
                                "TOO_MANY_LINES", f"file (Invoice line, BG-25): a ZUGFeRD PDF holds at most {limit} "
                                "invoice lines", field="file", businessTerm="BG-25", rejectedValue=lines)])


def _reading_problems(parsed: Parsed) -> list[ErrorDetail]:
    """Why the model refuses the invoice as read (the entries of validate_request(reading=True))."""
    try:
        validate_request({"invoice": parsed.invoice, "config": parsed.config}, parsed.config["spec"], reading=True)
    except ApiError as err:
        return err.errors
    return parsed.problems


# The rules named for a PDF's own findings (PDF/A-3, XMP) in `sourceFindings`: (English, German)
PDF_CHECKS = ("the PDF's own checks (PDF/A-3, XMP)", "die eigenen Prüfungen des PDFs (PDF/A-3, XMP)")


def judge_source(parsed: Parsed, spec: str, request_id: str | None = None) -> tuple[Report, str, list[dict]]:
    """The source on the rules of the target `spec`: (the report that decides whether it converts, the name of
    those rules, the errors of the CIUS its BT-24 claims that those rules do not apply, as report entries naming the
    rules they come from).
    A source whose claim is the target's (or EN 16931 itself, or a PDF: the Factur-X profile) is judged on what it
    claims. One that claims another CIUS (XRechnung, Peppol) than the target's is judged on the EN 16931 rules, and
    its CIUS's errors travel; a CIUS target then judges the written document (422 VALIDATION_FAILED naming its
    rules). Content checks are left out: convert returns no warnings."""
    source = parsed.source
    claimed = validate_source(source, request_id, content_checks=False, as_received=False)
    claim = source_spec(source)
    factur_x = source.pdf is not None or source.profile is not None
    claimed_rules = (claimed.judged_by(claim) if not factur_x else claimed.version
                     if claimed.version.startswith("Factur-X") else f"Factur-X {claimed.version}")
    if source.pdf is not None and claimed.verdict == INVALID and source.doc is not None:
        # The PDF's own faults (PDF/A, XMP) stay with the PDF: the invoice it embeds converts when its own rules pass
        # it (judged as sent as XML), and they travel as findings
        invoice = validate_xml(source.xml, "en16931" if source.profile else claim, request_id=request_id,
                               tree=source.rules_tree(), doc=source.doc, content_checks=False)
        if invoice.verdict != INVALID:
            found = {_place(i) for i in invoice.issues}
            return invoice, claimed_rules, [{"rules": PDF_CHECKS[0], **i.to_dict()}
                                            for i in claimed.issues if i.severity == ERROR and _place(i) not in found]
    if claim in (spec, "en16931") or source.pdf is not None:
        return claimed, claimed_rules, []
    judged = validate_xml(source.xml, "en16931", request_id=request_id, tree=source.rules_tree(), doc=source.doc)
    found = {_place(i) for i in judged.issues}
    return judged, judged.judged_by("en16931"), [{"rules": claimed_rules, **i.to_dict()} for i in claimed.issues
                                                 if i.severity == ERROR and _place(i) not in found]


def held_in_france(parsed: Parsed, result: Conversion, request_id: str | None = None) -> Conversion:
    """A French invoice's conversion (its source held to France's rules as received, `detect.of_invoice`: parties in
    France, or EXTENDED-CTC-FR) with the converted document on those rules (fr-ctc), as a French platform holds it.
    The source is judged on EN 16931 or its Factur-X profile, so a value that allowLoss left out (an EXTENDED-CTC-FR
    line subtype, BR-FR-MV-01) can leave a document valid EN 16931 that is no valid French invoice: its errors travel
    as target findings. Without an installed fr-ctc pack nothing is said (as validation cannot either)."""
    if parsed.source.doc is None or detect.of_invoice(parsed.source.doc) != fr_ctc.SPEC:
        return result
    xml = source_of(result.document).xml if result.media_type == "application/pdf" else result.document
    try:  # (a PDF's invoice gets the chain the invoice sent as XML gets: `pipeline.check.fr_ctc`)
        report = validate_xml(xml, fr_ctc.SPEC, request_id=request_id)
    except ApiError as err:
        if err.error_code == "RULES_NOT_INSTALLED":
            return result
        raise
    result.target_rules = report.judged_by(fr_ctc.SPEC)
    result.target_findings = [{"rules": result.target_rules, **i.to_dict()} for i in report.issues
                              if i.severity == ERROR]
    return result


# Why a target does not keep content of the source's syntax that EN 16931 has no term for (`fillers_for`), by the
# stylesheet parameter that writes it in that syntax; the contact departments are not kept in a ZUGFeRD PDF either.
# (English, German) each
_DEPARTMENT = {"UBL": ("UBL's contact has one name, the person's (BT-41, BT-56)",
                       "ein Kontakt hat in UBL nur einen Namen, den der Kontaktstelle (BT-41, BT-56)"),
               "ZUGFERD": ("the Factur-X rules of a ZUGFeRD PDF allow one contact name and count a department beside "
                           "the person as a second BT-41 (CII-SR-465)",
                           "die Factur-X-Regeln eines ZUGFeRD-PDFs erlauben einen Kontaktnamen und zählen eine "
                           "Abteilung neben der Person als zweite Kontaktstelle (BT-41, CII-SR-465)")}
_OTHER_ID = {"UBL": ("EN 16931 and UBL take one identifier of the buyer (BT-46, UBL-SR-16), the payee (BT-60, "
                     "UBL-SR-20) and the deliver-to location (BT-71): a GlobalID where there is one, its scheme says "
                     "what it is",
                     "EN 16931 und UBL nehmen nur eine Kennung des Käufers (BT-46, UBL-SR-16), des "
                     "Zahlungsempfängers (BT-60, UBL-SR-20) und des Lieferorts (BT-71) auf: eine GlobalID, wo es eine "
                     "gibt; ihr Schema sagt, was sie ist")}
_NOT_KEPT = {"seller-contact-department": _DEPARTMENT, "buyer-contact-department": _DEPARTMENT,
             "buyer-other-id": _OTHER_ID, "payee-other-id": _OTHER_ID, "ship-to-other-id": _OTHER_ID}


# A line hierarchy in a CII that is no Factur-X EXTENDED invoice (read-cii.xsl reads it there only)
_HIERARCHY_OUTSIDE_EXTENDED = re.compile(
    r"/ram:AssociatedDocumentLineDocument/ram:(ParentLineID|LineStatusReasonCode)$")
_NOT_EXTENDED = ("a line hierarchy (BT-X-304, BT-X-8) is Factur-X EXTENDED content, and this invoice is no EXTENDED "
                 "invoice: EN 16931 has none and counts each line as it stands (its CII binding says ParentLineID and "
                 "LineStatusReasonCode should not be present, CII-SR-036 / -038; XRechnung warns of a CII hierarchy, "
                 "BR-DEX-15)",
                 "eine Positionshierarchie (BT-X-304, BT-X-8) ist Inhalt von Factur-X EXTENDED, und diese Rechnung "
                 "ist keine EXTENDED-Rechnung: EN 16931 kennt keine und zählt jede Position, wie sie steht (ihre "
                 "CII-Bindung sagt, ParentLineID und LineStatusReasonCode sollen nicht vorkommen, CII-SR-036 / -038; "
                 "XRechnung warnt vor einer Positionshierarchie in CII, BR-DEX-15)")


def _why_lost(entry: dict, to: str) -> dict:
    """An unmapped content entry as a loss, with the reason where the source's syntax keeps it and the target not,
    or where the source's own rules say EN 16931 has no place for it (`reason`, and `reasonDe` in German)."""
    why = _NOT_KEPT.get(provenance.same_syntax_param(entry["xpath"]) or "", {}).get(to)
    if why is None and _HIERARCHY_OUTSIDE_EXTENDED.search(entry["xpath"]):
        why = _NOT_EXTENDED
    return {**entry, "reason": why[0], "reasonDe": why[1]} if why else entry


def _valid_but_for(report: Report, second: list[dict]) -> bool:
    """Valid, or valid but for the PDF's second invoice file (`second_invoices`), which the conversion leaves out."""
    return not report.errors and all(n.code == "FX_SECOND_INVOICE" and second for n in report.not_judged)


def _place(issue: Issue) -> tuple:
    return issue.code, issue.location.xpath if issue.location else None


def fillers_for(parsed: Parsed, to: str, profile: str | None = None) -> tuple[dict[str, str], list[dict], list[dict]]:
    """(stylesheet parameters writing the source's values that only its own syntax has a place for, the technical
    values the target has no place for, the content entries of `parsed.unmapped` those parameters write): syntax
    fillers (`provenance.FILLERS`) go to the same syntax (a ZUGFeRD PDF holds CII); content EN 16931 has no term for
    (`provenance.KEPT_IN_SYNTAX`) to CII, and into a ZUGFeRD PDF of a profile that is no subset (`profile`; a
    subset's XSD drops what no term carries, unsaid) but for a contact's department, which the Factur-X rules count as
    a second BT-41 (CII-SR-465). A place two values of the source map to keeps neither: each stays a loss."""
    same = _syntax(to) == parsed.source.syntax
    in_pdf = to == "ZUGFERD" and not (profile and profile_named(profile).subset)
    content = same and (to != "ZUGFERD" or in_pdf)
    places = {u["xpath"]: provenance.same_syntax_param(u["xpath"]) if same else None for u in parsed.unmapped}
    once = Counter(places.values())
    params, technical, kept = {}, [], []
    for u in parsed.unmapped:
        param = places[u["xpath"]]
        if u.get("technical"):
            if param is not None:
                params[param] = u["value"]
            else:
                technical.append(u)
        elif (param is not None and content and once[param] == 1
              and not (to == "ZUGFERD" and _NOT_KEPT.get(param) is _DEPARTMENT)):
            params[param] = u["value"]
            kept.append(u)
    return params, technical, kept


PEPPOL_IS_UBL = ("applies to the UBL target only: Peppol BIS Billing 3.0 is a UBL invoice (its CII rules are not "
                 "published as a compiled release); CII and a ZUGFeRD PDF are written on en16931 (a Peppol source's "
                 "default) or xrechnung")


def check_spec(to: str, spec: str | None) -> None:
    """400 naming request.spec for rules the target cannot be written on: an explicit spec decides, so it is never
    left aside (`peppol` with CII was refused naming config.syntax, a field the client never sent, and a ZUGFeRD PDF
    was written on EN 16931 without a word)."""
    if spec == "peppol" and to != "UBL":
        raise ApiError(400, "INVALID_INPUT", f"request.spec {spec} {PEPPOL_IS_UBL}.", [ErrorDetail(
            "INVALID_VALUE", f"{spec} {PEPPOL_IS_UBL}", field="request.spec", rejectedValue=spec)])


def convert(data: bytes, to: str, spec: str | None = None, profile: str | None = None, language: str | None = None,
            allow_loss: bool = False, request_id: str | None = None) -> Conversion:
    """An uploaded e-invoice -> the validated document in the target syntax. ApiError 400 (no e-invoice, bad
    parameters), 422 SOURCE_INVALID / SOURCE_NOT_CONVERTIBLE / CONVERSION_LOSS / VALIDATION_FAILED."""
    check_spec(to, spec)
    parsed = parse(data)
    if spec is None:  # the source's rules; Peppol is UBL: its content goes to CII (and ZUGFeRD's) as EN 16931
        # (an XRechnung extension of a release before 3.0 is read for xrechnung: `parse.config_for`)
        spec = "xrechnung" if names_xrechnung_extension(parsed.source.specification_id) else source_spec(parsed.source)
        spec = "en16931" if spec == "peppol" and to in ("CII", "ZUGFERD") else spec
    report, judged_on, findings = judge_source(parsed, spec, request_id)
    if report.verdict == INVALID and parsed.request is not None and _payments_explain(parsed, report):
        raise payments_refusal(parsed, to)  # (the EN 16931 rules judged an XRechnung extension source)
    if report.verdict == INVALID:  # one the rules could not judge is converted: what is written is validated
        raise _refusal("SOURCE_INVALID", f"The source document is not valid ({judged_on}); it is not converted.",
                       [_source_finding(parsed, i) for i in report.issues if i.severity == ERROR])
    second = second_invoices(parsed)
    if (to == "CII" and parsed.source.pdf is not None and spec == source_spec(parsed.source)
            and _valid_but_for(report, second) and (allow_loss or not second)):
        # the PDF's own XML, and its own faults (PDF/A-3, XMP) said as they are for any other target
        return held_in_france(parsed, Conversion(parsed.source.xml, "application/xml", losses=second,
                                                 judged_on=judged_on, source_findings=findings), request_id)
    if parsed.request is None:  # (fields only a JSON request must send are no reason: `model.API_REQUIRED`)
        blocking = _reading_problems(parsed)
        raise _refusal("SOURCE_NOT_CONVERTIBLE", "The source lacks values the invoice model requires or holds values "
                       "it refuses: " + ", ".join(dict.fromkeys(e.businessTerm or e.field or e.code for e in blocking)),
                       in_source_terms(parsed, blocking))
    # (before the request is made of the parsed invoice)
    cut = gross_cut(parsed, to, allow_loss) + further_preceding(parsed, to, allow_loss) + hierarchy_cut(
        parsed, to, allow_loss)
    capitals = vatex_in_capitals(parsed, to)
    request, endpoint = request_for(parsed, to, spec, profile, language)
    spec_id = (request["invoice"].get("processControl") or {}).get("specificationIdentifier")
    cut += sub_lines_cut(parsed, to, endpoint, spec_id, allow_loss)
    cut += payments_cut(parsed, to, endpoint, spec_id, allow_loss)
    cut += exemption_cut(parsed, request, endpoint, allow_loss)
    if cut and allow_loss:   # the request of the invoice without them
        request, endpoint = request_for(parsed, to, spec, profile, language)
    fillers, technical, kept = fillers_for(parsed, to, request["config"].get("profile"))
    # only content counts as loss, and not what the target syntax keeps in its place (`fillers_for`)
    lost = second + [_why_lost(u, to) for u in parsed.unmapped if not u.get("technical") and u not in kept]
    lost += cut
    if endpoint == "zugferd":
        _check_pdf_lines(parsed)
        lost += profile_cut(parsed, request["config"]["profile"], fillers)
    if lost and not allow_loss:
        subset = " (or a profile that carries them, EN16931)" if any("profile" in u.get("reason", "") for u in lost) \
            else ""
        raise _refusal("CONVERSION_LOSS", f"The target cannot carry {len(lost)} value(s) of the source; send "
                       f"request.allowLoss true to convert without them{subset}.", loss_details(lost))
    done = {"losses": lost, "changed": changed_for(parsed, request, endpoint) + capitals, "technical": technical,
            "judged_on": judged_on, "source_findings": findings}
    try:
        if endpoint == "zugferd":  # the model checked as for the XML targets: API_REQUIRED fields do not block
            pdf = generate_zugferd(dump_request(request), request_id, fillers=fillers,
                                   request=target_model(parsed, request, endpoint))
            result = Conversion(pdf, "application/pdf", **done)
        else:
            document, _ = write_validated(target_model(parsed, request, endpoint), parsed.written, endpoint,
                                          request_id, sent=lambda: request, fillers=fillers)
            result = Conversion(document, "application/xml", **done)
    except ApiError as err:
        if err.http_status == 422:  # the target's rules refuse it: said in the source's terms
            message = err.message.replace(GENERATED_FAILED, f"The converted document fails the {endpoint} rules ", 1)
            message = (f"Without the {len(lost)} source value(s) that allowLoss left out, "
                       f"{message[:1].lower()}{message[1:]}" if lost else message)
            raise ApiError(422, err.error_code, message,
                           in_source_terms(parsed, err.errors, to, err.error_code == "VALIDATION_FAILED")) from err
        fields = [e.field or "" for e in err.errors]
        if err.http_status != 400 or not fields or not all(f.startswith("invoice.") for f in fields):
            raise
        # the target syntax refuses a term the source has (e.g. several preceding invoices in CII)
        raise _refusal("CONVERSION_LOSS", _cannot_carry(err.errors, to, err.message),
                       in_source_terms(parsed, err.errors, to)) from err
    return held_in_france(parsed, result, request_id)
