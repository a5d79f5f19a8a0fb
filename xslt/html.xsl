<?xml version="1.0" encoding="UTF-8"?>
<!--
  Canonical invoice XML (docs/canonical.md) -> the readable invoice page (HTML for WeasyPrint).

  Everything the invoice carries is shown. Labels, headings, footer strings and date/number formats follow
  $lang (en|de); the invoice's own content is printed as sent, never translated. Layout and page furniture
  are in templates/invoice.css; only the language-dependent @page strings are written here.
-->
<xsl:stylesheet version="3.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:xs="http://www.w3.org/2001/XMLSchema"
    xmlns:map="http://www.w3.org/2005/xpath-functions/map"
    xmlns:array="http://www.w3.org/2005/xpath-functions/array"
    xmlns:c="urn:einvoice-pipeline:canonical:1"
    xmlns:f="urn:einvoice-pipeline:functions"
    xpath-default-namespace="urn:einvoice-pipeline:canonical:1"
    exclude-result-prefixes="#all">

  <xsl:param name="lang" as="xs:string" select="'en'"/>
  <!-- Shown in the footer: the Factur-X profile of the embedded XML (e.g. "EN 16931"). -->
  <xsl:param name="profile" as="xs:string" select="''"/>
  <!-- The reading side (POST /v1/invoice/render), both JSON, empty = not shown:
       business-terms  {"invoice/seller/name": "BT-27 Seller name", ...} (canonical element path -> business term,
                       from the business-term table): a last section lists every value with its business term
       verdict         {"valid": bool, "verdict": "valid|invalid|indeterminate", "version": "...", "errors": n,
                       "warnings": n, "notJudged": [{"code", "message"}], "rules": ["label"], "failed": [{"code", "message",
                       "severity", "category", "line", "column"}], "meaning", "meaningAlso": [{"lang", "text"}]}
                       (a validation report, errors first): a box at the top with the verdict, what its worst class
                       means (in the page's language, then in the others), every finding -->
  <xsl:param name="business-terms" as="xs:string" select="''"/>
  <xsl:param name="verdict" as="xs:string" select="''"/>
  <!-- not-shown: JSON array of sentences, each naming a part of the upload the page leaves out (a PDF's second
       invoice file, FX_SECOND_INVOICE), in $lang: a box under the verdict, above the invoice it qualifies. -->
  <xsl:param name="not-shown" as="xs:string" select="''"/>

  <xsl:output method="html" html-version="5" encoding="UTF-8" indent="no"/>

  <xsl:decimal-format name="en" decimal-separator="." grouping-separator=","/>
  <xsl:decimal-format name="de" decimal-separator="," grouping-separator="."/>

  <!-- Engine-authored text, per language. -->
  <xsl:variable name="labels" as="map(xs:string, map(xs:string, xs:string))" select="map {
    'en': map {
      'page': 'Page', 'of': 'of', 'seller': 'Seller', 'buyer': 'Buyer', 'payee': 'Payee',
      'taxRep': 'Seller tax representative', 'delivery': 'Delivery', 'details': 'Invoice details',
      'invoiceNumber': 'Invoice number', 'issueDate': 'Issue date', 'dueDate': 'Due date',
      'taxPointDate': 'VAT point date', 'currency': 'Currency', 'vatCurrency': 'VAT accounting currency',
      'lineObject': 'Object',
      'period': 'Invoicing period', 'buyerReference': 'Buyer reference',
      'buyerReferenceLeitweg': 'Buyer reference (Leitweg-ID)', 'projectReference': 'Project',
      'contractReference': 'Contract', 'purchaseOrderReference': 'Purchase order', 'salesOrderReference': 'Sales order',
      'despatchAdviceReference': 'Despatch advice', 'receivingAdviceReference': 'Receiving advice',
      'tenderOrLotReference': 'Tender or lot', 'invoicedObjectIdentifier': 'Invoiced object',
      'precedingInvoice': 'Preceding invoice', 'dated': 'dated', 'subType': 'Invoice sub-type',
      'businessProcess': 'Business process', 'typeCode': 'Type code',
      'notes': 'Notes', 'lines': 'Invoice lines', 'pos': 'No.', 'item': 'Item', 'qty': 'Quantity',
      'price': 'Unit price', 'vat': 'VAT', 'amount': 'Net amount', 'grossPrice': 'Gross price',
      'priceBasis': 'Price basis quantity', 'priceDiscount': 'Price discount', 'sellersId': 'Seller item ID', 'buyersId': 'Buyer item ID',
      'standardId': 'Standard ID', 'classification': 'Classification', 'origin': 'Country of origin',
      'lineNote': 'Note', 'linePeriod': 'Period', 'orderLine': 'Order line', 'accounting': 'Buyer accounting ref.',
      'allowance': 'Allowance', 'charge': 'Charge', 'allowancesCharges': 'Document allowances and charges',
      'reason': 'Reason', 'base': 'Base amount', 'percentage': 'Percentage', 'rate': 'Rate',
      'vatBreakdown': 'VAT breakdown', 'category': 'Category', 'taxable': 'Taxable amount', 'taxAmount': 'VAT amount',
      'exemption': 'Exemption reason', 'totals': 'Totals', 'lineTotal': 'Sum of line net amounts',
      'allowanceTotal': 'Sum of allowances', 'chargeTotal': 'Sum of charges', 'taxExclusive': 'Total without VAT',
      'taxTotal': 'Total VAT', 'taxTotalAccounting': 'Total VAT in accounting currency',
      'taxInclusive': 'Total with VAT', 'prepaid': 'Paid amount',
      'rounding': 'Rounding amount', 'payable': 'Amount due for payment', 'payment': 'Payment',
      'means': 'Payment means', 'iban': 'Account (IBAN)', 'accountName': 'Account name', 'bic': 'Bank (BIC)',
      'remittance': 'Remittance information', 'terms': 'Payment terms', 'card': 'Payment card',
      'cardHolder': 'Card holder', 'directDebit': 'Direct debit', 'mandate': 'Mandate reference',
      'creditorId': 'Creditor ID', 'debtorAccount': 'Debited account', 'attachments': 'Supporting documents',
      'reference': 'Reference', 'description': 'Description', 'file': 'Attached file', 'location': 'External location',
      'name': 'Name', 'id': 'ID', 'legalId': 'Legal registration ID', 'vatId': 'VAT ID', 'taxId': 'Tax number',
      'eAddress': 'Electronic address', 'contact': 'Contact', 'phone': 'Phone', 'email': 'Email',
      'tradingName': 'Trading name', 'legalInfo': 'Additional legal information', 'deliveryDate': 'Delivery date',
      'deliveryParty': 'Deliver to', 'locationId': 'Location ID', 'profile': 'Factur-X profile',
      'totalVat': 'VAT', 'none': '-',
      'valid': 'Valid', 'invalid': 'Invalid', 'indeterminate': 'Indeterminate', 'notJudged': 'Not judged',
      'rulesApplied': 'Rules applied', 'errors': 'errors', 'warnings': 'warnings', 'rule': 'Rule',
      'error': 'error', 'warning': 'warning', 'lineColumn': 'Line:col.', 'class': 'Class',
      'line': 'Line', 'finding': 'Finding', 'businessTerms': 'Business terms', 'term': 'Business term',
      'value': 'Value',
      'subLines': 'Sub-lines', 'subLinesNote': 'part of the line above them, not added to the totals.',
      'thirdParty': 'Third-party payment', 'notShown': 'Not shown'
    },
    'de': map {
      'page': 'Seite', 'of': 'von', 'seller': 'Verkäufer', 'buyer': 'Käufer', 'payee': 'Zahlungsempfänger',
      'taxRep': 'Steuerlicher Vertreter des Verkäufers', 'delivery': 'Lieferung', 'details': 'Rechnungsangaben',
      'invoiceNumber': 'Rechnungsnummer', 'issueDate': 'Rechnungsdatum', 'dueDate': 'Fälligkeitsdatum',
      'taxPointDate': 'Steuerdatum', 'currency': 'Währung', 'vatCurrency': 'Steuerwährung', 'lineObject': 'Objekt',
      'period': 'Abrechnungszeitraum', 'buyerReference': 'Käuferreferenz',
      'buyerReferenceLeitweg': 'Käuferreferenz (Leitweg-ID)', 'projectReference': 'Projekt',
      'contractReference': 'Vertrag', 'purchaseOrderReference': 'Bestellung', 'salesOrderReference': 'Auftrag',
      'despatchAdviceReference': 'Versandanzeige', 'receivingAdviceReference': 'Wareneingangsmeldung',
      'tenderOrLotReference': 'Vergabe / Los', 'invoicedObjectIdentifier': 'Abgerechnetes Objekt',
      'precedingInvoice': 'Vorausgegangene Rechnung', 'dated': 'vom', 'subType': 'Rechnungsunterart',
      'businessProcess': 'Geschäftsprozess', 'typeCode': 'Rechnungsart',
      'notes': 'Bemerkungen', 'lines': 'Rechnungspositionen', 'pos': 'Pos.', 'item': 'Artikel', 'qty': 'Menge',
      'price': 'Einzelpreis', 'vat': 'USt.', 'amount': 'Nettobetrag', 'grossPrice': 'Bruttopreis',
      'priceBasis': 'Preisbasismenge', 'priceDiscount': 'Preisnachlass', 'sellersId': 'Artikelnr. Verkäufer', 'buyersId': 'Artikelnr. Käufer',
      'standardId': 'Standardkennung', 'classification': 'Klassifizierung', 'origin': 'Ursprungsland',
      'lineNote': 'Bemerkung', 'linePeriod': 'Zeitraum', 'orderLine': 'Bestellposition', 'accounting': 'Kontierung Käufer',
      'allowance': 'Abschlag', 'charge': 'Zuschlag', 'allowancesCharges': 'Abschläge und Zuschläge auf Belegebene',
      'reason': 'Grund', 'base': 'Basisbetrag', 'percentage': 'Prozentsatz', 'rate': 'Satz',
      'vatBreakdown': 'Umsatzsteuer-Aufschlüsselung', 'category': 'Kategorie', 'taxable': 'Bemessungs&#xAD;grundlage',
      'taxAmount': 'Steuerbetrag', 'exemption': 'Befreiungsgrund', 'totals': 'Summen',
      'lineTotal': 'Summe der Positionen', 'allowanceTotal': 'Summe der Abschläge', 'chargeTotal': 'Summe der Zuschläge',
      'taxExclusive': 'Gesamtbetrag ohne USt.', 'taxTotal': 'Umsatzsteuer gesamt',
      'taxTotalAccounting': 'Umsatzsteuer in Steuerwährung', 'taxInclusive': 'Gesamtbetrag mit USt.',
      'prepaid': 'Bereits gezahlt', 'rounding': 'Rundungsbetrag', 'payable': 'Zahlbetrag', 'payment': 'Zahlung',
      'means': 'Zahlungsart', 'iban': 'Konto (IBAN)', 'accountName': 'Kontoinhaber', 'bic': 'Bank (BIC)',
      'remittance': 'Verwendungszweck', 'terms': 'Zahlungsbedingungen', 'card': 'Zahlungskarte',
      'cardHolder': 'Karteninhaber', 'directDebit': 'Lastschrift', 'mandate': 'Mandatsreferenz',
      'creditorId': 'Gläubiger-ID', 'debtorAccount': 'Belastetes Konto', 'attachments': 'Rechnungsbegründende Unterlagen',
      'reference': 'Kennung', 'description': 'Beschreibung', 'file': 'Angehängte Datei', 'location': 'Externer Speicherort',
      'name': 'Name', 'id': 'Kennung', 'legalId': 'Registernummer', 'vatId': 'USt-IdNr.', 'taxId': 'Steuernummer',
      'eAddress': 'Elektronische Adresse', 'contact': 'Kontakt', 'phone': 'Telefon', 'email': 'E-Mail',
      'tradingName': 'Handelsname', 'legalInfo': 'Weitere rechtliche Informationen', 'deliveryDate': 'Lieferdatum',
      'deliveryParty': 'Lieferung an', 'locationId': 'Lieferort-ID', 'profile': 'Factur-X-Profil',
      'totalVat': 'USt.', 'none': '-',
      'valid': 'Gültig', 'invalid': 'Ungültig', 'indeterminate': 'Nicht beurteilbar', 'notJudged': 'Nicht beurteilt',
      'rulesApplied': 'Angewandte Regeln', 'errors': 'Fehler', 'warnings': 'Warnungen', 'rule': 'Regel',
      'error': 'Fehler', 'warning': 'Warnung', 'lineColumn': 'Zeile:Sp.', 'class': 'Klasse',
      'line': 'Zeile', 'finding': 'Befund', 'businessTerms': 'Geschäftsbegriffe', 'term': 'Geschäftsbegriff',
      'value': 'Wert',
      'subLines': 'Unterpositionen', 'subLinesNote': 'Teil der Position darüber, nicht in den Summen enthalten.',
      'thirdParty': 'Fremdforderung', 'notShown': 'Nicht gezeigt'
    }
  }"/>
  <xsl:variable name="L" select="$labels($lang)"/>

  <!-- Code meanings (UNTDID 1001, 4461, 5305) in the engine's language; the code itself is always shown too. -->
  <xsl:variable name="codes" select="map {
    'en': map {
      'type:380': 'Invoice', 'type:381': 'Credit note', 'type:384': 'Corrected invoice', 'type:389': 'Self-billed invoice',
      'type:326': 'Partial invoice', 'type:386': 'Prepayment invoice', 'type:875': 'Partial construction invoice',
      'type:876': 'Partial final construction invoice', 'type:877': 'Final construction invoice',
      'type:261': 'Self-billed credit note', 'type:383': 'Debit note',
      'means:1': 'Not defined', 'means:10': 'Cash', 'means:20': 'Cheque', 'means:30': 'Credit transfer',
      'means:31': 'Debit transfer', 'means:42': 'Payment to bank account', 'means:48': 'Bank card',
      'means:49': 'Direct debit', 'means:54': 'Credit card', 'means:55': 'Debit card', 'means:57': 'Standing agreement',
      'means:58': 'SEPA credit transfer', 'means:59': 'SEPA direct debit', 'means:97': 'Clearing between partners',
      'vat:S': 'Standard rate', 'vat:Z': 'Zero rated', 'vat:E': 'Exempt', 'vat:AE': 'Reverse charge',
      'vat:K': 'Intra-community supply', 'vat:G': 'Export outside the EU', 'vat:O': 'Not subject to VAT',
      'vat:L': 'Canary Islands IGIC', 'vat:M': 'Ceuta and Melilla IPSI',
      'taxPoint:3': 'Invoice issue date', 'taxPoint:35': 'Delivery date', 'taxPoint:432': 'Payment date'
    },
    'de': map {
      'type:380': 'Rechnung', 'type:381': 'Gutschrift', 'type:384': 'Rechnungskorrektur', 'type:389': 'Gutschrift (Selbstfakturierung)',
      'type:326': 'Teilrechnung', 'type:386': 'Vorauszahlungsrechnung', 'type:875': 'Abschlagsrechnung (Bau)',
      'type:876': 'Teilschlussrechnung (Bau)', 'type:877': 'Schlussrechnung (Bau)',
      'type:261': 'Selbstfakturierte Gutschrift', 'type:383': 'Belastungsanzeige',
      'means:1': 'Nicht definiert', 'means:10': 'Bar', 'means:20': 'Scheck', 'means:30': 'Überweisung',
      'means:31': 'Auslandsüberweisung', 'means:42': 'Zahlung auf Bankkonto', 'means:48': 'Bankkarte',
      'means:49': 'Lastschrift', 'means:54': 'Kreditkarte', 'means:55': 'Debitkarte', 'means:57': 'Dauerauftrag',
      'means:58': 'SEPA-Überweisung', 'means:59': 'SEPA-Lastschrift', 'means:97': 'Verrechnung',
      'vat:S': 'Normalsatz', 'vat:Z': 'Nullsatz', 'vat:E': 'Steuerbefreit', 'vat:AE': 'Umkehrung der Steuerschuldnerschaft',
      'vat:K': 'Innergemeinschaftliche Lieferung', 'vat:G': 'Ausfuhr außerhalb der EU', 'vat:O': 'Nicht steuerbar',
      'vat:L': 'IGIC (Kanaren)', 'vat:M': 'IPSI (Ceuta und Melilla)',
      'taxPoint:3': 'Rechnungsdatum', 'taxPoint:35': 'Lieferdatum', 'taxPoint:432': 'Zahlungsdatum'
    }
  }($lang)"/>

  <xsl:function name="f:l" as="xs:string">
    <xsl:param name="key" as="xs:string"/>
    <xsl:sequence select="($L($key), $key)[1]"/>
  </xsl:function>

  <xsl:function name="f:code" as="xs:string">
    <xsl:param name="kind" as="xs:string"/>
    <xsl:param name="code" as="xs:string?"/>
    <xsl:variable name="text" select="$codes($kind || ':' || $code)"/>
    <xsl:sequence select="if (exists($text)) then $text || ' (' || $code || ')' else string($code)"/>
  </xsl:function>

  <!-- Dates: en "1 March 2024", de "01.03.2024"; a time zone the document gives the date is shown as written after
       it ("4 April 2016 +01:00"). -->
  <xsl:function name="f:date" as="xs:string">
    <xsl:param name="d" as="xs:string?"/>
    <xsl:sequence select="if (not($d castable as xs:date)) then string($d)
        else string-join(((if ($lang = 'de') then format-date(xs:date($d), '[D01].[M01].[Y0001]')
                           else format-date(xs:date($d), '[D] [MNn] [Y0001]', 'en', (), ())),
                          substring(normalize-space($d), 11)[. ne '']), ' ')"/>
  </xsl:function>

  <!-- format-number pictures use the separators of the language's decimal format. -->
  <xsl:variable name="pictures" select="if ($lang = 'de') then map { 'amount': '#.##0,00', 'num': '#.##0,##########', 'price': '#.##0,00########' }
                                        else map { 'amount': '#,##0.00', 'num': '#,##0.##########', 'price': '#,##0.00########' }"/>
  <!-- Amounts with two decimals; quantities, prices and rates with the digits they carry. -->
  <xsl:function name="f:amount" as="xs:string">
    <xsl:param name="v" as="xs:string?"/>
    <xsl:sequence select="if ($v castable as xs:decimal) then format-number(xs:decimal($v), $pictures('amount'), $lang) else string($v)"/>
  </xsl:function>
  <xsl:function name="f:num" as="xs:string">
    <xsl:param name="v" as="xs:string?"/>
    <xsl:sequence select="if ($v castable as xs:decimal) then format-number(xs:decimal($v), $pictures('num'), $lang) else string($v)"/>
  </xsl:function>
  <xsl:function name="f:price" as="xs:string">
    <xsl:param name="v" as="xs:string?"/>
    <xsl:sequence select="if ($v castable as xs:decimal) then format-number(xs:decimal($v), $pictures('price'), $lang) else string($v)"/>
  </xsl:function>
  <xsl:function name="f:money" as="xs:string">
    <xsl:param name="v" as="xs:string?"/>
    <xsl:sequence select="f:amount($v) || ' ' || $currency"/>
  </xsl:function>
  <xsl:function name="f:percent" as="xs:string">
    <xsl:param name="v" as="xs:string?"/>
    <xsl:sequence select="f:num($v) || ' %'"/>
  </xsl:function>

  <!-- IBAN-like identifiers in groups of four; anything else as sent. In the page's own font: a monospaced one was a
       third font for the PDF to embed and its PDF/A gate to check (10 lines: ~7 % of the gate). -->
  <xsl:function name="f:account" as="xs:string">
    <xsl:param name="v" as="xs:string?"/>  <!-- empty for a received invoice without the account -->
    <xsl:variable name="s" select="replace(string($v), '\s', '')"/>
    <xsl:sequence select="if (matches($s, '^[A-Z]{2}[0-9]{2}[A-Z0-9]{8,30}$'))
        then string-join(for $i in 0 to (string-length($s) - 1) idiv 4 return substring($s, $i * 4 + 1, 4), ' ')
        else string($v)"/>
  </xsl:function>

  <xsl:variable name="inv" select="/invoice"/>
  <xsl:variable name="currency" select="string(/invoice/currencyCode)"/>

  <xsl:template match="/">
    <html lang="{$lang}">
      <head>
        <meta charset="utf-8"/>
        <title><xsl:value-of select="f:code('type', invoice/invoiceTypeCode) || ' ' || invoice/invoiceNumber"/></title>
        <style>
          @page { @bottom-right { content: "<xsl:value-of select="f:l('page')"/> " counter(page) " <xsl:value-of select="f:l('of')"/> " counter(pages); } }
        </style>
      </head>
      <body>
        <xsl:apply-templates select="invoice"/>
      </body>
    </html>
  </xsl:template>

  <xsl:template match="invoice">
    <xsl:if test="$verdict">
      <xsl:call-template name="verdict">
        <xsl:with-param name="report" select="parse-json($verdict)"/>
      </xsl:call-template>
    </xsl:if>
    <xsl:variable name="left-out" select="if ($not-shown) then parse-json($not-shown)?* else ()"/>
    <xsl:if test="exists($left-out)">
      <section class="notice not-shown">
        <div class="verdict-line"><strong><xsl:value-of select="f:l('notShown')"/></strong></div>
        <xsl:for-each select="$left-out">
          <div class="verdict-meaning"><xsl:value-of select="."/></div>
        </xsl:for-each>
      </section>
    </xsl:if>
    <header class="top">
      <div class="brand"><xsl:value-of select="seller/name"/></div>
      <div class="title">
        <h1><xsl:value-of select="($codes('type:' || invoiceTypeCode), invoiceTypeCode)[1]"/></h1>
        <div class="docno"><xsl:value-of select="invoiceNumber"/></div>
        <div class="footer-line"><xsl:value-of select="string-join((seller/name, invoiceNumber, f:date(issueDate),
            if ($profile) then f:l('profile') || ' ' || $profile else ()), ' · ')"/></div>
      </div>
    </header>

    <section class="parties">
      <xsl:apply-templates select="seller"/>
      <xsl:apply-templates select="buyer"/>
    </section>

    <section class="facts">
      <h2><xsl:value-of select="f:l('details')"/></h2>
      <dl class="grid">
        <xsl:sequence select="f:fact('invoiceNumber', invoiceNumber)"/>
        <xsl:sequence select="f:fact('issueDate', f:date(issueDate))"/>
        <xsl:sequence select="f:fact('typeCode', f:code('type', invoiceTypeCode))"/>
        <xsl:sequence select="f:fact('payable', documentTotals/payableAmount ! f:money(.))"/>
        <xsl:sequence select="f:fact('dueDate', paymentDueDate ! f:date(.))"/>
        <xsl:sequence select="f:fact('taxPointDate', valueAddedTaxPointDate ! f:date(.))"/>
        <!-- BT-7 or BT-8 (BR-CO-03: never both) -->
        <xsl:sequence select="f:fact('taxPointDate', valueAddedTaxPointDateCode ! f:code('taxPoint', .))"/>
        <xsl:sequence select="f:fact('currency', currencyCode)"/>
        <xsl:sequence select="f:fact('vatCurrency', vatAccountingCurrencyCode)"/>
        <xsl:sequence select="f:fact('period', invoicingPeriod ! f:period(.))"/>
        <xsl:sequence select="f:fact('subType', invoiceSubType)"/>
        <!-- BT-10 is a German public buyer's Leitweg-ID only where it has that form (a Land's 01-16 or the Bund's 99,
             coarse and fine address, two check digits: pipeline.check.content's test); a French or Peppol buyer's
             reference was labelled a Leitweg-ID too -->
        <xsl:sequence select="f:fact(if (matches(buyerReference, '^(0[1-9]|1[0-6]|99)[0-9]{0,10}(-[0-9A-Za-z]{0,30})?-[0-9]{2}$'))
                                     then 'buyerReferenceLeitweg' else 'buyerReference', buyerReference)"/>
        <xsl:for-each select="projectReference, contractReference, purchaseOrderReference,
                              salesOrderReference, despatchAdviceReference, receivingAdviceReference,
                              tenderOrLotReference">
          <xsl:sequence select="f:fact(local-name(), .)"/>
        </xsl:for-each>
        <xsl:sequence select="f:fact('invoicedObjectIdentifier', invoicedObjectIdentifier ! f:with-scheme(., ../invoicedObjectIdentifierSchemeId))"/>
        <xsl:sequence select="f:fact('accounting', buyerAccountingReference)"/>
        <xsl:sequence select="f:fact('precedingInvoice', (precedingInvoiceReference, additionalPrecedingInvoiceReference) ! string-join((documentReference,
            issueDate ! (f:l('dated') || ' ' || f:date(.))), ' '))"/>
        <xsl:sequence select="f:fact('businessProcess', processControl/businessProcessType)"/>
        <xsl:sequence select="f:fact('deliveryDate', deliveryInformation/actualDeliveryDate ! f:date(.))"/>
      </dl>
    </section>

    <xsl:if test="invoiceNote">
      <section class="notes">
        <h2><xsl:value-of select="f:l('notes')"/></h2>
        <xsl:for-each select="invoiceNote, additionalInvoiceNote/invoiceNote">
          <p class="note">
            <xsl:if test="../invoiceNoteSubjectCode"><span class="code"><xsl:value-of select="../invoiceNoteSubjectCode"/></span><xsl:text> </xsl:text></xsl:if>
            <xsl:value-of select="."/>
          </p>
        </xsl:for-each>
      </section>
    </xsl:if>

    <xsl:if test="payee or sellerTaxRepresentativeParty or deliveryInformation[partyName or locationIdentifier or address]">
      <section class="parties others">
        <xsl:apply-templates select="payee, sellerTaxRepresentativeParty, deliveryInformation[partyName or locationIdentifier or address]"/>
      </section>
    </xsl:if>

    <xsl:call-template name="lines"/>
    <xsl:call-template name="document-allowances-charges"/>

    <section class="summary">
      <xsl:call-template name="vat-breakdown"/>
      <xsl:apply-templates select="documentTotals"/>
    </section>

    <xsl:apply-templates select="paymentInstructions"/>
    <xsl:call-template name="attachments"/>
    <xsl:if test="$business-terms">
      <xsl:call-template name="business-terms">
        <xsl:with-param name="terms" select="parse-json($business-terms)"/>
      </xsl:call-template>
    </xsl:if>
  </xsl:template>

  <!-- One labelled fact (dt/dd) when there is a value. -->
  <xsl:function name="f:fact">
    <xsl:param name="key" as="xs:string"/>
    <xsl:param name="value" as="item()*"/>
    <xsl:if test="exists($value) and normalize-space(string-join($value ! string(.), ''))">
      <div class="fact"><dt><xsl:value-of select="f:l($key)"/></dt><dd><xsl:value-of select="$value" separator=", "/></dd></div>
    </xsl:if>
  </xsl:function>

  <xsl:function name="f:period" as="xs:string">
    <xsl:param name="p" as="element()"/>
    <xsl:sequence select="string-join(($p/startDate ! f:date(.), $p/endDate ! f:date(.)), ' – ')"/>
  </xsl:function>

  <!-- Parties -->
  <xsl:template match="seller | buyer | payee | sellerTaxRepresentativeParty | deliveryInformation">
    <xsl:variable name="key" select="map { 'seller': 'seller', 'buyer': 'buyer', 'payee': 'payee',
        'sellerTaxRepresentativeParty': 'taxRep', 'deliveryInformation': 'delivery' }(local-name())"/>
    <div class="party {local-name()}">
      <h2><xsl:value-of select="f:l($key)"/></h2>
      <div class="party-name"><xsl:value-of select="(name, partyName)[1]"/></div>
      <xsl:for-each select="tradingName"><div><xsl:value-of select="."/></div></xsl:for-each>
      <xsl:apply-templates select="postalAddress | address"/>
      <dl class="ids">
        <xsl:sequence select="f:fact('id', (identifier, additionalIdentifier/identifier) ! f:with-scheme(., ../identifierSchemeId))"/>
        <xsl:sequence select="f:fact('locationId', locationIdentifier ! f:with-scheme(., ../locationIdentifierSchemeId))"/>
        <xsl:sequence select="f:fact('legalId', legalRegistrationIdentifier ! f:with-scheme(., ../legalRegistrationIdentifierSchemeId))"/>
        <xsl:sequence select="f:fact('vatId', vatIdentifier)"/>
        <xsl:sequence select="f:fact('taxId', taxRegistrationIdentifier)"/>
        <xsl:sequence select="f:fact('eAddress', electronicAddress ! f:with-scheme(., ../electronicAddressSchemeId))"/>
        <xsl:sequence select="f:fact('contact', contact/contactPoint)"/>
        <xsl:sequence select="f:fact('phone', contact/telephone)"/>
        <xsl:sequence select="f:fact('email', contact/email)"/>
        <xsl:sequence select="f:fact('legalInfo', additionalLegalInformation)"/>
      </dl>
    </div>
  </xsl:template>

  <xsl:function name="f:with-scheme" as="xs:string">
    <xsl:param name="value" as="xs:string"/>
    <xsl:param name="scheme" as="xs:string?"/>
    <xsl:sequence select="if ($scheme) then $value || ' (' || $scheme || ')' else $value"/>
  </xsl:function>

  <xsl:template match="postalAddress | address">
    <!-- one element, a line each (white-space: pre-line): a div per line was a box per line for WeasyPrint -->
    <div class="address"><xsl:value-of select="(addressLine1, addressLine2, addressLine3, string-join((postcode, city), ' '),
        string-join((countrySubdivision, countryCode), ', '))[normalize-space()] ! normalize-space()" separator="&#10;"/></div>
  </xsl:template>

  <!-- Lines: one row per line, details and line allowances/charges under it; the header repeats on every page. -->
  <xsl:template name="lines">
    <section class="lines">
      <h2><xsl:value-of select="f:l('lines')"/></h2>
      <!-- The No. column as wide as the longest line id needs (up to ~12 characters a row): 9 mm took "1"-"999"
           and wrapped longer ids a letter a row. -->
      <xsl:variable name="id-length" select="max((0, invoiceLine/lineIdentifier/string-length(normalize-space())))"/>
      <table class="lines{if ($id-length gt 7) then ' ids-long' else if ($id-length gt 3) then ' ids-medium' else ''}">
        <thead>
          <tr>
            <th class="pos"><xsl:value-of select="f:l('pos')"/></th>
            <th class="item"><xsl:value-of select="f:l('item')"/></th>
            <th class="num qty"><xsl:value-of select="f:l('qty')"/></th>
            <th class="num"><xsl:value-of select="f:l('price')"/></th>
            <th class="num vat"><xsl:value-of select="f:l('vat')"/></th>
            <th class="num amount"><xsl:value-of select="f:l('amount') || ' (' || $currency || ')'"/></th>
          </tr>
        </thead>
        <xsl:apply-templates select="invoiceLine"/>
      </table>
      <xsl:if test="invoiceLine/subInvoiceLine">
        <p class="sub-note"><xsl:value-of select="'↳ ' || f:l('subLines') || ($business-terms[.] ! ' (BG-DEX-01)') || ': '
            || f:l('subLinesNote')"/></p>
      </xsl:if>
    </section>
  </xsl:template>

  <!-- A line, then its sub-lines (BG-DEX-01, XRechnung extension) under it, one step further in per level. A sub-line
       shows what a line shows, its number beside its name (the No. column is too narrow for "3.10.160."), and is
       part of the line above it: it counts in no total (BR-DEX-02: its line carries its amount). -->
  <xsl:template match="invoiceLine | subInvoiceLine">
    <xsl:param name="level" as="xs:integer" select="0"/>
    <tbody class="{if ($level eq 0) then 'line' else 'line sub level-' || $level}">
      <tr class="main">
        <td class="pos"><xsl:if test="$level eq 0"><xsl:value-of select="lineIdentifier"/></xsl:if></td>
        <td class="item">
          <div class="item-name">
            <xsl:if test="$level gt 0"><span class="sub-id">↳ <xsl:value-of select="lineIdentifier"/></span><xsl:text> </xsl:text></xsl:if>
            <xsl:value-of select="itemInformation/name"/>
          </div>
          <xsl:for-each select="itemInformation/description"><div class="item-desc"><xsl:value-of select="."/></div></xsl:for-each>
          <xsl:variable name="facts" as="element()*">
            <xsl:variable name="i" select="itemInformation"/>
            <xsl:sequence select="f:fact('sellersId', $i/sellersIdentifier)"/>
            <xsl:sequence select="f:fact('buyersId', $i/buyersIdentifier)"/>
            <xsl:sequence select="f:fact('standardId', $i/standardIdentifier ! f:with-scheme(., ../standardIdentifierSchemeId))"/>
            <xsl:sequence select="f:fact('classification', $i/(classifiedIdentifier, additionalClassifiedIdentifier/classifiedIdentifier) ! string-join((.,
                ../classifiedIdentifierSchemeId ! ('(' || . || (../classifiedIdentifierVersion ! (' ' || .)) || ')')), ' '))"/>
            <xsl:sequence select="f:fact('origin', $i/countryOfOrigin)"/>
            <xsl:for-each select="$i/itemAttribute">
              <div class="fact"><dt><xsl:value-of select="name"/></dt><dd><xsl:value-of select="value"/></dd></div>
            </xsl:for-each>
            <xsl:sequence select="f:fact('grossPrice', priceDetails/grossPrice ! f:price(.))"/>
            <xsl:sequence select="f:fact('priceDiscount', priceDetails/priceDiscount ! f:price(.))"/>
            <xsl:sequence select="f:fact('priceBasis', priceDetails/priceBasisQuantity ! string-join((f:num(.), ../basisUnitCode), ' '))"/>
            <xsl:sequence select="f:fact('linePeriod', invoiceLinePeriod ! f:period(.))"/>
            <xsl:sequence select="f:fact('orderLine', referencedPurchaseOrderLine)"/>
            <xsl:sequence select="f:fact('lineObject', objectIdentifier ! f:with-scheme(., ../objectIdentifierSchemeId))"/>
            <xsl:sequence select="f:fact('accounting', buyerAccountingReference)"/>
            <xsl:sequence select="f:fact('lineNote', note)"/>
          </xsl:variable>
          <xsl:if test="exists($facts)">
            <!-- one text, no element per label: each was an inline box of its own on WeasyPrint's lines -->
            <div class="line-facts"><xsl:value-of select="string-join($facts ! (*:dt || ': ' || *:dd), ' · ')"/></div>
          </xsl:if>
        </td>
        <!-- the unit code beside its quantity ("3 HUR"): a column of its own was a cell more on every row -->
        <td class="num qty"><xsl:value-of select="string-join((quantity ! f:num(.), unitCode), ' ')"/></td>
        <td class="num"><xsl:value-of select="priceDetails/netPrice ! f:price(.)"/></td>
        <td class="num"><xsl:value-of select="lineVatInformation ! string-join((vatCategoryCode, vatRate ! f:percent(.)), ' ')"/></td>
        <td class="num amount"><xsl:value-of select="netAmount ! f:amount(.)"/></td>
      </tr>
      <xsl:for-each select="invoiceLineAllowance, invoiceLineCharge">
        <tr class="ac">
          <td/>
          <td class="item" colspan="4">
            <!-- a sub-line's allowance or charge starts under its number, past the arrow, to read as its own -->
            <xsl:choose>
              <xsl:when test="$level gt 0"><div class="sub-ac"><xsl:sequence select="f:ac-text(.)"/></div></xsl:when>
              <xsl:otherwise><xsl:sequence select="f:ac-text(.)"/></xsl:otherwise>
            </xsl:choose>
          </td>
          <td class="num"><xsl:value-of select="(if (self::invoiceLineAllowance) then '−' else '+') || f:amount(amount)"/></td>
        </tr>
      </xsl:for-each>
    </tbody>
    <xsl:apply-templates select="subInvoiceLine">
      <xsl:with-param name="level" select="$level + 1"/>
    </xsl:apply-templates>
  </xsl:template>

  <!-- "Allowance: reason (code) · 10 % of 100.00" -->
  <xsl:function name="f:ac-text" as="xs:string">
    <xsl:param name="ac" as="element()"/>
    <xsl:sequence select="string-join((
        f:l(if (ends-with(local-name($ac), 'Allowance')) then 'allowance' else 'charge') || ':',
        string-join(($ac/reason, $ac/reasonCode ! ('(' || . || ')')), ' '),
        if ($ac/percentage) then '· ' || f:percent($ac/percentage) || ($ac/baseAmount ! (' × ' || f:amount(.))) else ()
      ), ' ')"/>
  </xsl:function>

  <xsl:template name="document-allowances-charges">
    <xsl:if test="documentLevelAllowance or documentLevelCharge">
      <section class="doc-ac">
        <h2><xsl:value-of select="f:l('allowancesCharges')"/></h2>
        <table class="plain">
          <thead><tr>
            <th><xsl:value-of select="f:l('reason')"/></th>
            <th class="num"><xsl:value-of select="f:l('base')"/></th>
            <th class="num"><xsl:value-of select="f:l('percentage')"/></th>
            <th class="num"><xsl:value-of select="f:l('vat')"/></th>
            <th class="num"><xsl:value-of select="f:l('amount') || ' (' || $currency || ')'"/></th>
          </tr></thead>
          <tbody>
            <xsl:for-each select="documentLevelAllowance, documentLevelCharge">
              <tr>
                <td><xsl:value-of select="string-join((f:l(if (self::documentLevelAllowance) then 'allowance' else 'charge') || ':',
                    reason, reasonCode ! ('(' || . || ')')), ' ')"/></td>
                <td class="num"><xsl:value-of select="baseAmount ! f:amount(.)"/></td>
                <td class="num"><xsl:value-of select="percentage ! f:percent(.)"/></td>
                <td class="num"><xsl:value-of select="string-join((vatCategoryCode, vatRate ! f:percent(.)), ' ')"/></td>
                <td class="num"><xsl:value-of select="(if (self::documentLevelAllowance) then '−' else '+') || f:amount(amount)"/></td>
              </tr>
            </xsl:for-each>
          </tbody>
        </table>
      </section>
    </xsl:if>
  </xsl:template>

  <xsl:template name="vat-breakdown">
    <div class="vat">
      <h2><xsl:value-of select="f:l('vatBreakdown')"/></h2>
      <table class="plain">
        <thead><tr>
          <th><xsl:value-of select="f:l('category')"/></th>
          <th class="num"><xsl:value-of select="f:l('rate')"/></th>
          <th class="num"><xsl:value-of select="f:l('taxable')"/></th>
          <th class="num"><xsl:value-of select="f:l('taxAmount')"/></th>
        </tr></thead>
        <tbody>
          <xsl:for-each select="vatBreakdown">
            <tr>
              <td>
                <xsl:value-of select="f:code('vat', vatCategoryCode)"/>
                <xsl:if test="exemptionReason or exemptionReasonCode">
                  <div class="small"><xsl:value-of select="f:l('exemption') || ': ' ||
                      string-join((exemptionReason, exemptionReasonCode ! ('(' || . || ')')), ' ')"/></div>
                </xsl:if>
              </td>
              <td class="num"><xsl:value-of select="f:percent(vatCategoryRate)"/></td>
              <td class="num"><xsl:value-of select="f:amount(vatCategoryTaxableAmount)"/></td>
              <td class="num"><xsl:value-of select="f:amount(vatCategoryTaxAmount)"/></td>
            </tr>
          </xsl:for-each>
        </tbody>
      </table>
    </div>
  </xsl:template>

  <!-- Third-party payments (BG-DEX-09) are added to the amount due (BR-DEX-09: BT-115 = BT-112 - BT-113 + BT-114
       + sum of BT-DEX-002): a row each between the paid amount and the amount due, so that the column adds up. -->
  <xsl:template match="documentTotals">
    <div class="totals">
      <h2><xsl:value-of select="f:l('totals')"/></h2>
      <table class="totals">
        <xsl:apply-templates mode="total" select="lineExtensionAmount, allowanceTotalAmount, chargeTotalAmount,
            taxExclusiveAmount, taxTotalAmount, taxTotalAmountInAccountingCurrency, taxInclusiveAmount, prepaidAmount"/>
        <xsl:for-each select="$inv/thirdPartyPayment">
          <tr class="thirdPartyPayment">
            <th>
              <xsl:value-of select="description"/>
              <div class="small"><xsl:value-of select="string-join((f:l('thirdParty') || ($business-terms[.] ! ' (BG-DEX-09)'),
                  paymentType), ' · ')"/></div>
            </th>
            <td class="num"><xsl:value-of select="'+' || f:money(amount)"/></td>
          </tr>
        </xsl:for-each>
        <xsl:apply-templates mode="total" select="payableRoundingAmount, payableAmount"/>
      </table>
    </div>
  </xsl:template>

  <xsl:template mode="total" match="documentTotals/*">
    <xsl:variable name="key" select="map { 'lineExtensionAmount': 'lineTotal', 'allowanceTotalAmount': 'allowanceTotal',
        'chargeTotalAmount': 'chargeTotal', 'taxExclusiveAmount': 'taxExclusive', 'taxTotalAmount': 'taxTotal',
        'taxTotalAmountInAccountingCurrency': 'taxTotalAccounting', 'taxInclusiveAmount': 'taxInclusive',
        'prepaidAmount': 'prepaid', 'payableRoundingAmount': 'rounding', 'payableAmount': 'payable' }(local-name())"/>
    <tr class="{local-name()}">
      <th><xsl:value-of select="f:l($key)"/></th>
      <td class="num"><xsl:value-of select="f:amount(.) || ' ' ||
          (if (self::taxTotalAmountInAccountingCurrency) then $inv/vatAccountingCurrencyCode else $currency)"/></td>
    </tr>
  </xsl:template>

  <xsl:template match="paymentInstructions">
    <section class="payment">
      <h2><xsl:value-of select="f:l('payment')"/></h2>
      <dl class="grid">
        <!-- (the amount due and the due date are under the invoice details, the amount again in the totals) -->
        <xsl:sequence select="f:fact('means', string-join((f:code('means', meansCode), meansText ! ('– ' || .)), ' '))"/>
        <xsl:for-each select="creditTransfer, additionalCreditTransfer">
          <div class="fact iban"><dt><xsl:value-of select="f:l('iban')"/></dt><dd><xsl:value-of select="f:account(accountIdentifier)"/></dd></div>
          <xsl:sequence select="f:fact('accountName', accountName)"/>
          <xsl:sequence select="f:fact('bic', serviceProviderIdentifier)"/>
        </xsl:for-each>
        <xsl:sequence select="f:fact('card', paymentCardInformation/primaryAccountNumber)"/>
        <xsl:sequence select="f:fact('cardHolder', paymentCardInformation/cardHolderName)"/>
        <xsl:for-each select="directDebit">
          <xsl:sequence select="f:fact('mandate', mandateReferenceIdentifier)"/>
          <xsl:sequence select="f:fact('creditorId', creditorIdentifier)"/>
          <xsl:for-each select="debtorAccountIdentifier">
            <div class="fact"><dt><xsl:value-of select="f:l('debtorAccount')"/></dt><dd><xsl:value-of select="f:account(.)"/></dd></div>
          </xsl:for-each>
        </xsl:for-each>
      </dl>
      <!-- free texts get the full width -->
      <dl class="wide">
        <xsl:sequence select="f:fact('remittance', remittanceInformation)"/>
        <xsl:sequence select="f:fact('terms', $inv/paymentTerms)"/>
      </dl>
    </section>
  </xsl:template>

  <xsl:template name="attachments">
    <xsl:if test="additionalSupportingDocument">
      <section class="attachments">
        <h2><xsl:value-of select="f:l('attachments')"/></h2>
        <table class="plain">
          <thead><tr>
            <th><xsl:value-of select="f:l('reference')"/></th>
            <th><xsl:value-of select="f:l('description')"/></th>
            <th><xsl:value-of select="f:l('file')"/></th>
            <th><xsl:value-of select="f:l('location')"/></th>
          </tr></thead>
          <tbody>
            <xsl:for-each select="additionalSupportingDocument">
              <tr>
                <td><xsl:value-of select="reference"/></td>
                <td><xsl:value-of select="description"/></td>
                <td><xsl:value-of select="string-join((attachedDocumentFilename, attachedDocumentMimeType ! ('(' || . || ')')), ' ')"/></td>
                <td class="wrap"><xsl:value-of select="externalLocation"/></td>
              </tr>
            </xsl:for-each>
          </tbody>
        </table>
      </section>
    </xsl:if>
  </xsl:template>

  <!-- The verdict of a validation report on the document shown (render with validate). -->
  <xsl:template name="verdict">
    <xsl:param name="report" as="map(*)"/>
    <section class="verdict {$report?verdict}">
      <div class="verdict-line">
        <strong><xsl:value-of select="f:l($report?verdict)"/></strong>
        <xsl:value-of select="' · ' || $report?version || ' · ' || $report?errors || ' '
                              || f:l(if ($report?errors eq 1) then 'error' else 'errors') || ', '
                              || $report?warnings || ' ' || f:l(if ($report?warnings eq 1) then 'warning' else 'warnings')"/>
      </div>
      <xsl:if test="$report?meaning">
        <div class="verdict-meaning"><xsl:value-of select="$report?meaning"/></div>
      </xsl:if>
      <xsl:for-each select="$report?meaningAlso?*">
        <div class="verdict-meaning also" lang="{?lang}"><xsl:value-of select="?text"/></div>
      </xsl:for-each>
      <xsl:for-each select="$report?notJudged?*">
        <div class="verdict-meaning not-judged"><xsl:value-of select="f:l('notJudged') || ': ' || ?code || ' · ' || ?message"/></div>
      </xsl:for-each>
      <div class="verdict-meaning rules"><xsl:value-of select="f:l('rulesApplied') || ': '
          || (if (array:size($report?rules) gt 0) then string-join($report?rules?*, '; ') else '-')"/></div>
      <xsl:if test="array:size($report?failed) gt 0">
        <table class="plain findings">
          <thead><tr>
            <th class="rule"><xsl:value-of select="f:l('rule')"/></th>
            <th class="at"><xsl:value-of select="f:l('lineColumn')"/></th>
            <th class="class"><xsl:value-of select="f:l('class')"/></th>
            <th><xsl:value-of select="f:l('finding')"/></th>
          </tr></thead>
          <tbody>
            <xsl:for-each select="$report?failed?*">
              <tr>
                <!-- the severity on a line of its own: a div (the PDF's user-agent stylesheet has no rule for br,
                     which ran the two together: "CHECK-VAT-IDwarning") -->
                <td class="rule"><xsl:value-of select="?code"/>
                  <xsl:if test="?severity = 'WARNING'"><div class="small"><xsl:value-of select="f:l('warning')"/></div></xsl:if></td>
                <!-- data-label: a phone shows each finding as lines under one another, without the header row -->
                <td class="at" data-label="{f:l('lineColumn')}"><xsl:value-of select="string-join((string(?line), string(?column)[. ne ''])[. ne ''], ':')"/></td>
                <td class="class" data-label="{f:l('class')}"><xsl:value-of select="?category"/></td>
                <td class="wrap"><xsl:value-of select="?message"/></td>
              </tr>
            </xsl:for-each>
          </tbody>
        </table>
      </xsl:if>
    </section>
  </xsl:template>

  <!-- Every value of the invoice with its business term (render with showBusinessTerms), in document order. -->
  <xsl:template name="business-terms">
    <xsl:param name="terms" as="map(*)"/>
    <section class="business-terms">
      <h2><xsl:value-of select="f:l('businessTerms')"/></h2>
      <table class="plain">
        <thead><tr>
          <th class="bt"><xsl:value-of select="f:l('term')"/></th>
          <th><xsl:value-of select="f:l('value')"/></th>
        </tr></thead>
        <tbody>
          <xsl:for-each select="$inv//*[not(*)][normalize-space()]">
            <!-- nested sub-lines (BG-DEX-01 in BG-DEX-01 ...) have the terms of the first level's -->
            <xsl:variable name="term" select="$terms(replace(string-join(ancestor-or-self::*/local-name(), '/'),
                '(/subInvoiceLine)+', '/subInvoiceLine'))"/>
            <tr>
              <td class="bt wrap"><xsl:value-of select="($term, local-name())[1]"/></td>
              <!-- an attached document (BT-125) is named by its size: its base64 is no text for a person -->
              <td class="wrap"><xsl:value-of select="if (self::attachedDocument)
                  then format-number(string-length(normalize-space(.)) * 3 idiv 4, '#,##0') || ' bytes (base64)'
                  else ."/></td>
            </tr>
          </xsl:for-each>
        </tbody>
      </table>
    </section>
  </xsl:template>
</xsl:stylesheet>
