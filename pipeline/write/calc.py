"""Derived amounts of an invoice, as EN 16931 defines them (pure functions, Decimal only).

AUTO (`config.calculationMode`, the default) fills in every derived amount the request leaves out, and never
overwrites one it sends: a sent line net amount, allowance/charge amount, VAT breakdown amount or document total is
kept as sent, and the amounts derived from it are computed from the sent value (BT-106 from the sent BT-131, BT-117
from a sent BT-116, BT-112 from a sent BT-109 and BT-110, ...). Contradicting sent amounts are left to the official
rules (422); where a kept amount differs from what AUTO would have computed, `kept` records both for that answer
(`pipeline.invoice.model.KeptAmount`). What AUTO computes where an amount is absent:
  line:      BT-147 price discount = gross price - net price where both are known and it is not sent;
             allowance/charge amount = round(base x percentage / 100, 2) where only percentage (+ base) is sent
             (base, also beside a sent amount, defaults to the line's quantity x price); net price = gross price where only gross is sent;
             BT-131 = round(quantity x net price / price base quantity, 2) - line allowances + line charges
  document:  allowance/charge amount from percentage x base (base defaults to the lines of its VAT category/rate);
             BT-106 = sum BT-131, BT-107 = sum BT-92, BT-108 = sum BT-99, BT-109 = BT-106 - BT-107 + BT-108
  VAT:       one breakdown per (category, rate): BT-116 = lines + charges - allowances of that category/rate,
             BT-117 = round(BT-116 x rate / 100, 2) per breakdown (BR-CO-17, BR-S-09), BT-110 = sum BT-117
             (BR-CO-14); category O groups regardless of rate (BR-O-05..07: no line rate) and O/E/AE/K/G/Z carry no tax
  totals:    BT-112 = BT-109 + BT-110 (BR-CO-15, in the invoice currency even when BT-6 differs: BT-111 is sent),
             BT-115 = BT-112 - BT-113 + BT-114 (BR-CO-16) + the third-party payments BT-DEX-002 (BR-DEX-09)
  XRechnung extension: a sub-invoice line's amounts as a line's; a line (or sub-line) with sub-lines: BT-131 = the
             sum of the BT-131 of the sub-lines directly below it (BR-DEX-02); sub-lines count in no total or VAT
             breakdown (the lines carry them)
Rounding is half-up to 2 decimals. Breakdowns sent with only category, rate and exemption reason are completed;
(category, rate) pairs used by lines or document allowances/charges but missing from vatBreakdowns are added; a sent
breakdown whose (category, rate) nothing has is left out when it sends no amount or only zeros, and kept (for the
rules to judge) when it sends a non-zero one.
MANUAL keeps every amount as sent and fills only BT-110 as the sum of the sent BT-117 values.
"""
from __future__ import annotations

from decimal import ROUND_HALF_UP, Context, Decimal, localcontext

from pipeline import budget
from pipeline.errors import invalid_input
from pipeline.invoice.model import (MAX_ERRORS, MAX_INTEGER_DIGITS, DocumentLevelAllowance,
                                    DocumentTotals, InvoiceLine, InvoiceRequest, KeptAmount, VatBreakdown, detail)

# Sums and products stay exact: the model bounds inputs to 15 integer and 10 fraction digits, so 100 digits
# hold any product, quotient to cents and sum over the lines (the default 28 would round or fail to quantize).
EXACT = Context(prec=100)
CENT = Decimal("0.01")
ZERO = Decimal("0.00")
HUNDRED = Decimal(100)
ZERO_RATE = Decimal(0)
NO_RATE_CATEGORIES = frozenset({"O"})          # BR-O-05/06/07: no VAT rate on lines, allowances, charges
ZERO_TAX_CATEGORIES = frozenset({"O", "E", "AE", "K", "G", "Z"})   # BR-*-09: tax amount is 0


def money(value: Decimal) -> Decimal:
    """Round half-up to two decimals (cents)."""
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def vat_key(category: str | None, rate: Decimal | None) -> tuple[str | None, Decimal | None]:
    """(category, rate) compared numerically (19 == 19.00); category O has no rate."""
    if category in NO_RATE_CATEGORIES or rate is None:
        return category, None
    return category, rate.normalize() + 0   # +0 turns -0 into 0


def percent_of(base: Decimal, percentage: Decimal) -> Decimal:
    return money(base * percentage / HUNDRED)


def tax_amount(category: str, rate: Decimal | None, taxable: Decimal) -> Decimal:
    """BT-117 of one breakdown, rounded per breakdown (BR-CO-17), 0 for the categories without tax."""
    if category in ZERO_TAX_CATEGORIES or rate is None:
        return ZERO
    return money(taxable * rate / HUNDRED)


def _keep(kept: dict | None, field: str, sent: Decimal | None, computed: Decimal | None,
          where: str | None = None) -> Decimal | None:
    """The sent amount when there is one, else the computed one. A sent amount that differs from the computed one is
    recorded in `kept` under its place in the written document (`where`, default `field`) for a 422's message."""
    if sent is None:
        return computed
    if kept is not None and computed is not None and sent != computed:
        kept[where or field] = KeptAmount(field, sent, computed)
    return sent


def _complete_allowance(item, default_base: Decimal | None, kept: dict | None = None, field: str = ""):
    """Fill the absent amount and base of an allowance/charge given by percentage (PEPPOL-EN16931-R041 wants the base
    beside a percentage); a sent amount or base stays."""
    if item.percentage is None:
        return item
    base = item.baseAmount if item.baseAmount is not None else default_base
    if base is None:
        return item
    amount = _keep(kept, f"{field}.amount", item.amount, percent_of(base, item.percentage))
    return item.model_copy(update={"baseAmount": base, "amount": amount})


def calculate_line(line: InvoiceLine, index: int = 0, kept: dict | None = None, path: str | None = None) -> InvoiceLine:
    """AUTO amounts of one line (or sub-invoice line at `path`): net price, allowance/charge amounts, BT-131, each
    where it is not sent, and the same for its sub-invoice lines (XRechnung extension BG-DEX-01). A line with
    sub-lines and no sent BT-131 gets the sum of the BT-131 of the sub-lines directly below it (BR-DEX-02)."""
    budget.check()  # each line of a request of any size
    path = path or f"invoice.invoiceLines[{index}]"
    subs = [calculate_line(sub, kept=kept, path=f"{path}.subInvoiceLines[{j}]")
            for j, sub in enumerate(line.subInvoiceLines or [])] or None
    price = line.priceDetails
    net_price = price.netPrice if price else None
    if price is not None and net_price is None and price.grossPrice is not None:
        net_price = price.grossPrice - (price.priceDiscount or ZERO)   # BT-146 = BT-148 - BT-147
        if net_price < 0:
            raise invalid_input("AUTO calculation gives a negative item net price.", [detail(
                "OUT_OF_RANGE", f"{path}.priceDetails.priceDiscount", "must not exceed grossPrice (BT-148): the item "
                "net price (BT-146 = gross price - price discount) cannot be negative (BR-27)", price.priceDiscount)])
        price = price.model_copy(update={"netPrice": net_price})
    if price is not None and price.priceDiscount is None and price.grossPrice is not None and net_price is not None:
        if price.grossPrice < net_price:  # the official rules pass a negative discount; it says nothing sensible
            raise invalid_input("AUTO calculation gives a negative item price discount.", [detail(
                "OUT_OF_RANGE", f"{path}.priceDetails.grossPrice", f"is below netPrice ({net_price}): the item price "
                "discount (BT-147 = gross price - net price) would be negative, and EN 16931 has no price "
                "surcharge; send the gross price before the discount, or no gross price", price.grossPrice)])
        price = price.model_copy(update={"priceDiscount": price.grossPrice - net_price})   # BT-147
    gross_amount = None
    if net_price is not None and line.quantity is not None:
        base_qty = price.priceBasisQuantity if price.priceBasisQuantity is not None else Decimal(1)
        if base_qty == 0:
            raise invalid_input("AUTO calculation divides the net price by the price base quantity.", [detail(
                "OUT_OF_RANGE", f"{path}.priceDetails.priceBasisQuantity", "must be greater than 0 in AUTO mode, "
                "which computes the line's gross amount as quantity x net price / base quantity; send calculationMode "
                "MANUAL with the amounts to keep 0", base_qty)])
        gross_amount = money(line.quantity * net_price / base_qty)
    allowances = [_complete_allowance(a, gross_amount, kept, f"{path}.invoiceLineAllowances[{j}]")
                  for j, a in enumerate(line.invoiceLineAllowances or [])] or None
    charges = [_complete_allowance(c, gross_amount, kept, f"{path}.invoiceLineCharges[{j}]")
               for j, c in enumerate(line.invoiceLineCharges or [])] or None
    computed = None
    if subs:
        computed = money(_sum(sub.netAmount for sub in subs))
    elif gross_amount is not None:
        computed = money(gross_amount - _sum(a.amount or ZERO for a in allowances or [])
                         + _sum(c.amount or ZERO for c in charges or []))
    net_amount = _keep(kept, f"{path}.netAmount", line.netAmount, computed)
    if net_amount is None:
        missing = "quantity" if line.quantity is None else "priceDetails.netPrice"
        raise invalid_input("AUTO calculation needs the line quantity and price.", [detail(
            "REQUIRED", f"{path}.{missing}",
            "is required to compute the line net amount (BT-131) in AUTO mode; send it, or send netAmount")])
    return line.model_copy(update={"priceDetails": price, "invoiceLineAllowances": allowances,
                                   "invoiceLineCharges": charges, "netAmount": net_amount, "subInvoiceLines": subs})


def _line_key(line: InvoiceLine):
    vat = line.lineVatInformation
    return vat_key(vat.vatCategoryCode, vat.vatRate) if vat else (None, None)


def _doc_key(item: DocumentLevelAllowance):
    return vat_key(item.vatCategoryCode, item.vatRate)


def calculate_breakdowns(lines: list[InvoiceLine], allowances: list, charges: list,
                         sent: list[VatBreakdown], kept: dict | None = None) -> list[VatBreakdown]:
    """BG-23 per (category, rate): sent breakdowns completed in their order (sent amounts kept, BT-117 computed from
    the sent BT-116 when only that is sent), missing ones appended. A sent breakdown whose category and rate no
    line, allowance or charge has and which sends no amount (or only zero amounts) describes nothing and is left out:
    the CEN UBL rules refuse it (BR-S-08 and its siblings require a line or allowance/charge at the rate), the CII
    rules do not, and one request must give the same invoice in both syntaxes; leaving it out changes no amount of
    the invoice. One that sends a non-zero amount is kept (leaving it out would drop a sent amount) and judged by the
    rules, which refuse it in both syntaxes."""
    taxable: dict = {}
    for line in lines:
        key = _line_key(line)
        taxable[key] = taxable.get(key, ZERO) + (line.netAmount or ZERO)
    for sign, items in ((-1, allowances), (1, charges)):
        for item in items:
            key = _doc_key(item)
            taxable[key] = taxable.get(key, ZERO) + sign * (item.amount or ZERO)
    out, seen = [], set()
    for i, b in enumerate(sent):
        key = vat_key(b.vatCategoryCode, b.vatCategoryRate)
        if key not in taxable and not b.vatCategoryTaxableAmount and not b.vatCategoryTaxAmount:
            continue    # describes nothing: no amount sent, or only zeros (leaving it out changes no amount)
        seen.add(key)
        field, where = f"invoice.vatBreakdowns[{i}]", f"invoice.vatBreakdowns[{len(out)}]"
        base = _keep(kept, f"{field}.vatCategoryTaxableAmount", b.vatCategoryTaxableAmount,
                     money(taxable.get(key, ZERO)), f"{where}.vatCategoryTaxableAmount")
        tax = _keep(kept, f"{field}.vatCategoryTaxAmount", b.vatCategoryTaxAmount, tax_amount(key[0], key[1], base),
                    f"{where}.vatCategoryTaxAmount")
        # an O breakdown sent without rate (BT-119 0..1) gets 0 as the ones AUTO adds do: XRechnung requires it
        # (BR-DE-14) and the EN 16931 rules accept 0 on O
        rate = b.vatCategoryRate if b.vatCategoryRate is not None or key[0] not in NO_RATE_CATEGORIES else ZERO_RATE
        out.append(b.model_copy(update={"vatCategoryRate": rate, "vatCategoryTaxableAmount": base,
                                        "vatCategoryTaxAmount": tax}))
    for key, amount in taxable.items():
        if key in seen or key[0] is None:
            continue
        base = money(amount)
        out.append(VatBreakdown.model_construct(   # computed values: range-checked by _out_of_range
            vatCategoryCode=key[0], vatCategoryRate=key[1] if key[1] is not None else ZERO_RATE,
            vatCategoryTaxableAmount=base, vatCategoryTaxAmount=tax_amount(key[0], key[1], base)))
    return out


def _sum(values) -> Decimal:
    return sum(values, ZERO)


def calculate_auto(req: InvoiceRequest, kept: dict | None = None) -> InvoiceRequest:
    """AUTO: every absent derived amount computed, every sent one kept; `kept` (when given) receives the sent amounts
    that differ from what AUTO computes from the others (document place -> KeptAmount)."""
    inv = req.invoice
    lines = [calculate_line(line, i, kept) for i, line in enumerate(inv.invoiceLines)]
    # A percentage-only document allowance/charge applies to the lines of its VAT category and rate (none: 0).
    line_base: dict = {}
    for line in lines:
        line_base[_line_key(line)] = line_base.get(_line_key(line), ZERO) + line.netAmount
    allowances = [_complete_allowance(a, line_base.get(_doc_key(a), ZERO), kept,
                                      f"invoice.documentLevelAllowances[{j}]")
                  for j, a in enumerate(inv.documentLevelAllowances or [])]
    charges = [_complete_allowance(c, line_base.get(_doc_key(c), ZERO), kept, f"invoice.documentLevelCharges[{j}]")
               for j, c in enumerate(inv.documentLevelCharges or [])]
    breakdowns = calculate_breakdowns(lines, allowances, charges, inv.vatBreakdowns, kept)

    sent = inv.documentTotals

    def total(name: str, computed: Decimal | None) -> Decimal | None:
        return _keep(kept, f"invoice.documentTotals.{name}", getattr(sent, name), computed)

    line_total = total("lineExtensionAmount", money(_sum(line.netAmount for line in lines)))
    # BT-107 / BT-108 only when there are allowances / charges (or sent): an absent total is not a zero one
    allowance_total = total("allowanceTotalAmount", money(_sum(a.amount or ZERO for a in allowances)))
    if not allowances and sent.allowanceTotalAmount is None:
        allowance_total = None
    charge_total = total("chargeTotalAmount", money(_sum(c.amount or ZERO for c in charges)))
    if not charges and sent.chargeTotalAmount is None:
        charge_total = None
    tax_exclusive = total("taxExclusiveAmount", money(line_total - (allowance_total or ZERO) + (charge_total or ZERO)))
    tax_total = total("taxTotalAmount", money(_sum(b.vatCategoryTaxAmount for b in breakdowns)))
    tax_inclusive = total("taxInclusiveAmount", money(tax_exclusive + tax_total))
    # third-party payments (XRechnung extension BG-DEX-09) are collected with the invoice: added (BR-DEX-09)
    third_party = _sum(p.amount for p in inv.thirdPartyPayments or [])
    payable = total("payableAmount", money(tax_inclusive - (sent.prepaidAmount or ZERO)
                                           + (sent.payableRoundingAmount or ZERO) + third_party))
    totals = DocumentTotals.model_construct(
        lineExtensionAmount=line_total, allowanceTotalAmount=allowance_total, chargeTotalAmount=charge_total,
        taxExclusiveAmount=tax_exclusive, taxInclusiveAmount=tax_inclusive,
        prepaidAmount=sent.prepaidAmount, payableRoundingAmount=sent.payableRoundingAmount,
        payableAmount=payable, taxTotalAmount=tax_total,
        taxTotalAmountInAccountingCurrency=sent.taxTotalAmountInAccountingCurrency,
    )
    invoice = inv.model_copy(update={
        "invoiceLines": lines, "documentLevelAllowances": allowances or None,
        "documentLevelCharges": charges or None, "vatBreakdowns": breakdowns, "documentTotals": totals})
    errors = _uncomputed_allowances(invoice)
    if errors:
        raise invalid_input("AUTO calculation needs an amount or a percentage of each allowance and charge.", errors)
    errors = _out_of_range(invoice)
    if errors:
        raise invalid_input("Computed amounts exceed the supported range.", errors)
    return req.model_copy(update={"invoice": invoice})


def _uncomputed_allowances(inv) -> list:
    """Allowances and charges AUTO found no amount for (neither amount nor percentage sent, or a percentage of a line
    without quantity and price): a 400 naming each, not a document with an empty amount the UBL schema refuses
    without a field path."""
    return [detail("REQUIRED", field, f"is required ({rule}): send the amount, or a percentage (with baseAmount "
                   "where the line has no quantity and price to apply it to) for AUTO to compute it")
            for value, field, rule in _amounts(inv) if value is None and field.endswith("].amount")][:MAX_ERRORS]


def _out_of_range(inv) -> list:
    """Computed amounts beyond the bound the model puts on sent ones (15 integer digits): a 400, not a 500."""
    return [detail("OUT_OF_RANGE", field, f"the computed amount has more than {MAX_INTEGER_DIGITS} integer digits "
                   "(check quantities, prices and percentages)", value)
            for value, field, _ in _amounts(inv)
            if value is not None and value != 0 and value.adjusted() >= MAX_INTEGER_DIGITS][:MAX_ERRORS]


def check_manual_amounts(req: InvoiceRequest) -> None:
    """A MANUAL request to generate from leaves out no amount EN 16931 requires: the syntaxes have no empty amount
    to write, and a 400 REQUIRED naming each says more than the XSD's refusal of an empty element. (A read invoice,
    MANUAL too, is written again as it is: its verdict is the rules'.)"""
    if req.config.calculationMode != "MANUAL":
        return
    unsent = _unsent_amounts(req.invoice)
    if unsent:
        raise invalid_input("calculationMode MANUAL computes no amounts: send every amount EN 16931 requires.", unsent)


def check_vat_accounting_total(req: InvoiceRequest) -> None:
    """A calculated request to generate from whose VAT accounting currency (BT-6) is the invoice currency: BT-6 and
    BT-111 are not written (they say nothing, and the rules refuse them), so a BT-111 that differs from the VAT
    total BT-110 is a contradiction to refuse (400), not a value to drop unsaid."""
    inv = req.invoice
    totals = inv.documentTotals
    sent, total = totals.taxTotalAmountInAccountingCurrency, totals.taxTotalAmount
    if inv.vatAccountingCurrencyCode == inv.currencyCode and None not in (sent, total) and sent != total:
        raise invalid_input("The VAT total in the accounting currency contradicts the VAT total.", [detail(
            "INVALID_VALUE", "invoice.documentTotals.taxTotalAmountInAccountingCurrency", f"differs from the VAT "
            f"total (BT-110, {total}) although vatAccountingCurrencyCode is the invoice currency "
            f"({inv.currencyCode}): leave out both, or send the accounting currency the amount is in", sent)])


def _unsent_amounts(inv) -> list:
    return [detail("REQUIRED", field, f"is required ({rule}): calculationMode MANUAL writes the amounts as sent and "
                   "computes none; send it, or use calculationMode AUTO, which computes it")
            for value, field, rule in _amounts(inv) if value is None and rule][:MAX_ERRORS]


# The document totals EN 16931 requires (BR-12..15); the others are 0..1.
_TOTALS = {"lineExtensionAmount": "BR-12", "allowanceTotalAmount": None, "chargeTotalAmount": None,
           "taxExclusiveAmount": "BR-13", "taxTotalAmount": None, "taxInclusiveAmount": "BR-14",
           "payableAmount": "BR-15"}


def _amounts(inv):
    """(amount, field path, the EN 16931 rule that requires it or None) of every amount of an invoice: lines (and
    sub-invoice lines) with their net price, allowances, charges, VAT breakdowns, totals."""
    def line_amounts(line, path, nested=False):
        yield line.netAmount, f"{path}.netAmount", "BR-24"
        # A line that only groups others (XRechnung sub-invoice lines, a Factur-X EXTENDED GROUP or INFORMATION
        # line) and a sub-invoice line may go without a price, as the official examples and real senders' do.
        grouping = line.subInvoiceLines or line.lineStatusReasonCode in ("GROUP", "INFORMATION")
        yield line.priceDetails.netPrice if line.priceDetails else None, f"{path}.priceDetails.netPrice", \
            None if nested or grouping else "BR-26"
        for kind, rule in (("invoiceLineAllowances", "BR-41"), ("invoiceLineCharges", "BR-43")):
            for j, item in enumerate(getattr(line, kind) or []):
                yield item.amount, f"{path}.{kind}[{j}].amount", rule
        for j, sub in enumerate(line.subInvoiceLines or []):
            yield from line_amounts(sub, f"{path}.subInvoiceLines[{j}]", nested=True)

    for i, line in enumerate(inv.invoiceLines):
        yield from line_amounts(line, f"invoice.invoiceLines[{i}]")
    for kind, rule in (("documentLevelAllowances", "BR-31"), ("documentLevelCharges", "BR-36")):
        for j, item in enumerate(getattr(inv, kind) or []):
            yield item.amount, f"invoice.{kind}[{j}].amount", rule
    for j, b in enumerate(inv.vatBreakdowns):
        yield b.vatCategoryTaxableAmount, f"invoice.vatBreakdowns[{j}].vatCategoryTaxableAmount", "BR-45"
        yield b.vatCategoryTaxAmount, f"invoice.vatBreakdowns[{j}].vatCategoryTaxAmount", "BR-46"
    for name, rule in _TOTALS.items():
        yield getattr(inv.documentTotals, name), f"invoice.documentTotals.{name}", rule


def calculate_manual(req: InvoiceRequest) -> InvoiceRequest:
    """Amounts as sent; only BT-110 is filled (sum of the sent BT-117) when every breakdown states its tax."""
    inv = req.invoice
    totals = inv.documentTotals
    taxes = [b.vatCategoryTaxAmount for b in inv.vatBreakdowns]
    if totals.taxTotalAmount is None and taxes and all(t is not None for t in taxes):
        totals = totals.model_copy(update={"taxTotalAmount": _sum(taxes)})
    return req.model_copy(update={"invoice": inv.model_copy(update={"documentTotals": totals})})


def calculate(req: InvoiceRequest, kept: dict | None = None) -> InvoiceRequest:
    """The request with its derived amounts, per `config.calculationMode` (a new model; the input is unchanged).
    `kept`, when given, receives the sent amounts AUTO kept where it would have computed another value (MANUAL:
    none), by their place in the written document, for the 422 of this request's document if the rules refuse it."""
    with localcontext(EXACT):
        if req.config.calculationMode == "MANUAL":
            return calculate_manual(req)
        return calculate_auto(req, kept)
