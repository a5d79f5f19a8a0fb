<?xml version="1.0" encoding="UTF-8"?>
<!-- UN/CEFACT CII D16B CrossIndustryInvoice -> canonical invoice (docs/canonical.md), the reverse of cii.xsl.
     Bindings as in cii.xsl and pipeline/terms.py; element order as in xslt/canonical.xsd. The first occurrence
     of a repeatable term goes to its single field, further ones to the "additional..." extension arrays where the
     model has one (notes, preceding invoices, seller identifiers, credit transfers, item classifications);
     anything else is not read, and its source node is named by no s:src (common/read.xsl).
     Not written, since the canonical document has no place for it: BT-24 (GuidelineSpecifiedDocumentContext-
     Parameter, a stylesheet parameter of generation) and invoiceSubType (no binding). -->
<xsl:stylesheet version="3.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:xs="http://www.w3.org/2001/XMLSchema"
    xmlns:r="urn:einvoice-pipeline:xslt-read-functions"
    xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
    xmlns:ram="urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
    xmlns:qdt="urn:un:unece:uncefact:data:standard:QualifiedDataType:100"
    xmlns:udt="urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100"
    xmlns="urn:einvoice-pipeline:canonical:1"
    exclude-result-prefixes="#all">

  <xsl:include href="common/read.xsl"/>

  <xsl:output method="xml" encoding="UTF-8" indent="no"/>

  <!-- The project name cii.xsl writes with BT-11 (EN 16931 has no term for it): read with the reference. -->
  <xsl:param name="project-name" as="xs:string" select="'Project reference'"/>

  <!-- BT-8: CII carries UNTDID 2475, the semantic model (and the canonical document) UNTDID 2005 -->
  <xsl:variable name="tax-point-date-codes" as="map(xs:string, xs:string)" select="map{'5': '3', '29': '35', '72': '432'}"/>

  <xsl:variable name="transaction" select="/rsm:CrossIndustryInvoice/rsm:SupplyChainTradeTransaction"/>
  <!-- A Factur-X / ZUGFeRD EXTENDED invoice, or France's EXTENDED-CTC-FR built on it (by BT-24: `...:extended`,
       `...:extended-ctc-fr`) -->
  <xsl:variable name="extended" as="xs:boolean" select="contains(/rsm:CrossIndustryInvoice/
      rsm:ExchangedDocumentContext/ram:GuidelineSpecifiedDocumentContextParameter[1]/ram:ID[1], ':extended')"/>
  <xsl:variable name="agreement" select="$transaction/ram:ApplicableHeaderTradeAgreement"/>
  <xsl:variable name="delivery" select="$transaction/ram:ApplicableHeaderTradeDelivery"/>
  <xsl:variable name="settlement" select="$transaction/ram:ApplicableHeaderTradeSettlement"/>
  <xsl:variable name="currency" as="xs:string" select="normalize-space($settlement/ram:InvoiceCurrencyCode[1])"/>
  <xsl:variable name="tax-currency" as="xs:string" select="normalize-space($settlement/ram:TaxCurrencyCode[1])"/>
  <!-- BG-23: the VAT breakdowns (other taxes are no EN 16931 terms) -->
  <xsl:variable name="breakdowns" select="$settlement/ram:ApplicableTradeTax[r:is-vat(.)]"/>
  <!-- BG-1: the notes that have a text -->
  <xsl:variable name="notes" select="/rsm:CrossIndustryInvoice/rsm:ExchangedDocument/ram:IncludedNote[exists(r:first(ram:Content))]"/>
  <!-- BT-18 / BT-17: typed referenced documents -->
  <xsl:variable name="invoiced-object" select="$agreement/ram:AdditionalReferencedDocument[r:type-code(.) eq '130'][1]"/>
  <xsl:variable name="tender" select="$agreement/ram:AdditionalReferencedDocument[r:type-code(.) eq '50'][1]"/>

  <xsl:template match="/">
    <xsl:if test="not(rsm:CrossIndustryInvoice)">
      <xsl:message terminate="yes">read-cii.xsl: the input is not a CII D16B CrossIndustryInvoice</xsl:message>
    </xsl:if>
    <xsl:apply-templates select="rsm:CrossIndustryInvoice"/>
  </xsl:template>

  <xsl:template match="rsm:CrossIndustryInvoice">
    <xsl:variable name="document" select="rsm:ExchangedDocument"/>
    <invoice>
      <xsl:sequence select="r:source-namespace()"/>
      <xsl:sequence select="r:source-ids(.)"/>
      <xsl:sequence select="r:leaf('invoiceNumber', $document/ram:ID)"/>
      <xsl:sequence select="r:leaf('issueDate', $document/ram:IssueDateTime/udt:DateTimeString, 'date')"/>
      <xsl:sequence select="r:leaf('invoiceTypeCode', $document/ram:TypeCode)"/>
      <!-- a BT-6 equal to BT-5 says nothing and is not written (docs/canonical.md): read with BT-5 -->
      <xsl:sequence select="r:leaf('currencyCode', $settlement/ram:InvoiceCurrencyCode, 'text',
                                   $settlement/ram:TaxCurrencyCode[normalize-space(.) eq $currency])"/>
      <xsl:apply-templates select="$agreement/ram:SellerTradeParty" mode="party"/>
      <xsl:apply-templates select="$agreement/ram:BuyerTradeParty" mode="party"/>
      <xsl:call-template name="payment-instructions"/>
      <xsl:apply-templates select="$settlement/ram:SpecifiedTradeSettlementHeaderMonetarySummation[1]" mode="totals"/>
      <xsl:apply-templates select="$breakdowns" mode="vat-breakdown"/>
      <xsl:apply-templates select="$transaction/ram:IncludedSupplyChainTradeLineItem" mode="line"/>
      <xsl:sequence select="r:leaf('valueAddedTaxPointDate', $breakdowns/ram:TaxPointDate/udt:DateString, 'date')"/>
      <xsl:sequence select="r:leaf('vatAccountingCurrencyCode', $settlement/ram:TaxCurrencyCode[normalize-space(.) ne $currency])"/>
      <xsl:sequence select="r:leaf('buyerReference', $agreement/ram:BuyerReference)"/>
      <xsl:sequence select="r:leaf('projectReference', $agreement/ram:SpecifiedProcuringProject/ram:ID, 'text',
                                   $agreement/ram:SpecifiedProcuringProject/ram:Name[. eq $project-name])"/>
      <xsl:sequence select="r:leaf('contractReference', $agreement/ram:ContractReferencedDocument/ram:IssuerAssignedID)"/>
      <xsl:sequence select="r:leaf('purchaseOrderReference', $agreement/ram:BuyerOrderReferencedDocument/ram:IssuerAssignedID)"/>
      <xsl:sequence select="r:leaf('salesOrderReference', $agreement/ram:SellerOrderReferencedDocument/ram:IssuerAssignedID)"/>
      <xsl:sequence select="r:leaf('despatchAdviceReference', $delivery/ram:DespatchAdviceReferencedDocument/ram:IssuerAssignedID)"/>
      <xsl:sequence select="r:leaf('receivingAdviceReference', $delivery/ram:ReceivingAdviceReferencedDocument/ram:IssuerAssignedID)"/>
      <xsl:sequence select="r:leaf('tenderOrLotReference', $tender/ram:IssuerAssignedID, 'text', $tender/ram:TypeCode)"/>
      <xsl:sequence select="r:leaf('invoicedObjectIdentifier', $invoiced-object/ram:IssuerAssignedID, 'text', $invoiced-object/ram:TypeCode)"/>
      <xsl:sequence select="r:leaf('paymentTerms', $settlement/ram:SpecifiedTradePaymentTerms/ram:Description, 'verbatim')"/>
      <xsl:sequence select="r:leaf('invoiceNote', $notes[1]/ram:Content, 'verbatim')"/>
      <xsl:where-populated>
        <processControl>
          <xsl:sequence select="r:leaf('businessProcessType',
              rsm:ExchangedDocumentContext/ram:BusinessProcessSpecifiedDocumentContextParameter/ram:ID)"/>
        </processControl>
      </xsl:where-populated>
      <xsl:apply-templates select="$settlement/ram:InvoiceReferencedDocument[1]" mode="preceding-invoice">
        <xsl:with-param name="name" select="'precedingInvoiceReference'"/>
      </xsl:apply-templates>
      <xsl:apply-templates select="$settlement/ram:PayeeTradeParty" mode="party"/>
      <xsl:apply-templates select="$agreement/ram:SellerTaxRepresentativeTradeParty" mode="party"/>
      <xsl:call-template name="delivery-information"/>
      <xsl:apply-templates select="$settlement/ram:BillingSpecifiedPeriod[1]" mode="period">
        <xsl:with-param name="name" select="'invoicingPeriod'"/>
      </xsl:apply-templates>
      <xsl:call-template name="allowances-and-charges">
        <xsl:with-param name="level" select="'documentLevel'"/>
        <xsl:with-param name="items" select="$settlement/ram:SpecifiedTradeAllowanceCharge"/>
      </xsl:call-template>
      <xsl:apply-templates select="$settlement/ram:SpecifiedLogisticsServiceCharge[$extended]" mode="logistics-charge"/>
      <xsl:apply-templates select="$agreement/ram:AdditionalReferencedDocument[r:type-code(.) eq '916']" mode="supporting-document"/>
      <xsl:sequence select="r:leaf('paymentDueDate',
          $settlement/ram:SpecifiedTradePaymentTerms/ram:DueDateDateTime/udt:DateTimeString, 'date')"/>
      <xsl:sequence select="r:leaf('invoiceNoteSubjectCode', $notes[1]/ram:SubjectCode)"/>
      <xsl:apply-templates select="$notes[position() gt 1]" mode="further-note"/>
      <xsl:apply-templates select="$settlement/ram:InvoiceReferencedDocument[position() gt 1]" mode="preceding-invoice">
        <xsl:with-param name="name" select="'additionalPrecedingInvoiceReference'"/>
      </xsl:apply-templates>
      <xsl:call-template name="tax-point-date-code"/>
      <xsl:sequence select="r:leaf('invoicedObjectIdentifierSchemeId', $invoiced-object/ram:ReferenceTypeCode)"/>
      <xsl:sequence select="r:leaf('buyerAccountingReference', $settlement/ram:ReceivableSpecifiedTradeAccountingAccount/ram:ID)"/>
    </invoice>
  </xsl:template>

  <!-- ===== helpers ===== -->

  <xsl:function name="r:type-code" as="xs:string">
    <xsl:param name="document" as="element()"/>
    <xsl:sequence select="normalize-space($document/ram:TypeCode[1])"/>
  </xsl:function>

  <!-- A trade tax of type VAT (a missing type code counts as VAT, the only tax of EN 16931). -->
  <xsl:function name="r:is-vat" as="xs:boolean">
    <xsl:param name="tax" as="element()"/>
    <xsl:sequence select="empty($tax/ram:TypeCode) or normalize-space($tax/ram:TypeCode[1]) eq 'VAT'"/>
  </xsl:function>

  <!-- BT-8 on the breakdowns (one distinct value, CII-SR-462), UNTDID 2475 -> 2005; a code without equivalent
       is passed on as it is (the model refuses it). -->
  <xsl:template name="tax-point-date-code">
    <xsl:variable name="codes" select="$breakdowns/ram:DueDateTypeCode"/>
    <xsl:variable name="first" select="r:first($codes)"/>
    <xsl:if test="exists($first)">
      <xsl:variable name="code" select="normalize-space($first)"/>
      <xsl:sequence select="r:element('valueAddedTaxPointDateCode', ($tax-point-date-codes($code), $code)[1],
                                      $codes[normalize-space(.) eq $code])"/>
    </xsl:if>
  </xsl:template>

  <!-- ===== parties: BG-4, BG-7, BG-10, BG-11 ===== -->

  <!-- The fields each party has in the canonical schema (in schema order; the template writes that order). -->
  <xsl:variable name="party-fields" as="map(xs:string, xs:string*)" select="map{
      'SellerTradeParty': ('name', 'tradingName', 'identifier', 'legalRegistrationIdentifier', 'vatIdentifier',
          'taxRegistrationIdentifier', 'electronicAddress', 'electronicAddressSchemeId', 'postalAddress', 'contact',
          'identifierSchemeId', 'legalRegistrationIdentifierSchemeId', 'additionalLegalInformation', 'additionalIdentifier'),
      'BuyerTradeParty': ('name', 'tradingName', 'identifier', 'legalRegistrationIdentifier', 'vatIdentifier',
          'electronicAddress', 'electronicAddressSchemeId', 'postalAddress', 'contact', 'identifierSchemeId',
          'legalRegistrationIdentifierSchemeId'),
      'PayeeTradeParty': ('name', 'identifier', 'legalRegistrationIdentifier', 'identifierSchemeId',
          'legalRegistrationIdentifierSchemeId'),
      'SellerTaxRepresentativeTradeParty': ('name', 'vatIdentifier', 'postalAddress')}"/>
  <xsl:variable name="party-names" as="map(xs:string, xs:string)" select="map{
      'SellerTradeParty': 'seller', 'BuyerTradeParty': 'buyer', 'PayeeTradeParty': 'payee',
      'SellerTaxRepresentativeTradeParty': 'sellerTaxRepresentativeParty'}"/>

  <!-- A party's identifiers with a value (ram:ID, ram:GlobalID) in document order, or with `global-first` the
       GlobalIDs first: where EN 16931 takes one identifier, the one with a scheme. -->
  <xsl:function name="r:identifiers" as="element()*">
    <xsl:param name="party" as="element()?"/>
    <xsl:param name="global-first" as="xs:boolean"/>
    <xsl:variable name="ids" select="$party/(ram:ID | ram:GlobalID)[exists(r:first(.))]"/>
    <xsl:sequence select="if ($global-first) then ($ids[self::ram:GlobalID], $ids[self::ram:ID]) else $ids"/>
  </xsl:function>

  <xsl:template match="ram:SellerTradeParty | ram:BuyerTradeParty | ram:PayeeTradeParty | ram:SellerTaxRepresentativeTradeParty"
                mode="party">
    <!-- identifiers: the first is BT-29/46/60, further seller ones are additionalIdentifier (cii.xsl writes
         the ones without scheme as ram:ID before the ram:GlobalID ones). The buyer and the payee have one (BT-46,
         BT-60; UBL allows one, UBL-SR-16 / UBL-SR-20): a GlobalID beside an ID is that one, since its scheme
         (BT-46-1, BT-60-1) makes it the identifier any receiver can resolve; the ID stays a CII-only value. -->
    <xsl:variable name="ids" select="r:identifiers(., not(self::ram:SellerTradeParty))"/>
    <xsl:variable name="legal" select="r:first(ram:SpecifiedLegalOrganization/ram:ID)"/>
    <xsl:variable name="uri" select="r:first(ram:URIUniversalCommunication/ram:URIID)"/>
    <!-- only the fields of this party (written straight into the party element, not built and filtered) -->
    <xsl:variable name="fields" select="$party-fields(local-name())"/>
    <xsl:where-populated>
      <xsl:element name="{$party-names(local-name())}" namespace="{$r:canonical-ns}">
        <xsl:sequence select="r:leaf('name', ram:Name)"/>
        <xsl:if test="'tradingName' = $fields">
          <xsl:sequence select="r:leaf('tradingName', ram:SpecifiedLegalOrganization/ram:TradingBusinessName)"/>
        </xsl:if>
        <xsl:if test="'identifier' = $fields">
          <xsl:sequence select="r:leaf('identifier', $ids[1])"/>
        </xsl:if>
        <xsl:if test="'legalRegistrationIdentifier' = $fields">
          <xsl:sequence select="r:leaf('legalRegistrationIdentifier', $legal)"/>
        </xsl:if>
        <xsl:if test="'vatIdentifier' = $fields">
          <xsl:sequence select="r:tax-registration('vatIdentifier', ., 'VA')"/>
        </xsl:if>
        <xsl:if test="'taxRegistrationIdentifier' = $fields">
          <xsl:sequence select="r:tax-registration('taxRegistrationIdentifier', ., 'FC')"/>
        </xsl:if>
        <xsl:if test="'electronicAddress' = $fields">
          <xsl:sequence select="r:leaf('electronicAddress', $uri)"/>
          <xsl:sequence select="r:leaf('electronicAddressSchemeId', $uri/@schemeID)"/>
        </xsl:if>
        <xsl:if test="'postalAddress' = $fields">
          <xsl:apply-templates select="ram:PostalTradeAddress[1]" mode="address"/>
        </xsl:if>
        <xsl:if test="'contact' = $fields">
          <xsl:apply-templates select="ram:DefinedTradeContact[1]" mode="contact"/>
        </xsl:if>
        <xsl:if test="'identifierSchemeId' = $fields">
          <xsl:sequence select="r:leaf('identifierSchemeId', $ids[1]/@schemeID)"/>
        </xsl:if>
        <xsl:if test="'legalRegistrationIdentifierSchemeId' = $fields">
          <xsl:sequence select="r:leaf('legalRegistrationIdentifierSchemeId', $legal/@schemeID)"/>
        </xsl:if>
        <xsl:if test="'additionalLegalInformation' = $fields">
          <xsl:sequence select="r:leaf('additionalLegalInformation', ram:Description)"/>
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

  <!-- BT-31 (VA), BT-32 (FC), BT-48, BT-63: the tax registration with that scheme, read with the scheme -->
  <xsl:function name="r:tax-registration" as="element()?">
    <xsl:param name="name" as="xs:string"/>
    <xsl:param name="party" as="element()"/>
    <xsl:param name="scheme" as="xs:string"/>
    <xsl:variable name="id" select="r:first($party/ram:SpecifiedTaxRegistration/ram:ID[normalize-space(@schemeID) eq $scheme])"/>
    <xsl:sequence select="r:leaf($name, $id, 'text', $id/@schemeID)"/>
  </xsl:function>

  <!-- BG-5, BG-8, BG-12 (postalAddress), BG-15 (address of the ship-to party) -->
  <xsl:template match="ram:PostalTradeAddress" mode="address">
    <xsl:param name="name" as="xs:string" select="'postalAddress'"/>
    <xsl:where-populated>
      <xsl:element name="{$name}" namespace="{$r:canonical-ns}">
        <xsl:sequence select="r:leaf('addressLine1', ram:LineOne),
            r:leaf('addressLine2', ram:LineTwo),
            r:leaf('addressLine3', ram:LineThree),
            r:leaf('city', ram:CityName),
            r:leaf('postcode', ram:PostcodeCode),
            r:leaf('countrySubdivision', ram:CountrySubDivisionName),
            r:leaf('countryCode', ram:CountryID)"/>
      </xsl:element>
    </xsl:where-populated>
  </xsl:template>

  <!-- BG-6, BG-9 (the contact point is a person or, without one, a department) -->
  <xsl:template match="ram:DefinedTradeContact" mode="contact">
    <xsl:where-populated>
      <contact>
        <xsl:sequence select="r:leaf('contactPoint', (ram:PersonName, ram:DepartmentName)),
            r:leaf('telephone', ram:TelephoneUniversalCommunication/ram:CompleteNumber),
            r:leaf('email', ram:EmailURIUniversalCommunication/ram:URIID)"/>
      </contact>
    </xsl:where-populated>
  </xsl:template>

  <!-- ===== BG-13 delivery, BG-14 / BG-26 periods, BG-3 preceding invoices, BG-1 further notes ===== -->

  <xsl:template name="delivery-information">
    <xsl:variable name="ship-to" select="$delivery/ram:ShipToTradeParty[1]"/>
    <xsl:variable name="location" select="r:identifiers($ship-to, true())[1]"/>
    <xsl:where-populated>
      <deliveryInformation>
        <xsl:sequence select="r:leaf('partyName', $ship-to/ram:Name)"/>
        <xsl:sequence select="r:leaf('locationIdentifier', $location)"/>
        <xsl:sequence select="r:leaf('actualDeliveryDate',
            $delivery/ram:ActualDeliverySupplyChainEvent/ram:OccurrenceDateTime/udt:DateTimeString, 'date')"/>
        <xsl:apply-templates select="$ship-to/ram:PostalTradeAddress[1]" mode="address">
          <xsl:with-param name="name" select="'address'"/>
        </xsl:apply-templates>
        <xsl:sequence select="r:leaf('locationIdentifierSchemeId', $location/@schemeID)"/>
      </deliveryInformation>
    </xsl:where-populated>
  </xsl:template>

  <xsl:template match="ram:BillingSpecifiedPeriod" mode="period">
    <xsl:param name="name" as="xs:string"/>
    <xsl:where-populated>
      <xsl:element name="{$name}" namespace="{$r:canonical-ns}">
        <xsl:sequence select="r:leaf('startDate', ram:StartDateTime/udt:DateTimeString, 'date'),
            r:leaf('endDate', ram:EndDateTime/udt:DateTimeString, 'date')"/>
      </xsl:element>
    </xsl:where-populated>
  </xsl:template>

  <xsl:template match="ram:InvoiceReferencedDocument" mode="preceding-invoice">
    <xsl:param name="name" as="xs:string"/>
    <xsl:where-populated>
      <xsl:element name="{$name}" namespace="{$r:canonical-ns}">
        <xsl:sequence select="r:leaf('documentReference', ram:IssuerAssignedID),
            r:leaf('issueDate', ram:FormattedIssueDateTime/qdt:DateTimeString, 'date')"/>
      </xsl:element>
    </xsl:where-populated>
  </xsl:template>

  <xsl:template match="ram:IncludedNote" mode="further-note">
    <xsl:where-populated>
      <additionalInvoiceNote>
        <xsl:sequence select="r:leaf('invoiceNote', ram:Content, 'verbatim'),
            r:leaf('invoiceNoteSubjectCode', ram:SubjectCode)"/>
      </additionalInvoiceNote>
    </xsl:where-populated>
  </xsl:template>

  <!-- ===== BG-24 ===== -->
  <xsl:template match="ram:AdditionalReferencedDocument" mode="supporting-document">
    <xsl:variable name="attachment" select="r:first(ram:AttachmentBinaryObject)"/>
    <xsl:where-populated>
      <additionalSupportingDocument>
        <xsl:sequence select="r:src(ram:TypeCode)"/>
        <xsl:sequence select="r:leaf('reference', ram:IssuerAssignedID),
            r:leaf('description', ram:Name),
            r:leaf('externalLocation', ram:URIID),
            r:leaf('attachedDocument', $attachment),
            r:leaf('attachedDocumentMimeType', $attachment/@mimeCode),
            r:leaf('attachedDocumentFilename', $attachment/@filename)"/>
      </additionalSupportingDocument>
    </xsl:where-populated>
  </xsl:template>

  <!-- ===== BG-16 payment instructions with BG-17, BG-18, BG-19 ===== -->

  <!-- The first payment means gives the code and text (a further means with the same code is read with it);
       the first means with a creditor account is BG-17, each further one an additionalCreditTransfer. -->
  <xsl:template name="payment-instructions">
    <xsl:variable name="means" select="$settlement/ram:SpecifiedTradeSettlementPaymentMeans"/>
    <xsl:variable name="transfers" select="$means[ram:PayeePartyCreditorFinancialAccount]"/>
    <xsl:variable name="card" select="$means/ram:ApplicableTradeSettlementFinancialCard[1]"/>
    <xsl:where-populated>
      <paymentInstructions>
        <xsl:sequence select="r:leaf('meansCode', $means/ram:TypeCode)"/>
        <xsl:sequence select="r:leaf('meansText', $means/ram:Information)"/>
        <xsl:sequence select="r:leaf('remittanceInformation', $settlement/ram:PaymentReference)"/>
        <xsl:apply-templates select="$transfers[1]" mode="credit-transfer">
          <xsl:with-param name="name" select="'creditTransfer'"/>
        </xsl:apply-templates>
        <xsl:where-populated>
          <paymentCardInformation>
            <xsl:sequence select="r:leaf('primaryAccountNumber', $card/ram:ID),
                r:leaf('cardHolderName', $card/ram:CardholderName)"/>
          </paymentCardInformation>
        </xsl:where-populated>
        <xsl:where-populated>
          <directDebit>
            <xsl:sequence select="r:leaf('mandateReferenceIdentifier', $settlement/ram:SpecifiedTradePaymentTerms/ram:DirectDebitMandateID),
                r:leaf('debtorAccountIdentifier', $means/ram:PayerPartyDebtorFinancialAccount/ram:IBANID),
                r:leaf('creditorIdentifier', $settlement/ram:CreditorReferenceID)"/>
          </directDebit>
        </xsl:where-populated>
        <xsl:apply-templates select="$transfers[position() gt 1]" mode="credit-transfer">
          <xsl:with-param name="name" select="'additionalCreditTransfer'"/>
        </xsl:apply-templates>
      </paymentInstructions>
    </xsl:where-populated>
  </xsl:template>

  <!-- BG-17: an IBAN or, without one, a proprietary account id -->
  <xsl:template match="ram:SpecifiedTradeSettlementPaymentMeans" mode="credit-transfer">
    <xsl:param name="name" as="xs:string"/>
    <xsl:variable name="account" select="ram:PayeePartyCreditorFinancialAccount[1]"/>
    <xsl:where-populated>
      <xsl:element name="{$name}" namespace="{$r:canonical-ns}">
        <xsl:sequence select="r:leaf('accountIdentifier', ($account/ram:IBANID, $account/ram:ProprietaryID)),
            r:leaf('accountName', $account/ram:AccountName),
            r:leaf('serviceProviderIdentifier', ram:PayeeSpecifiedCreditorFinancialInstitution/ram:BICID)"/>
      </xsl:element>
    </xsl:where-populated>
  </xsl:template>

  <!-- ===== BG-22 totals (BT-110 in the invoice currency, BT-111 in the VAT accounting currency) ===== -->
  <xsl:template match="ram:SpecifiedTradeSettlementHeaderMonetarySummation" mode="totals">
    <xsl:variable name="tax-totals" select="ram:TaxTotalAmount"/>
    <xsl:where-populated>
      <documentTotals>
        <xsl:sequence select="r:amount('lineExtensionAmount', ram:LineTotalAmount, $currency),
            r:amount('allowanceTotalAmount', ram:AllowanceTotalAmount, $currency),
            r:amount('chargeTotalAmount', ram:ChargeTotalAmount, $currency),
            r:amount('taxExclusiveAmount', ram:TaxBasisTotalAmount, $currency),
            r:amount('taxInclusiveAmount', ram:GrandTotalAmount, $currency),
            r:amount('prepaidAmount', ram:TotalPrepaidAmount, $currency),
            r:amount('payableRoundingAmount', ram:RoundingAmount, $currency),
            r:amount('payableAmount', ram:DuePayableAmount, $currency),
            r:amount('taxTotalAmount', $tax-totals[empty(@currencyID) or normalize-space(@currencyID) eq $currency], $currency),
            r:amount('taxTotalAmountInAccountingCurrency',
            $tax-totals[$tax-currency ne $currency][normalize-space(@currencyID) eq $tax-currency], $tax-currency)"/>
      </documentTotals>
    </xsl:where-populated>
  </xsl:template>

  <!-- ===== BG-23 ===== -->
  <xsl:template match="ram:ApplicableTradeTax" mode="vat-breakdown">
    <xsl:where-populated>
      <vatBreakdown>
        <xsl:sequence select="r:src(ram:TypeCode)"/>
        <xsl:sequence select="r:leaf('vatCategoryCode', ram:CategoryCode),
            r:leaf('vatCategoryRate', ram:RateApplicablePercent, 'decimal'),
            r:amount('vatCategoryTaxableAmount', ram:BasisAmount, $currency),
            r:amount('vatCategoryTaxAmount', ram:CalculatedAmount, $currency),
            r:leaf('exemptionReason', ram:ExemptionReason),
            r:leaf('exemptionReasonCode', ram:ExemptionReasonCode)"/>
      </vatBreakdown>
    </xsl:where-populated>
  </xsl:template>

  <!-- ===== BG-20, BG-21 (documentLevel), BG-27, BG-28 (invoiceLine): the charge indicator picks the element
       (the schema wants the allowances before the charges); only the document level carries a VAT category ===== -->
  <xsl:template name="allowances-and-charges">
    <xsl:param name="level" as="xs:string"/>
    <xsl:param name="items" as="element(ram:SpecifiedTradeAllowanceCharge)*"/>
    <xsl:apply-templates select="$items[r:is-false(ram:ChargeIndicator/udt:Indicator)]" mode="allowance-charge">
      <xsl:with-param name="name" select="$level || 'Allowance'"/>
    </xsl:apply-templates>
    <xsl:apply-templates select="$items[r:is-true(ram:ChargeIndicator/udt:Indicator)]" mode="allowance-charge">
      <xsl:with-param name="name" select="$level || 'Charge'"/>
    </xsl:apply-templates>
  </xsl:template>

  <xsl:template match="ram:SpecifiedTradeAllowanceCharge" mode="allowance-charge">
    <xsl:param name="name" as="xs:string"/>
    <xsl:variable name="tax" select="ram:CategoryTradeTax[1][starts-with($name, 'documentLevel')][r:is-vat(.)]"/>
    <xsl:where-populated>
      <xsl:element name="{$name}" namespace="{$r:canonical-ns}">
        <xsl:sequence select="r:src((ram:ChargeIndicator/udt:Indicator, $tax/ram:TypeCode))"/>
        <xsl:sequence select="r:amount('amount', ram:ActualAmount, $currency),
            r:leaf('percentage', ram:CalculationPercent, 'decimal'),
            r:amount('baseAmount', ram:BasisAmount, $currency),
            r:leaf('vatCategoryCode', $tax/ram:CategoryCode),
            r:leaf('vatRate', $tax/ram:RateApplicablePercent, 'decimal'),
            r:leaf('reason', ram:Reason),
            r:leaf('reasonCode', ram:ReasonCode)"/>
      </xsl:element>
    </xsl:where-populated>
  </xsl:template>

  <!-- ===== Factur-X EXTENDED's logistics service charges (a description, the amount BT-X-272, the VAT category and
       rate BT-X-273 / BT-X-274) are BG-21 document level charges in EN 16931 terms: the EXTENDED rules count
       them into the sum of charges (BR-FXEXT-CO-12: BT-108 = sum of BT-99 + sum of BT-X-272) and into each VAT
       breakdown's taxable amount (BR-FXEXT-S-08 and the like) exactly as a BG-21. Read as one, after the trade
       charges (reason BT-104: the description), so that a conversion writes a BG-21 and the totals still add up.
       Outside EXTENDED no rule counts them (the CEN rules warn of the element, CII-SR-195): not read. ===== -->
  <xsl:template match="ram:SpecifiedLogisticsServiceCharge" mode="logistics-charge">
    <xsl:variable name="tax" select="ram:AppliedTradeTax[1][r:is-vat(.)]"/>
    <xsl:where-populated>
      <documentLevelCharge>
        <xsl:sequence select="r:src($tax/ram:TypeCode)"/>
        <xsl:sequence select="r:amount('amount', ram:AppliedAmount, $currency),
            r:leaf('vatCategoryCode', $tax/ram:CategoryCode),
            r:leaf('vatRate', $tax/ram:RateApplicablePercent, 'decimal'),
            r:leaf('reason', ram:Description)"/>
      </documentLevelCharge>
    </xsl:where-populated>
  </xsl:template>

  <!-- ===== BG-25 invoice line ===== -->
  <xsl:template match="ram:IncludedSupplyChainTradeLineItem" mode="line">
    <xsl:variable name="line-document" select="ram:AssociatedDocumentLineDocument"/>
    <xsl:variable name="line-agreement" select="ram:SpecifiedLineTradeAgreement"/>
    <xsl:variable name="line-settlement" select="ram:SpecifiedLineTradeSettlement"/>
    <xsl:variable name="quantity" select="r:first(ram:SpecifiedLineTradeDelivery/ram:BilledQuantity)"/>
    <!-- BT-128: the line's referenced document of type 130. EN 16931 binds no other document to a line, so an
         untyped one is BT-128 too (as in the CEN example XRechnung-O; UBL's line reference likewise); Factur-X
         EXTENDED allows types 50, 130 and 916 there (its code list 18): in it only a 130 is BT-128. -->
    <xsl:variable name="object" select="$line-settlement/ram:AdditionalReferencedDocument[
        r:type-code(.) = ('130', if ($extended) then () else '')][1]"/>
    <xsl:where-populated>
      <invoiceLine>
        <xsl:sequence select="r:leaf('lineIdentifier', $line-document/ram:LineID)"/>
        <xsl:apply-templates select="ram:SpecifiedTradeProduct[1]" mode="item"/>
        <xsl:sequence select="r:leaf('note', $line-document/ram:IncludedNote/ram:Content, 'verbatim')"/>
        <xsl:sequence select="r:leaf('quantity', $quantity, 'decimal')"/>
        <xsl:sequence select="r:leaf('unitCode', $quantity/@unitCode)"/>
        <xsl:sequence select="r:amount('netAmount',
            $line-settlement/ram:SpecifiedTradeSettlementLineMonetarySummation/ram:LineTotalAmount, $currency)"/>
        <xsl:sequence select="r:leaf('referencedPurchaseOrderLine', $line-agreement/ram:BuyerOrderReferencedDocument/ram:LineID)"/>
        <xsl:sequence select="r:leaf('buyerAccountingReference', $line-settlement/ram:ReceivableSpecifiedTradeAccountingAccount/ram:ID)"/>
        <xsl:apply-templates select="$line-settlement/ram:BillingSpecifiedPeriod[1]" mode="period">
          <xsl:with-param name="name" select="'invoiceLinePeriod'"/>
        </xsl:apply-templates>
        <xsl:call-template name="allowances-and-charges">
          <xsl:with-param name="level" select="'invoiceLine'"/>
          <xsl:with-param name="items" select="$line-settlement/ram:SpecifiedTradeAllowanceCharge"/>
        </xsl:call-template>
        <xsl:apply-templates select="$line-agreement" mode="price"/>
        <xsl:apply-templates select="$line-settlement/ram:ApplicableTradeTax[r:is-vat(.)][1]" mode="line-vat"/>
        <xsl:sequence select="r:leaf('objectIdentifier', $object/ram:IssuerAssignedID, 'text', $object/ram:TypeCode)"/>
        <xsl:sequence select="r:leaf('objectIdentifierSchemeId', $object/ram:ReferenceTypeCode)"/>
        <!-- Factur-X EXTENDED's line hierarchy; elsewhere EN 16931 has none (its CII binding says neither element
             should be present, CII-SR-036 / -038) and counts each line as it stands: left unread, so named in
             `unmapped` as content -->
        <xsl:sequence select="r:leaf('parentLineIdentifier', $line-document/ram:ParentLineID[$extended]),
            r:leaf('lineStatusReasonCode', $line-document/ram:LineStatusReasonCode[$extended])"/>
      </invoiceLine>
    </xsl:where-populated>
  </xsl:template>

  <!-- BG-31 with BG-32 and the classifications (the first is BT-158, further ones additionalClassifiedIdentifier) -->
  <xsl:template match="ram:SpecifiedTradeProduct" mode="item">
    <xsl:variable name="standard" select="r:first(ram:GlobalID)"/>
    <xsl:variable name="classes" select="ram:DesignatedProductClassification/ram:ClassCode[exists(r:first(.))]"/>
    <xsl:where-populated>
      <itemInformation>
        <xsl:sequence select="r:leaf('name', ram:Name)"/>
        <xsl:sequence select="r:leaf('description', ram:Description)"/>
        <xsl:sequence select="r:leaf('sellersIdentifier', ram:SellerAssignedID)"/>
        <xsl:sequence select="r:leaf('buyersIdentifier', ram:BuyerAssignedID)"/>
        <xsl:sequence select="r:leaf('standardIdentifier', $standard)"/>
        <xsl:sequence select="r:leaf('classifiedIdentifier', $classes[1])"/>
        <xsl:sequence select="r:leaf('countryOfOrigin', ram:OriginTradeCountry/ram:ID)"/>
        <xsl:for-each select="ram:ApplicableProductCharacteristic">
          <xsl:where-populated>
            <itemAttribute>
              <xsl:sequence select="r:leaf('name', ram:Description), r:leaf('value', ram:Value)"/>
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

  <!-- BG-29: net price (BT-146), gross price (BT-148) with its discount (BT-147), base quantity (BT-149/150,
       which cii.xsl writes on both prices: the net price's, else the gross price's) -->
  <xsl:template match="ram:SpecifiedLineTradeAgreement" mode="price">
    <xsl:variable name="net" select="ram:NetPriceProductTradePrice[1]"/>
    <xsl:variable name="gross" select="ram:GrossPriceProductTradePrice[1]"/>
    <xsl:variable name="basis" select="$net/ram:BasisQuantity, $gross/ram:BasisQuantity"/>
    <xsl:variable name="discount" select="$gross/ram:AppliedTradeAllowanceCharge[r:is-false(ram:ChargeIndicator/udt:Indicator)][1]"/>
    <xsl:where-populated>
      <priceDetails>
        <xsl:sequence select="r:amount('netPrice', $net/ram:ChargeAmount, $currency),
            r:amount('grossPrice', $gross/ram:ChargeAmount, $currency),
            r:leaf('priceBasisQuantity', $basis, 'decimal'),
            r:leaf('basisUnitCode', $basis ! @unitCode),
            r:leaf('priceDiscount', $discount/ram:ActualAmount, 'decimal',
            ($discount/ram:ActualAmount/@currencyID[normalize-space(.) eq $currency], $discount/ram:ChargeIndicator/udt:Indicator))"/>
      </priceDetails>
    </xsl:where-populated>
  </xsl:template>

  <!-- BG-30 -->
  <xsl:template match="ram:ApplicableTradeTax" mode="line-vat">
    <xsl:where-populated>
      <lineVatInformation>
        <xsl:sequence select="r:src(ram:TypeCode)"/>
        <xsl:sequence select="r:leaf('vatCategoryCode', ram:CategoryCode),
            r:leaf('vatRate', ram:RateApplicablePercent, 'decimal')"/>
      </lineVatInformation>
    </xsl:where-populated>
  </xsl:template>

</xsl:stylesheet>
