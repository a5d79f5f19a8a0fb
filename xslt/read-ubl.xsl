<?xml version="1.0" encoding="UTF-8"?>
<!-- OASIS UBL 2.1 Invoice or CreditNote -> canonical invoice (docs/canonical.md), the reverse of ubl.xsl.
     Bindings as in ubl.xsl and pipeline/terms.py (a CreditNote has cbc:CreditNoteTypeCode, cac:CreditNoteLine,
     cbc:CreditedQuantity, the due date on the payment means and BT-11 as a document reference of type 50);
     element order as in xslt/canonical.xsd. The first occurrence of a repeatable term goes to its single field,
     further ones to the "additional..." extension arrays where the model has one (notes, preceding invoices,
     seller identifiers, credit transfers, item classifications); anything else is not read, and its source node
     is named by no s:src (common/read.xsl).
     Not written, since the canonical document has no place for it: BT-24 (cbc:CustomizationID, a stylesheet
     parameter of generation) and invoiceSubType (no binding). -->
<xsl:stylesheet version="3.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:xs="http://www.w3.org/2001/XMLSchema"
    xmlns:r="urn:einvoice-pipeline:xslt-read-functions"
    xmlns:inv="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"
    xmlns:cn="urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2"
    xmlns:cac="urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"
    xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"
    xmlns="urn:einvoice-pipeline:canonical:1"
    exclude-result-prefixes="#all">

  <xsl:include href="common/read.xsl"/>

  <xsl:output method="xml" encoding="UTF-8" indent="no"/>

  <!-- The placeholders ubl.xsl writes where UBL requires a value EN 16931 has no term for: read with the term
       they stand beside (any other value is not read, and so reported). -->
  <xsl:param name="card-network-id" as="xs:string" select="'NA'"/>
  <!-- a received "NA" is read as the value it is (values travel verbatim); only an empty id is no value -->
  <xsl:param name="missing-order-id" as="xs:string" select="''"/>

  <xsl:variable name="root" select="/(inv:Invoice | cn:CreditNote)"/>
  <xsl:variable name="currency" as="xs:string" select="normalize-space($root/cbc:DocumentCurrencyCode[1])"/>
  <xsl:variable name="tax-currency" as="xs:string" select="normalize-space($root/cbc:TaxCurrencyCode[1])"/>
  <!-- BG-1: the notes that have a text -->
  <xsl:variable name="notes" select="$root/cbc:Note[exists(r:first(.))]"/>
  <!-- BT-18 and (CreditNote) BT-11: typed document references; the others are BG-24 -->
  <xsl:variable name="invoiced-object" select="$root/cac:AdditionalDocumentReference[r:type-code(.) eq '130'][1]"/>
  <xsl:variable name="project" select="$root/cac:AdditionalDocumentReference[r:type-code(.) eq '50'][1]"/>
  <!-- BT-13 only when it is no placeholder that ubl.xsl wrote beside a sales order reference (BT-14) -->
  <xsl:variable name="order-id" select="$root/cac:OrderReference/cbc:ID"/>
  <xsl:variable name="order-placeholder" select="$order-id[normalize-space(.) eq $missing-order-id]
                                                          [exists(r:first(../cbc:SalesOrderID))]"/>

  <xsl:template match="/">
    <xsl:if test="empty($root)">
      <xsl:message terminate="yes">read-ubl.xsl: the input is not a UBL 2.1 Invoice or CreditNote</xsl:message>
    </xsl:if>
    <xsl:apply-templates select="$root"/>
  </xsl:template>

  <xsl:template match="inv:Invoice | cn:CreditNote">
    <invoice>
      <xsl:sequence select="r:source-namespace()"/>
      <xsl:sequence select="r:source-ids(.)"/>
      <xsl:sequence select="r:leaf('invoiceNumber', cbc:ID)"/>
      <xsl:sequence select="r:leaf('issueDate', cbc:IssueDate, 'date')"/>
      <xsl:sequence select="r:leaf('invoiceTypeCode', (cbc:InvoiceTypeCode, cbc:CreditNoteTypeCode))"/>
      <!-- a BT-6 equal to BT-5 says nothing and is not written (docs/canonical.md): read with BT-5 -->
      <xsl:sequence select="r:leaf('currencyCode', cbc:DocumentCurrencyCode, 'text',
                                   cbc:TaxCurrencyCode[normalize-space(.) eq $currency])"/>
      <xsl:apply-templates select="cac:AccountingSupplierParty/cac:Party[1]" mode="party">
        <xsl:with-param name="role" select="'seller'"/>
      </xsl:apply-templates>
      <xsl:apply-templates select="cac:AccountingCustomerParty/cac:Party[1]" mode="party">
        <xsl:with-param name="role" select="'buyer'"/>
      </xsl:apply-templates>
      <xsl:call-template name="payment-instructions"/>
      <xsl:call-template name="document-totals"/>
      <xsl:apply-templates select="cac:TaxTotal/cac:TaxSubtotal[r:in-currency(cbc:TaxAmount, $currency)]" mode="vat-breakdown"/>
      <xsl:apply-templates select="cac:InvoiceLine | cac:CreditNoteLine" mode="line"/>
      <xsl:sequence select="r:leaf('valueAddedTaxPointDate', cbc:TaxPointDate, 'date')"/>
      <xsl:sequence select="r:leaf('vatAccountingCurrencyCode', cbc:TaxCurrencyCode[normalize-space(.) ne $currency])"/>
      <xsl:sequence select="r:leaf('buyerReference', cbc:BuyerReference)"/>
      <xsl:sequence select="r:leaf('projectReference', (cac:ProjectReference/cbc:ID, $project/cbc:ID), 'text',
                                   $project/cbc:DocumentTypeCode[empty(r:first(../../cac:ProjectReference/cbc:ID))])"/>
      <xsl:sequence select="r:leaf('contractReference', cac:ContractDocumentReference/cbc:ID)"/>
      <xsl:sequence select="r:leaf('purchaseOrderReference', $order-id except $order-placeholder)"/>
      <xsl:sequence select="r:leaf('salesOrderReference', cac:OrderReference/cbc:SalesOrderID, 'text', $order-placeholder)"/>
      <xsl:sequence select="r:leaf('despatchAdviceReference', cac:DespatchDocumentReference/cbc:ID)"/>
      <xsl:sequence select="r:leaf('receivingAdviceReference', cac:ReceiptDocumentReference/cbc:ID)"/>
      <xsl:sequence select="r:leaf('tenderOrLotReference', cac:OriginatorDocumentReference/cbc:ID)"/>
      <xsl:sequence select="r:leaf('invoicedObjectIdentifier', $invoiced-object/cbc:ID, 'text', $invoiced-object/cbc:DocumentTypeCode)"/>
      <xsl:sequence select="r:leaf('paymentTerms', cac:PaymentTerms/cbc:Note, 'verbatim')"/>
      <xsl:sequence select="$notes[1] ! r:note(., 'invoiceNote', 2)"/>
      <xsl:where-populated>
        <processControl>
          <xsl:sequence select="r:leaf('businessProcessType', cbc:ProfileID)"/>
        </processControl>
      </xsl:where-populated>
      <xsl:apply-templates select="(cac:BillingReference/cac:InvoiceDocumentReference)[1]" mode="preceding-invoice">
        <xsl:with-param name="name" select="'precedingInvoiceReference'"/>
      </xsl:apply-templates>
      <xsl:apply-templates select="cac:PayeeParty[1]" mode="party">
        <xsl:with-param name="role" select="'payee'"/>
      </xsl:apply-templates>
      <xsl:apply-templates select="cac:TaxRepresentativeParty[1]" mode="party">
        <xsl:with-param name="role" select="'sellerTaxRepresentativeParty'"/>
      </xsl:apply-templates>
      <xsl:apply-templates select="cac:Delivery[1]" mode="delivery"/>
      <xsl:apply-templates select="cac:InvoicePeriod[1]" mode="period">
        <xsl:with-param name="name" select="'invoicingPeriod'"/>
      </xsl:apply-templates>
      <xsl:call-template name="allowances-and-charges">
        <xsl:with-param name="level" select="'documentLevel'"/>
      </xsl:call-template>
      <xsl:apply-templates select="cac:AdditionalDocumentReference[not(r:type-code(.) = ('130', '50'))]" mode="supporting-document"/>
      <xsl:sequence select="r:leaf('paymentDueDate', (cbc:DueDate, cac:PaymentMeans/cbc:PaymentDueDate), 'date')"/>
      <xsl:sequence select="$notes[1] ! r:note(., 'invoiceNoteSubjectCode', 1)"/>
      <xsl:for-each select="$notes[position() gt 1]">
        <xsl:where-populated>
          <additionalInvoiceNote>
            <xsl:sequence select="r:note(., 'invoiceNote', 2), r:note(., 'invoiceNoteSubjectCode', 1)"/>
          </additionalInvoiceNote>
        </xsl:where-populated>
      </xsl:for-each>
      <xsl:apply-templates select="(cac:BillingReference/cac:InvoiceDocumentReference)[position() gt 1]" mode="preceding-invoice">
        <xsl:with-param name="name" select="'additionalPrecedingInvoiceReference'"/>
      </xsl:apply-templates>
      <xsl:sequence select="r:leaf('valueAddedTaxPointDateCode', cac:InvoicePeriod/cbc:DescriptionCode)"/>
      <xsl:sequence select="r:leaf('invoicedObjectIdentifierSchemeId', $invoiced-object/cbc:ID/@schemeID)"/>
      <xsl:sequence select="r:leaf('buyerAccountingReference', cbc:AccountingCost)"/>
      <!-- XRechnung extension BG-DEX-09 -->
      <xsl:for-each select="cac:PrepaidPayment">
        <xsl:where-populated>
          <thirdPartyPayment>
            <xsl:sequence select="r:leaf('paymentType', cbc:ID),
                r:amount('amount', cbc:PaidAmount, $currency),
                r:leaf('description', cbc:InstructionID)"/>
          </thirdPartyPayment>
        </xsl:where-populated>
      </xsl:for-each>
    </invoice>
  </xsl:template>

  <!-- ===== helpers ===== -->

  <xsl:function name="r:type-code" as="xs:string">
    <xsl:param name="reference" as="element()"/>
    <xsl:sequence select="normalize-space($reference/cbc:DocumentTypeCode[1])"/>
  </xsl:function>

  <!-- An amount in $currency (or without currency) -->
  <xsl:function name="r:in-currency" as="xs:boolean">
    <xsl:param name="amount" as="element()*"/>
    <xsl:param name="currency" as="xs:string"/>
    <xsl:sequence select="empty($amount/@currencyID) or normalize-space($amount[1]/@currencyID) eq $currency"/>
  </xsl:function>

  <!-- A tax category or scheme element of the VAT scheme, read with its cac:TaxScheme/cbc:ID -->
  <xsl:function name="r:vat-scheme" as="element()*">
    <xsl:param name="category" as="element()*"/>
    <xsl:sequence select="$category/cac:TaxScheme/cbc:ID[normalize-space(.) eq 'VAT']"/>
  </xsl:function>

  <!-- BT-22 (part 2) or BT-21 (part 1) of a UBL note: ubl.xsl writes the subject code as a "#CODE#" prefix
       (common/codes.xsl f:note-with-subject; the CEN UBL binding and XRechnung do the same). -->
  <xsl:function name="r:note" as="element()?">
    <xsl:param name="note" as="element()"/>
    <xsl:param name="name" as="xs:string"/>
    <xsl:param name="part" as="xs:integer"/>
    <!-- verbatim, as CII's notes are read: a note's line breaks and indentation are the sender's -->
    <xsl:variable name="text" select="r:value($note, 'verbatim')"/>
    <xsl:variable name="parts" as="xs:string*" select="
        if (matches($text, '^#[A-Za-z]{3}#.', 's')) then (substring($text, 2, 3), substring($text, 6)) else ((), $text)"/>
    <xsl:if test="exists($parts) and ($part eq 2 or count($parts) eq 2)">
      <xsl:sequence select="r:element($name, $parts[if (count($parts) eq 2) then $part else 1], $note)"/>
    </xsl:if>
  </xsl:function>

  <!-- ===== parties: BG-4, BG-7 (cac:Party), BG-10 (cac:PayeeParty), BG-11 (cac:TaxRepresentativeParty) ===== -->

  <!-- The fields each party has in the canonical schema (in schema order; the template writes that order). -->
  <xsl:variable name="party-fields" as="map(xs:string, xs:string*)" select="map{
      'seller': ('name', 'tradingName', 'identifier', 'legalRegistrationIdentifier', 'vatIdentifier',
          'taxRegistrationIdentifier', 'electronicAddress', 'electronicAddressSchemeId', 'postalAddress', 'contact',
          'identifierSchemeId', 'legalRegistrationIdentifierSchemeId', 'additionalLegalInformation', 'additionalIdentifier'),
      'buyer': ('name', 'tradingName', 'identifier', 'legalRegistrationIdentifier', 'vatIdentifier',
          'electronicAddress', 'electronicAddressSchemeId', 'postalAddress', 'contact', 'identifierSchemeId',
          'legalRegistrationIdentifierSchemeId'),
      'payee': ('name', 'identifier', 'legalRegistrationIdentifier', 'identifierSchemeId',
          'legalRegistrationIdentifierSchemeId'),
      'sellerTaxRepresentativeParty': ('name', 'vatIdentifier', 'postalAddress')}"/>

  <xsl:template match="cac:Party | cac:PayeeParty | cac:TaxRepresentativeParty" mode="party">
    <xsl:param name="role" as="xs:string"/>
    <!-- seller and buyer are named by their legal entity and may have a trading name; payee and tax
         representative are named by their party name -->
    <xsl:variable name="legal-name" select="$role = ('seller', 'buyer')"/>
    <!-- identifiers: the first is BT-29/46/60, further seller ones are additionalIdentifier; a SEPA one is BT-90 -->
    <xsl:variable name="ids" select="cac:PartyIdentification/cbc:ID[not(normalize-space(@schemeID) eq 'SEPA')][exists(r:first(.))]"/>
    <xsl:variable name="legal" select="r:first(cac:PartyLegalEntity/cbc:CompanyID)"/>
    <xsl:variable name="endpoint" select="r:first(cbc:EndpointID)"/>
    <!-- only the fields of this party (written straight into the party element, not built and filtered) -->
    <xsl:variable name="fields" select="$party-fields($role)"/>
    <xsl:where-populated>
      <xsl:element name="{$role}" namespace="{$r:canonical-ns}">
        <xsl:sequence select="r:leaf('name', if ($legal-name) then cac:PartyLegalEntity/cbc:RegistrationName else cac:PartyName/cbc:Name)"/>
        <xsl:if test="'tradingName' = $fields">
          <xsl:sequence select="r:leaf('tradingName', cac:PartyName/cbc:Name[$legal-name])"/>
        </xsl:if>
        <xsl:if test="'identifier' = $fields">
          <xsl:sequence select="r:leaf('identifier', $ids[1])"/>
        </xsl:if>
        <xsl:if test="'legalRegistrationIdentifier' = $fields">
          <xsl:sequence select="r:leaf('legalRegistrationIdentifier', $legal)"/>
        </xsl:if>
        <xsl:if test="'vatIdentifier' = $fields">
          <xsl:variable name="vat" select="cac:PartyTaxScheme[exists(r:vat-scheme(.))]"/>
          <xsl:sequence select="r:leaf('vatIdentifier', $vat/cbc:CompanyID, 'text', r:vat-scheme($vat[1]))"/>
        </xsl:if>
        <xsl:if test="'taxRegistrationIdentifier' = $fields">
          <xsl:variable name="tax" select="cac:PartyTaxScheme[empty(r:vat-scheme(.))]"/>
          <xsl:sequence select="r:leaf('taxRegistrationIdentifier', $tax/cbc:CompanyID, 'text',
                                       $tax[1]/cac:TaxScheme/cbc:ID[normalize-space(.) eq 'FC'])"/>
        </xsl:if>
        <xsl:if test="'electronicAddress' = $fields">
          <xsl:sequence select="r:leaf('electronicAddress', $endpoint)"/>
          <xsl:sequence select="r:leaf('electronicAddressSchemeId', $endpoint/@schemeID)"/>
        </xsl:if>
        <xsl:if test="'postalAddress' = $fields">
          <xsl:apply-templates select="cac:PostalAddress[1]" mode="address"/>
        </xsl:if>
        <xsl:if test="'contact' = $fields">
          <xsl:apply-templates select="cac:Contact[1]" mode="contact"/>
        </xsl:if>
        <xsl:if test="'identifierSchemeId' = $fields">
          <xsl:sequence select="r:leaf('identifierSchemeId', $ids[1]/@schemeID)"/>
        </xsl:if>
        <xsl:if test="'legalRegistrationIdentifierSchemeId' = $fields">
          <xsl:sequence select="r:leaf('legalRegistrationIdentifierSchemeId', $legal/@schemeID)"/>
        </xsl:if>
        <xsl:if test="'additionalLegalInformation' = $fields">
          <xsl:sequence select="r:leaf('additionalLegalInformation', cac:PartyLegalEntity/cbc:CompanyLegalForm)"/>
        </xsl:if>
        <xsl:if test="'additionalIdentifier' = $fields">
          <xsl:for-each select="$ids[position() gt 1]">
            <xsl:where-populated>
              <additionalIdentifier>
                <xsl:sequence select="r:leaf('identifier', .), r:leaf('identifierSchemeId', @schemeID)"/>
              </additionalIdentifier>
            </xsl:where-populated>
          </xsl:for-each>
        </xsl:if>
      </xsl:element>
    </xsl:where-populated>
  </xsl:template>

  <!-- BG-5, BG-8, BG-12 (cac:PostalAddress), BG-15 (cac:Address of the delivery location) -->
  <xsl:template match="cac:PostalAddress | cac:Address" mode="address">
    <xsl:where-populated>
      <xsl:element name="{if (self::cac:Address) then 'address' else 'postalAddress'}" namespace="{$r:canonical-ns}">
        <xsl:sequence select="r:leaf('addressLine1', cbc:StreetName),
            r:leaf('addressLine2', cbc:AdditionalStreetName),
            r:leaf('addressLine3', cac:AddressLine/cbc:Line),
            r:leaf('city', cbc:CityName),
            r:leaf('postcode', cbc:PostalZone),
            r:leaf('countrySubdivision', cbc:CountrySubentity),
            r:leaf('countryCode', cac:Country/cbc:IdentificationCode)"/>
      </xsl:element>
    </xsl:where-populated>
  </xsl:template>

  <!-- BG-6, BG-9 -->
  <xsl:template match="cac:Contact" mode="contact">
    <xsl:where-populated>
      <contact>
        <xsl:sequence select="r:leaf('contactPoint', cbc:Name),
            r:leaf('telephone', cbc:Telephone),
            r:leaf('email', cbc:ElectronicMail)"/>
      </contact>
    </xsl:where-populated>
  </xsl:template>

  <!-- ===== BG-13 delivery, BG-14 / BG-26 periods, BG-3 preceding invoices ===== -->

  <xsl:template match="cac:Delivery" mode="delivery">
    <xsl:variable name="location" select="r:first(cac:DeliveryLocation/cbc:ID)"/>
    <xsl:where-populated>
      <deliveryInformation>
        <xsl:sequence select="r:leaf('partyName', cac:DeliveryParty/cac:PartyName/cbc:Name)"/>
        <xsl:sequence select="r:leaf('locationIdentifier', $location)"/>
        <xsl:sequence select="r:leaf('actualDeliveryDate', cbc:ActualDeliveryDate, 'date')"/>
        <xsl:apply-templates select="cac:DeliveryLocation[1]/cac:Address[1]" mode="address"/>
        <xsl:sequence select="r:leaf('locationIdentifierSchemeId', $location/@schemeID)"/>
      </deliveryInformation>
    </xsl:where-populated>
  </xsl:template>

  <xsl:template match="cac:InvoicePeriod" mode="period">
    <xsl:param name="name" as="xs:string"/>
    <xsl:where-populated>
      <xsl:element name="{$name}" namespace="{$r:canonical-ns}">
        <xsl:sequence select="r:leaf('startDate', cbc:StartDate, 'date'),
            r:leaf('endDate', cbc:EndDate, 'date')"/>
      </xsl:element>
    </xsl:where-populated>
  </xsl:template>

  <xsl:template match="cac:InvoiceDocumentReference" mode="preceding-invoice">
    <xsl:param name="name" as="xs:string"/>
    <xsl:where-populated>
      <xsl:element name="{$name}" namespace="{$r:canonical-ns}">
        <xsl:sequence select="r:leaf('documentReference', cbc:ID),
            r:leaf('issueDate', cbc:IssueDate, 'date')"/>
      </xsl:element>
    </xsl:where-populated>
  </xsl:template>

  <!-- ===== BG-24 ===== -->
  <xsl:template match="cac:AdditionalDocumentReference" mode="supporting-document">
    <xsl:variable name="attachment" select="r:first(cac:Attachment/cbc:EmbeddedDocumentBinaryObject)"/>
    <xsl:where-populated>
      <additionalSupportingDocument>
        <xsl:sequence select="r:src(cbc:DocumentTypeCode[normalize-space(.) eq '916'])"/>
        <xsl:sequence select="r:leaf('reference', cbc:ID),
            r:leaf('description', cbc:DocumentDescription),
            r:leaf('externalLocation', cac:Attachment/cac:ExternalReference/cbc:URI),
            r:leaf('attachedDocument', $attachment),
            r:leaf('attachedDocumentMimeType', $attachment/@mimeCode),
            r:leaf('attachedDocumentFilename', $attachment/@filename)"/>
      </additionalSupportingDocument>
    </xsl:where-populated>
  </xsl:template>

  <!-- ===== BG-16 payment instructions with BG-17, BG-18, BG-19 ===== -->

  <!-- The first payment means gives the code and text (a further means with the same code is read with it);
       the first means with a payee account is BG-17, each further one an additionalCreditTransfer. BT-90 is
       the SEPA identifier of the payee or, without one, of the seller. -->
  <xsl:template name="payment-instructions">
    <xsl:variable name="means" select="cac:PaymentMeans"/>
    <xsl:variable name="transfers" select="$means[cac:PayeeFinancialAccount]"/>
    <xsl:variable name="card" select="$means/cac:CardAccount[1]"/>
    <xsl:variable name="mandate" select="$means/cac:PaymentMandate"/>
    <xsl:variable name="sepa" select="(cac:PayeeParty, cac:AccountingSupplierParty/cac:Party)
                                      /cac:PartyIdentification/cbc:ID[normalize-space(@schemeID) eq 'SEPA']"/>
    <xsl:variable name="creditor" select="r:value(r:first($sepa), 'text')"/>
    <xsl:where-populated>
      <paymentInstructions>
        <xsl:sequence select="r:leaf('meansCode', $means/cbc:PaymentMeansCode)"/>
        <xsl:sequence select="r:leaf('meansText', $means/cbc:PaymentMeansCode/@name)"/>
        <xsl:sequence select="r:leaf('remittanceInformation', $means/cbc:PaymentID)"/>
        <xsl:apply-templates select="$transfers[1]" mode="credit-transfer">
          <xsl:with-param name="name" select="'creditTransfer'"/>
        </xsl:apply-templates>
        <xsl:where-populated>
          <paymentCardInformation>
            <xsl:sequence select="r:leaf('primaryAccountNumber', $card/cbc:PrimaryAccountNumberID, 'text',
                $card/cbc:NetworkID[normalize-space(.) eq $card-network-id]),
                r:leaf('cardHolderName', $card/cbc:HolderName)"/>
          </paymentCardInformation>
        </xsl:where-populated>
        <xsl:where-populated>
          <directDebit>
            <xsl:sequence select="r:leaf('mandateReferenceIdentifier', $mandate/cbc:ID),
                r:leaf('debtorAccountIdentifier', $mandate/cac:PayerFinancialAccount/cbc:ID),
                r:leaf('creditorIdentifier', $sepa, 'text', $sepa[r:value(., 'text') = $creditor]/@schemeID)"/>
          </directDebit>
        </xsl:where-populated>
        <xsl:apply-templates select="$transfers[position() gt 1]" mode="credit-transfer">
          <xsl:with-param name="name" select="'additionalCreditTransfer'"/>
        </xsl:apply-templates>
      </paymentInstructions>
    </xsl:where-populated>
  </xsl:template>

  <!-- BG-17. BT-86 (the payment service provider, "such as a BIC") is bound to the branch's cbc:ID; without one, the
       institution's cbc:ID is the same value where UBL 2.1 (whose definition recommends the BIC there) and Peppol
       BIS 2 put the BIC: read as BT-86 and written back where EN 16931 binds it (the CEN rules only warn of the
       element, UBL-CR-664). -->
  <xsl:template match="cac:PaymentMeans" mode="credit-transfer">
    <xsl:param name="name" as="xs:string"/>
    <xsl:variable name="account" select="cac:PayeeFinancialAccount[1]"/>
    <xsl:variable name="branch" select="$account/cac:FinancialInstitutionBranch"/>
    <xsl:where-populated>
      <xsl:element name="{$name}" namespace="{$r:canonical-ns}">
        <xsl:sequence select="r:leaf('accountIdentifier', $account/cbc:ID),
            r:leaf('accountName', $account/cbc:Name),
            r:leaf('serviceProviderIdentifier', ($branch/cbc:ID, $branch/cac:FinancialInstitution/cbc:ID))"/>
      </xsl:element>
    </xsl:where-populated>
  </xsl:template>

  <!-- ===== BG-22 totals, BT-110 (the tax total in the document currency), BT-111 (in the VAT accounting currency) ===== -->
  <xsl:template name="document-totals">
    <xsl:variable name="totals" select="cac:LegalMonetaryTotal[1]"/>
    <xsl:variable name="tax-amounts" select="cac:TaxTotal/cbc:TaxAmount"/>
    <xsl:where-populated>
      <documentTotals>
        <xsl:sequence select="r:amount('lineExtensionAmount', $totals/cbc:LineExtensionAmount, $currency),
            r:amount('allowanceTotalAmount', $totals/cbc:AllowanceTotalAmount, $currency),
            r:amount('chargeTotalAmount', $totals/cbc:ChargeTotalAmount, $currency),
            r:amount('taxExclusiveAmount', $totals/cbc:TaxExclusiveAmount, $currency),
            r:amount('taxInclusiveAmount', $totals/cbc:TaxInclusiveAmount, $currency),
            r:amount('prepaidAmount', $totals/cbc:PrepaidAmount, $currency),
            r:amount('payableRoundingAmount', $totals/cbc:PayableRoundingAmount, $currency),
            r:amount('payableAmount', $totals/cbc:PayableAmount, $currency),
            r:amount('taxTotalAmount', $tax-amounts[r:in-currency(., $currency)], $currency),
            r:amount('taxTotalAmountInAccountingCurrency',
            $tax-amounts[$tax-currency ne $currency][normalize-space(@currencyID) eq $tax-currency], $tax-currency)"/>
      </documentTotals>
    </xsl:where-populated>
  </xsl:template>

  <!-- ===== BG-23 ===== -->
  <xsl:template match="cac:TaxSubtotal" mode="vat-breakdown">
    <xsl:variable name="category" select="cac:TaxCategory[1]"/>
    <xsl:where-populated>
      <vatBreakdown>
        <xsl:sequence select="r:src(r:vat-scheme($category))"/>
        <xsl:sequence select="r:leaf('vatCategoryCode', $category/cbc:ID),
            r:leaf('vatCategoryRate', $category/cbc:Percent, 'decimal'),
            r:amount('vatCategoryTaxableAmount', cbc:TaxableAmount, $currency),
            r:amount('vatCategoryTaxAmount', cbc:TaxAmount, $currency),
            r:leaf('exemptionReason', $category/cbc:TaxExemptionReason),
            r:leaf('exemptionReasonCode', $category/cbc:TaxExemptionReasonCode)"/>
      </vatBreakdown>
    </xsl:where-populated>
  </xsl:template>

  <!-- ===== BG-20, BG-21 (documentLevel), BG-27, BG-28 (invoiceLine): the charge indicator picks the element
       (the schema wants the allowances before the charges); only the document level carries a VAT category ===== -->
  <xsl:template name="allowances-and-charges">
    <xsl:param name="level" as="xs:string"/>
    <xsl:apply-templates select="cac:AllowanceCharge[r:is-false(cbc:ChargeIndicator)]" mode="allowance-charge">
      <xsl:with-param name="name" select="$level || 'Allowance'"/>
    </xsl:apply-templates>
    <xsl:apply-templates select="cac:AllowanceCharge[r:is-true(cbc:ChargeIndicator)]" mode="allowance-charge">
      <xsl:with-param name="name" select="$level || 'Charge'"/>
    </xsl:apply-templates>
  </xsl:template>

  <xsl:template match="cac:AllowanceCharge" mode="allowance-charge">
    <xsl:param name="name" as="xs:string"/>
    <xsl:variable name="category" select="cac:TaxCategory[1][starts-with($name, 'documentLevel')]"/>
    <xsl:where-populated>
      <xsl:element name="{$name}" namespace="{$r:canonical-ns}">
        <xsl:sequence select="r:src((cbc:ChargeIndicator, r:vat-scheme($category)))"/>
        <xsl:sequence select="r:amount('amount', cbc:Amount, $currency),
            r:leaf('percentage', cbc:MultiplierFactorNumeric, 'decimal'),
            r:amount('baseAmount', cbc:BaseAmount, $currency),
            r:leaf('vatCategoryCode', $category/cbc:ID),
            r:leaf('vatRate', $category/cbc:Percent, 'decimal'),
            r:leaf('reason', cbc:AllowanceChargeReason),
            r:leaf('reasonCode', cbc:AllowanceChargeReasonCode)"/>
      </xsl:element>
    </xsl:where-populated>
  </xsl:template>

  <!-- ===== BG-25 invoice line, and nested in it the XRechnung extension's sub-invoice lines (BG-DEX-01) ===== -->
  <xsl:template match="cac:InvoiceLine | cac:CreditNoteLine | cac:SubInvoiceLine | cac:SubCreditNoteLine" mode="line">
    <xsl:variable name="quantity" select="r:first(cbc:InvoicedQuantity | cbc:CreditedQuantity)"/>
    <!-- BT-128: the line's document reference of type 130 (written so; the CEN examples leave the type out) -->
    <xsl:variable name="object" select="cac:DocumentReference[r:type-code(.) = ('', '130')][1]"/>
    <xsl:where-populated>
      <xsl:element name="{if (self::cac:InvoiceLine or self::cac:CreditNoteLine) then 'invoiceLine' else 'subInvoiceLine'}"
                   namespace="{$r:canonical-ns}">
        <xsl:sequence select="r:leaf('lineIdentifier', cbc:ID)"/>
        <xsl:apply-templates select="cac:Item[1]" mode="item"/>
        <xsl:sequence select="r:leaf('note', cbc:Note, 'verbatim')"/>
        <xsl:sequence select="r:leaf('quantity', $quantity, 'decimal')"/>
        <xsl:sequence select="r:leaf('unitCode', $quantity/@unitCode)"/>
        <xsl:sequence select="r:amount('netAmount', cbc:LineExtensionAmount, $currency)"/>
        <xsl:sequence select="r:leaf('referencedPurchaseOrderLine', cac:OrderLineReference/cbc:LineID)"/>
        <xsl:sequence select="r:leaf('buyerAccountingReference', cbc:AccountingCost)"/>
        <xsl:apply-templates select="cac:InvoicePeriod[1]" mode="period">
          <xsl:with-param name="name" select="'invoiceLinePeriod'"/>
        </xsl:apply-templates>
        <xsl:call-template name="allowances-and-charges">
          <xsl:with-param name="level" select="'invoiceLine'"/>
        </xsl:call-template>
        <xsl:apply-templates select="cac:Price[1]" mode="price"/>
        <xsl:apply-templates select="cac:Item[1]/cac:ClassifiedTaxCategory[1]" mode="line-vat"/>
        <xsl:sequence select="r:leaf('objectIdentifier', $object/cbc:ID, 'text', $object/cbc:DocumentTypeCode)"/>
        <xsl:sequence select="r:leaf('objectIdentifierSchemeId', $object/cbc:ID/@schemeID)"/>
        <xsl:apply-templates select="cac:SubInvoiceLine | cac:SubCreditNoteLine" mode="line"/>
      </xsl:element>
    </xsl:where-populated>
  </xsl:template>

  <!-- BG-31 with BG-32 and the classifications (the first is BT-158, further ones additionalClassifiedIdentifier) -->
  <xsl:template match="cac:Item" mode="item">
    <xsl:variable name="standard" select="r:first(cac:StandardItemIdentification/cbc:ID)"/>
    <xsl:variable name="classes" select="cac:CommodityClassification/cbc:ItemClassificationCode[exists(r:first(.))]"/>
    <xsl:where-populated>
      <itemInformation>
        <xsl:sequence select="r:leaf('name', cbc:Name)"/>
        <xsl:sequence select="r:leaf('description', cbc:Description)"/>
        <xsl:sequence select="r:leaf('sellersIdentifier', cac:SellersItemIdentification/cbc:ID)"/>
        <xsl:sequence select="r:leaf('buyersIdentifier', cac:BuyersItemIdentification/cbc:ID)"/>
        <xsl:sequence select="r:leaf('standardIdentifier', $standard)"/>
        <xsl:sequence select="r:leaf('classifiedIdentifier', $classes[1])"/>
        <xsl:sequence select="r:leaf('countryOfOrigin', cac:OriginCountry/cbc:IdentificationCode)"/>
        <xsl:for-each select="cac:AdditionalItemProperty">
          <xsl:where-populated>
            <itemAttribute>
              <xsl:sequence select="r:leaf('name', cbc:Name), r:leaf('value', cbc:Value)"/>
            </itemAttribute>
          </xsl:where-populated>
        </xsl:for-each>
        <xsl:sequence select="r:leaf('standardIdentifierSchemeId', $standard/@schemeID)"/>
        <xsl:sequence select="r:leaf('classifiedIdentifierSchemeId', $classes[1]/@listID)"/>
        <xsl:sequence select="r:leaf('classifiedIdentifierVersion', $classes[1]/@listVersionID)"/>
        <xsl:for-each select="$classes[position() gt 1]">
          <xsl:where-populated>
            <additionalClassifiedIdentifier>
              <xsl:sequence select="r:leaf('classifiedIdentifier', .),
                  r:leaf('classifiedIdentifierSchemeId', @listID),
                  r:leaf('classifiedIdentifierVersion', @listVersionID)"/>
            </additionalClassifiedIdentifier>
          </xsl:where-populated>
        </xsl:for-each>
      </itemInformation>
    </xsl:where-populated>
  </xsl:template>

  <!-- BG-29: net price (BT-146), base quantity (BT-149/150), gross price (BT-148) as the base of the price
       allowance whose amount is the discount (BT-147) -->
  <xsl:template match="cac:Price" mode="price">
    <xsl:variable name="allowance" select="cac:AllowanceCharge[r:is-false(cbc:ChargeIndicator)][1]"/>
    <xsl:variable name="basis" select="r:first(cbc:BaseQuantity)"/>
    <xsl:where-populated>
      <priceDetails>
        <xsl:sequence select="r:amount('netPrice', cbc:PriceAmount, $currency),
            r:leaf('grossPrice', $allowance/cbc:BaseAmount, 'decimal',
            ($allowance/cbc:BaseAmount/@currencyID[normalize-space(.) eq $currency], $allowance/cbc:ChargeIndicator)),
            r:leaf('priceBasisQuantity', $basis, 'decimal'),
            r:leaf('basisUnitCode', $basis/@unitCode),
            r:leaf('priceDiscount', $allowance/cbc:Amount, 'decimal',
            ($allowance/cbc:Amount/@currencyID[normalize-space(.) eq $currency], $allowance/cbc:ChargeIndicator))"/>
      </priceDetails>
    </xsl:where-populated>
  </xsl:template>

  <!-- BG-30 -->
  <xsl:template match="cac:ClassifiedTaxCategory" mode="line-vat">
    <xsl:where-populated>
      <lineVatInformation>
        <xsl:sequence select="r:src(r:vat-scheme(.))"/>
        <xsl:sequence select="r:leaf('vatCategoryCode', cbc:ID),
            r:leaf('vatRate', cbc:Percent, 'decimal')"/>
      </lineVatInformation>
    </xsl:where-populated>
  </xsl:template>

</xsl:stylesheet>
