<?xml version="1.0" encoding="UTF-8"?>
<!-- Canonical invoice (docs/canonical.md) -> UN/CEFACT CII D16B CrossIndustryInvoice, per the EN 16931-3-3
     syntax binding. Element order follows the D16B XSD. Spec differences are parameters, never copies:
     the same output with specification-id urn:cen.eu:en16931:2017 is the Factur-X EN16931 document. -->
<xsl:stylesheet version="3.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:xs="http://www.w3.org/2001/XMLSchema"
    xmlns:f="urn:einvoice-pipeline:xslt-functions"
    xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
    xmlns:ram="urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
    xmlns:qdt="urn:un:unece:uncefact:data:standard:QualifiedDataType:100"
    xmlns:udt="urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100"
    xpath-default-namespace="urn:einvoice-pipeline:canonical:1"
    exclude-result-prefixes="xs f">

  <xsl:include href="common/format.xsl"/>
  <xsl:include href="common/codes.xsl"/>

  <!-- Indented, one element per line, so that a finding's line means something and a diff is readable. Saxon's
       serialiser adds whitespace only between elements, never inside one that holds text (tests/test_indent.py).
       pipeline.xslt.run_to_tree serialises the same way; pipeline.xslt.run_stylesheet(indent=False) for one line. -->
  <xsl:output method="xml" encoding="UTF-8" indent="yes"/>

  <!-- BT-24, e.g. urn:cen.eu:en16931:2017 or ...#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0 -->
  <xsl:param name="specification-id" as="xs:string" select="'urn:cen.eu:en16931:2017'"/>
  <!-- BT-23 when the document carries none; empty = none. -->
  <xsl:param name="business-process" as="xs:string" select="''"/>
  <!-- CII names the project (BT-11) too; EN 16931 has no term for the name. -->
  <xsl:param name="project-name" as="xs:string" select="'Project reference'"/>
  <!-- A contact's department that a CII source states beside the person (BT-41 / BT-56 take the person; EN 16931 has
       no term for it): a conversion to CII keeps it. Empty = none. -->
  <xsl:param name="seller-contact-department" as="xs:string" select="''"/>
  <xsl:param name="buyer-contact-department" as="xs:string" select="''"/>
  <!-- The ram:ID a CII source states beside the GlobalID of its buyer, payee or ship-to location (EN 16931 takes one
       identifier there, BT-46 / BT-60 / BT-71: the GlobalID): a conversion to CII keeps it. Empty = none. -->
  <xsl:param name="buyer-other-id" as="xs:string" select="''"/>
  <xsl:param name="payee-other-id" as="xs:string" select="''"/>
  <xsl:param name="ship-to-other-id" as="xs:string" select="''"/>

  <xsl:variable name="currency" select="normalize-space(/invoice/currencyCode)"/>
  <!-- BT-8: the semantic model's UNTDID 2005 codes and their UNTDID 2475 equivalents in CII (BR-CL-06) -->
  <xsl:variable name="tax-point-date-codes" as="map(xs:string, xs:string)" select="map{'3': '5', '35': '29', '432': '72'}"/>

  <xsl:template match="/">
    <xsl:if test="not(invoice)">
      <xsl:message terminate="yes">cii.xsl: the input is not a canonical invoice (urn:einvoice-pipeline:canonical:1 invoice)</xsl:message>
    </xsl:if>
    <xsl:apply-templates select="invoice"/>
  </xsl:template>

  <xsl:template match="invoice">
    <xsl:if test="additionalPrecedingInvoiceReference">
      <xsl:message terminate="yes">cii.xsl: CII D16B carries one preceding invoice reference (BG-3); several need UBL</xsl:message>
    </xsl:if>
    <rsm:CrossIndustryInvoice>
      <rsm:ExchangedDocumentContext>
        <xsl:variable name="bp" select="(processControl/businessProcessType, $business-process[. ne ''])[1]"/>
        <xsl:if test="exists($bp)">
          <ram:BusinessProcessSpecifiedDocumentContextParameter>
            <ram:ID><xsl:value-of select="$bp"/></ram:ID>
          </ram:BusinessProcessSpecifiedDocumentContextParameter>
        </xsl:if>
        <ram:GuidelineSpecifiedDocumentContextParameter>
          <ram:ID><xsl:value-of select="$specification-id"/></ram:ID>
        </ram:GuidelineSpecifiedDocumentContextParameter>
      </rsm:ExchangedDocumentContext>
      <rsm:ExchangedDocument>
        <ram:ID><xsl:value-of select="invoiceNumber"/></ram:ID>
        <ram:TypeCode><xsl:value-of select="invoiceTypeCode"/></ram:TypeCode>
        <ram:IssueDateTime>
          <udt:DateTimeString format="102"><xsl:value-of select="f:date102(issueDate)"/></udt:DateTimeString>
        </ram:IssueDateTime>
        <xsl:apply-templates select="invoiceNote, additionalInvoiceNote/invoiceNote"/>
      </rsm:ExchangedDocument>
      <rsm:SupplyChainTradeTransaction>
        <xsl:apply-templates select="invoiceLine"/>
        <xsl:call-template name="agreement"/>
        <xsl:call-template name="delivery"/>
        <xsl:call-template name="settlement"/>
      </rsm:SupplyChainTradeTransaction>
    </rsm:CrossIndustryInvoice>
  </xsl:template>

  <!-- BG-1 (the first note, or one of the further ones: its subject code is its sibling either way) -->
  <xsl:template match="invoiceNote">
    <ram:IncludedNote>
      <ram:Content><xsl:value-of select="."/></ram:Content>
      <xsl:for-each select="../invoiceNoteSubjectCode">
        <ram:SubjectCode><xsl:value-of select="."/></ram:SubjectCode>
      </xsl:for-each>
    </ram:IncludedNote>
  </xsl:template>

  <!-- ===== Header trade agreement: parties and references ===== -->
  <xsl:template name="agreement">
    <ram:ApplicableHeaderTradeAgreement>
      <xsl:for-each select="buyerReference">
        <ram:BuyerReference><xsl:value-of select="."/></ram:BuyerReference>
      </xsl:for-each>
      <xsl:apply-templates select="seller" mode="party"/>
      <xsl:apply-templates select="buyer" mode="party"/>
      <xsl:apply-templates select="sellerTaxRepresentativeParty" mode="party"/>
      <xsl:for-each select="salesOrderReference">
        <ram:SellerOrderReferencedDocument><ram:IssuerAssignedID><xsl:value-of select="."/></ram:IssuerAssignedID></ram:SellerOrderReferencedDocument>
      </xsl:for-each>
      <xsl:for-each select="purchaseOrderReference">
        <ram:BuyerOrderReferencedDocument><ram:IssuerAssignedID><xsl:value-of select="."/></ram:IssuerAssignedID></ram:BuyerOrderReferencedDocument>
      </xsl:for-each>
      <xsl:for-each select="contractReference">
        <ram:ContractReferencedDocument><ram:IssuerAssignedID><xsl:value-of select="."/></ram:IssuerAssignedID></ram:ContractReferencedDocument>
      </xsl:for-each>
      <xsl:apply-templates select="additionalSupportingDocument"/>
      <xsl:for-each select="tenderOrLotReference">
        <ram:AdditionalReferencedDocument>
          <ram:IssuerAssignedID><xsl:value-of select="."/></ram:IssuerAssignedID>
          <ram:TypeCode>50</ram:TypeCode>
        </ram:AdditionalReferencedDocument>
      </xsl:for-each>
      <xsl:apply-templates select="invoicedObjectIdentifier"/>
      <xsl:for-each select="projectReference">
        <ram:SpecifiedProcuringProject>
          <ram:ID><xsl:value-of select="."/></ram:ID>
          <ram:Name><xsl:value-of select="$project-name"/></ram:Name>
        </ram:SpecifiedProcuringProject>
      </xsl:for-each>
    </ram:ApplicableHeaderTradeAgreement>
  </xsl:template>

  <!-- BT-18 / BT-128 with their scheme (BT-18-1 / BT-128-1): a referenced document of type 130 -->
  <xsl:template match="invoicedObjectIdentifier | objectIdentifier">
    <ram:AdditionalReferencedDocument>
      <ram:IssuerAssignedID><xsl:value-of select="."/></ram:IssuerAssignedID>
      <ram:TypeCode>130</ram:TypeCode>
      <xsl:for-each select="../(invoicedObjectIdentifierSchemeId, objectIdentifierSchemeId)">
        <ram:ReferenceTypeCode><xsl:value-of select="."/></ram:ReferenceTypeCode>
      </xsl:for-each>
    </ram:AdditionalReferencedDocument>
  </xsl:template>

  <!-- BG-24 -->
  <xsl:template match="additionalSupportingDocument">
    <ram:AdditionalReferencedDocument>
      <ram:IssuerAssignedID><xsl:value-of select="reference"/></ram:IssuerAssignedID>
      <xsl:for-each select="externalLocation">
        <ram:URIID><xsl:value-of select="."/></ram:URIID>
      </xsl:for-each>
      <ram:TypeCode>916</ram:TypeCode>
      <xsl:for-each select="description">
        <ram:Name><xsl:value-of select="."/></ram:Name>
      </xsl:for-each>
      <xsl:for-each select="attachedDocument">
        <ram:AttachmentBinaryObject>
          <xsl:for-each select="../attachedDocumentMimeType"><xsl:attribute name="mimeCode" select="."/></xsl:for-each>
          <xsl:for-each select="../attachedDocumentFilename"><xsl:attribute name="filename" select="."/></xsl:for-each>
          <xsl:value-of select="."/>
        </ram:AttachmentBinaryObject>
      </xsl:for-each>
    </ram:AdditionalReferencedDocument>
  </xsl:template>

  <!-- Parties: one template for BG-4, BG-7, BG-10, BG-11, element name from the role. -->
  <xsl:template match="seller | buyer | payee | sellerTaxRepresentativeParty" mode="party">
    <xsl:variable name="element" select="map{
        'seller': 'ram:SellerTradeParty', 'buyer': 'ram:BuyerTradeParty',
        'payee': 'ram:PayeeTradeParty', 'sellerTaxRepresentativeParty': 'ram:SellerTaxRepresentativeTradeParty'}(local-name())"/>
    <xsl:element name="{$element}">
      <xsl:call-template name="identifiers">
        <xsl:with-param name="ids" select="identifier, additionalIdentifier/identifier"/>
        <xsl:with-param name="other" select="if (self::buyer) then $buyer-other-id
                                             else if (self::payee) then $payee-other-id else ''"/>
      </xsl:call-template>
      <ram:Name><xsl:value-of select="name"/></ram:Name>
      <xsl:for-each select="additionalLegalInformation">
        <ram:Description><xsl:value-of select="."/></ram:Description>
      </xsl:for-each>
      <xsl:if test="legalRegistrationIdentifier or tradingName">
        <ram:SpecifiedLegalOrganization>
          <xsl:for-each select="legalRegistrationIdentifier">
            <ram:ID>
              <xsl:for-each select="../legalRegistrationIdentifierSchemeId"><xsl:attribute name="schemeID" select="."/></xsl:for-each>
              <xsl:value-of select="."/>
            </ram:ID>
          </xsl:for-each>
          <xsl:for-each select="tradingName">
            <ram:TradingBusinessName><xsl:value-of select="."/></ram:TradingBusinessName>
          </xsl:for-each>
        </ram:SpecifiedLegalOrganization>
      </xsl:if>
      <xsl:apply-templates select="contact"/>
      <xsl:apply-templates select="postalAddress"/>
      <xsl:for-each select="electronicAddress">
        <ram:URIUniversalCommunication>
          <ram:URIID>
            <xsl:for-each select="../electronicAddressSchemeId"><xsl:attribute name="schemeID" select="."/></xsl:for-each>
            <xsl:value-of select="."/>
          </ram:URIID>
        </ram:URIUniversalCommunication>
      </xsl:for-each>
      <xsl:for-each select="vatIdentifier">
        <ram:SpecifiedTaxRegistration><ram:ID schemeID="VA"><xsl:value-of select="."/></ram:ID></ram:SpecifiedTaxRegistration>
      </xsl:for-each>
      <xsl:for-each select="taxRegistrationIdentifier">
        <ram:SpecifiedTaxRegistration><ram:ID schemeID="FC"><xsl:value-of select="."/></ram:ID></ram:SpecifiedTaxRegistration>
      </xsl:for-each>
    </xsl:element>
  </xsl:template>

  <!-- Party/location identifiers: with a scheme (ISO 6523 ICD) a GlobalID, without one a plain ID; the D16B
       schema wants every ID before the first GlobalID. -->
  <xsl:template name="identifiers">
    <xsl:param name="ids" as="element()*"/>
    <xsl:param name="other" as="xs:string" select="''"/>
    <xsl:for-each select="$ids[not(f:scheme-of(.))]"><ram:ID><xsl:value-of select="."/></ram:ID></xsl:for-each>
    <xsl:if test="$other"><ram:ID><xsl:value-of select="$other"/></ram:ID></xsl:if>
    <xsl:for-each select="$ids[f:scheme-of(.)]">
      <ram:GlobalID schemeID="{f:scheme-of(.)}"><xsl:value-of select="."/></ram:GlobalID>
    </xsl:for-each>
  </xsl:template>

  <!-- The scheme of an identifier: its sibling named like it plus "SchemeId" (identifierSchemeId, ...). -->
  <xsl:function name="f:scheme-of" as="element()?">
    <xsl:param name="id" as="element()"/>
    <xsl:sequence select="$id/../*[local-name() eq local-name($id) || 'SchemeId']"/>
  </xsl:function>

  <!-- BG-6, BG-9 -->
  <xsl:template match="contact">
    <ram:DefinedTradeContact>
      <xsl:for-each select="contactPoint">
        <ram:PersonName><xsl:value-of select="."/></ram:PersonName>
      </xsl:for-each>
      <xsl:variable name="department" select="if (parent::seller) then $seller-contact-department
                                              else if (parent::buyer) then $buyer-contact-department else ''"/>
      <xsl:if test="$department ne ''"><ram:DepartmentName><xsl:value-of select="$department"/></ram:DepartmentName></xsl:if>
      <xsl:for-each select="telephone">
        <ram:TelephoneUniversalCommunication><ram:CompleteNumber><xsl:value-of select="."/></ram:CompleteNumber></ram:TelephoneUniversalCommunication>
      </xsl:for-each>
      <xsl:for-each select="email">
        <ram:EmailURIUniversalCommunication><ram:URIID><xsl:value-of select="."/></ram:URIID></ram:EmailURIUniversalCommunication>
      </xsl:for-each>
    </ram:DefinedTradeContact>
  </xsl:template>

  <!-- BG-5, BG-8, BG-12, BG-15 -->
  <xsl:template match="postalAddress | address">
    <ram:PostalTradeAddress>
      <xsl:for-each select="postcode"><ram:PostcodeCode><xsl:value-of select="."/></ram:PostcodeCode></xsl:for-each>
      <xsl:for-each select="addressLine1"><ram:LineOne><xsl:value-of select="."/></ram:LineOne></xsl:for-each>
      <xsl:for-each select="addressLine2"><ram:LineTwo><xsl:value-of select="."/></ram:LineTwo></xsl:for-each>
      <xsl:for-each select="addressLine3"><ram:LineThree><xsl:value-of select="."/></ram:LineThree></xsl:for-each>
      <xsl:for-each select="city"><ram:CityName><xsl:value-of select="."/></ram:CityName></xsl:for-each>
      <xsl:for-each select="countryCode"><ram:CountryID><xsl:value-of select="."/></ram:CountryID></xsl:for-each>
      <xsl:for-each select="countrySubdivision"><ram:CountrySubDivisionName><xsl:value-of select="."/></ram:CountrySubDivisionName></xsl:for-each>
    </ram:PostalTradeAddress>
  </xsl:template>

  <!-- ===== Header trade delivery (mandatory in CII, possibly empty) ===== -->
  <xsl:template name="delivery">
    <ram:ApplicableHeaderTradeDelivery>
      <xsl:for-each select="deliveryInformation[partyName or locationIdentifier or address]">
        <ram:ShipToTradeParty>
          <xsl:call-template name="identifiers">
            <xsl:with-param name="ids" select="locationIdentifier"/>
            <xsl:with-param name="other" select="$ship-to-other-id"/>
          </xsl:call-template>
          <xsl:for-each select="partyName"><ram:Name><xsl:value-of select="."/></ram:Name></xsl:for-each>
          <xsl:apply-templates select="address"/>
        </ram:ShipToTradeParty>
      </xsl:for-each>
      <xsl:for-each select="deliveryInformation/actualDeliveryDate">
        <ram:ActualDeliverySupplyChainEvent>
          <ram:OccurrenceDateTime><udt:DateTimeString format="102"><xsl:value-of select="f:date102(.)"/></udt:DateTimeString></ram:OccurrenceDateTime>
        </ram:ActualDeliverySupplyChainEvent>
      </xsl:for-each>
      <xsl:for-each select="despatchAdviceReference">
        <ram:DespatchAdviceReferencedDocument><ram:IssuerAssignedID><xsl:value-of select="."/></ram:IssuerAssignedID></ram:DespatchAdviceReferencedDocument>
      </xsl:for-each>
      <xsl:for-each select="receivingAdviceReference">
        <ram:ReceivingAdviceReferencedDocument><ram:IssuerAssignedID><xsl:value-of select="."/></ram:IssuerAssignedID></ram:ReceivingAdviceReferencedDocument>
      </xsl:for-each>
    </ram:ApplicableHeaderTradeDelivery>
  </xsl:template>

  <!-- ===== Header trade settlement ===== -->
  <xsl:template name="settlement">
    <ram:ApplicableHeaderTradeSettlement>
      <xsl:for-each select="paymentInstructions/directDebit/creditorIdentifier">
        <ram:CreditorReferenceID><xsl:value-of select="."/></ram:CreditorReferenceID>
      </xsl:for-each>
      <xsl:for-each select="paymentInstructions/remittanceInformation">
        <ram:PaymentReference><xsl:value-of select="."/></ram:PaymentReference>
      </xsl:for-each>
      <xsl:for-each select="vatAccountingCurrencyCode">
        <ram:TaxCurrencyCode><xsl:value-of select="."/></ram:TaxCurrencyCode>
      </xsl:for-each>
      <ram:InvoiceCurrencyCode><xsl:value-of select="$currency"/></ram:InvoiceCurrencyCode>
      <xsl:apply-templates select="payee" mode="party"/>
      <xsl:apply-templates select="paymentInstructions"/>
      <xsl:apply-templates select="vatBreakdown"/>
      <xsl:apply-templates select="invoicingPeriod"/>
      <xsl:apply-templates select="documentLevelAllowance | documentLevelCharge"/>
      <xsl:if test="paymentTerms or paymentDueDate or paymentInstructions/directDebit/mandateReferenceIdentifier">
        <ram:SpecifiedTradePaymentTerms>
          <xsl:for-each select="paymentTerms"><ram:Description><xsl:value-of select="."/></ram:Description></xsl:for-each>
          <xsl:for-each select="paymentDueDate">
            <ram:DueDateDateTime><udt:DateTimeString format="102"><xsl:value-of select="f:date102(.)"/></udt:DateTimeString></ram:DueDateDateTime>
          </xsl:for-each>
          <xsl:for-each select="paymentInstructions/directDebit/mandateReferenceIdentifier">
            <ram:DirectDebitMandateID><xsl:value-of select="."/></ram:DirectDebitMandateID>
          </xsl:for-each>
        </ram:SpecifiedTradePaymentTerms>
      </xsl:if>
      <xsl:apply-templates select="documentTotals"/>
      <xsl:apply-templates select="precedingInvoiceReference"/>
      <xsl:for-each select="buyerAccountingReference">
        <ram:ReceivableSpecifiedTradeAccountingAccount><ram:ID><xsl:value-of select="."/></ram:ID></ram:ReceivableSpecifiedTradeAccountingAccount>
      </xsl:for-each>
    </ram:ApplicableHeaderTradeSettlement>
  </xsl:template>

  <!-- BG-16 with BG-17 / BG-18 / BG-19; each further credit transfer is a payment means of its own, with the
       same type code (CII-SR-467) and without the text (BT-82), card or debtor account of the first. -->
  <!-- BT-83 (and the direct debit's creditor id and mandate) live outside the means: without BT-81 a document
       read from CII may hold them alone, and then has no means to write. -->
  <xsl:template match="paymentInstructions[not(meansCode | meansText | paymentCardInformation | creditTransfer |
                                               directDebit/debtorAccountIdentifier)]"/>
  <xsl:template match="paymentInstructions">
    <ram:SpecifiedTradeSettlementPaymentMeans>
      <ram:TypeCode><xsl:value-of select="meansCode"/></ram:TypeCode>
      <xsl:for-each select="meansText"><ram:Information><xsl:value-of select="."/></ram:Information></xsl:for-each>
      <xsl:for-each select="paymentCardInformation[primaryAccountNumber]">
        <ram:ApplicableTradeSettlementFinancialCard>
          <ram:ID><xsl:value-of select="primaryAccountNumber"/></ram:ID>
          <xsl:for-each select="cardHolderName"><ram:CardholderName><xsl:value-of select="."/></ram:CardholderName></xsl:for-each>
        </ram:ApplicableTradeSettlementFinancialCard>
      </xsl:for-each>
      <xsl:for-each select="directDebit/debtorAccountIdentifier">
        <ram:PayerPartyDebtorFinancialAccount><ram:IBANID><xsl:value-of select="."/></ram:IBANID></ram:PayerPartyDebtorFinancialAccount>
      </xsl:for-each>
      <xsl:apply-templates select="creditTransfer"/>
    </ram:SpecifiedTradeSettlementPaymentMeans>
    <xsl:for-each select="additionalCreditTransfer">
      <ram:SpecifiedTradeSettlementPaymentMeans>
        <ram:TypeCode><xsl:value-of select="../meansCode"/></ram:TypeCode>
        <xsl:apply-templates select="."/>
      </ram:SpecifiedTradeSettlementPaymentMeans>
    </xsl:for-each>
  </xsl:template>

  <!-- BG-17 -->
  <xsl:template match="creditTransfer | additionalCreditTransfer">
    <!-- XSD order: IBANID, AccountName, ProprietaryID -->
    <ram:PayeePartyCreditorFinancialAccount>
      <xsl:for-each select="accountIdentifier[f:is-iban(.)]"><ram:IBANID><xsl:value-of select="."/></ram:IBANID></xsl:for-each>
      <xsl:for-each select="accountName"><ram:AccountName><xsl:value-of select="."/></ram:AccountName></xsl:for-each>
      <xsl:for-each select="accountIdentifier[not(f:is-iban(.))]"><ram:ProprietaryID><xsl:value-of select="."/></ram:ProprietaryID></xsl:for-each>
    </ram:PayeePartyCreditorFinancialAccount>
    <xsl:for-each select="serviceProviderIdentifier">
      <ram:PayeeSpecifiedCreditorFinancialInstitution><ram:BICID><xsl:value-of select="."/></ram:BICID></ram:PayeeSpecifiedCreditorFinancialInstitution>
    </xsl:for-each>
  </xsl:template>

  <!-- BG-23 -->
  <xsl:template match="vatBreakdown">
    <ram:ApplicableTradeTax>
      <xsl:for-each select="vatCategoryTaxAmount"><ram:CalculatedAmount><xsl:value-of select="f:num(.)"/></ram:CalculatedAmount></xsl:for-each>
      <ram:TypeCode>VAT</ram:TypeCode>
      <xsl:for-each select="exemptionReason"><ram:ExemptionReason><xsl:value-of select="."/></ram:ExemptionReason></xsl:for-each>
      <xsl:for-each select="vatCategoryTaxableAmount"><ram:BasisAmount><xsl:value-of select="f:num(.)"/></ram:BasisAmount></xsl:for-each>
      <ram:CategoryCode><xsl:value-of select="vatCategoryCode"/></ram:CategoryCode>
      <xsl:for-each select="exemptionReasonCode"><ram:ExemptionReasonCode><xsl:value-of select="."/></ram:ExemptionReasonCode></xsl:for-each>
      <!-- BT-7 once (CII-SR-461), on the first breakdown -->
      <xsl:for-each select="/invoice/valueAddedTaxPointDate[current() is /invoice/vatBreakdown[1]]">
        <ram:TaxPointDate><udt:DateString format="102"><xsl:value-of select="f:date102(.)"/></udt:DateString></ram:TaxPointDate>
      </xsl:for-each>
      <!-- BT-8 on every breakdown (CII-SR-462: one distinct value), in UNTDID 2475 -->
      <xsl:for-each select="/invoice/valueAddedTaxPointDateCode">
        <ram:DueDateTypeCode><xsl:value-of select="$tax-point-date-codes(string(.))"/></ram:DueDateTypeCode>
      </xsl:for-each>
      <xsl:for-each select="vatCategoryRate"><ram:RateApplicablePercent><xsl:value-of select="f:num(.)"/></ram:RateApplicablePercent></xsl:for-each>
    </ram:ApplicableTradeTax>
  </xsl:template>

  <!-- BG-14, BG-26 -->
  <xsl:template match="invoicingPeriod | invoiceLinePeriod">
    <ram:BillingSpecifiedPeriod>
      <xsl:for-each select="startDate">
        <ram:StartDateTime><udt:DateTimeString format="102"><xsl:value-of select="f:date102(.)"/></udt:DateTimeString></ram:StartDateTime>
      </xsl:for-each>
      <xsl:for-each select="endDate">
        <ram:EndDateTime><udt:DateTimeString format="102"><xsl:value-of select="f:date102(.)"/></udt:DateTimeString></ram:EndDateTime>
      </xsl:for-each>
    </ram:BillingSpecifiedPeriod>
  </xsl:template>

  <!-- BG-20, BG-21, BG-27, BG-28: one shape; document level adds the VAT category. -->
  <xsl:template match="documentLevelAllowance | documentLevelCharge | invoiceLineAllowance | invoiceLineCharge">
    <ram:SpecifiedTradeAllowanceCharge>
      <ram:ChargeIndicator>
        <udt:Indicator><xsl:value-of select="ends-with(local-name(), 'Charge')"/></udt:Indicator>
      </ram:ChargeIndicator>
      <xsl:for-each select="percentage"><ram:CalculationPercent><xsl:value-of select="f:num(.)"/></ram:CalculationPercent></xsl:for-each>
      <xsl:for-each select="baseAmount"><ram:BasisAmount><xsl:value-of select="f:num(.)"/></ram:BasisAmount></xsl:for-each>
      <xsl:for-each select="amount"><ram:ActualAmount><xsl:value-of select="f:num(.)"/></ram:ActualAmount></xsl:for-each>
      <xsl:for-each select="reasonCode"><ram:ReasonCode><xsl:value-of select="."/></ram:ReasonCode></xsl:for-each>
      <xsl:for-each select="reason"><ram:Reason><xsl:value-of select="."/></ram:Reason></xsl:for-each>
      <xsl:if test="vatCategoryCode">
        <ram:CategoryTradeTax>
          <ram:TypeCode>VAT</ram:TypeCode>
          <ram:CategoryCode><xsl:value-of select="vatCategoryCode"/></ram:CategoryCode>
          <xsl:for-each select="vatRate">
            <ram:RateApplicablePercent><xsl:value-of select="f:num(.)"/></ram:RateApplicablePercent>
          </xsl:for-each>
        </ram:CategoryTradeTax>
      </xsl:if>
    </ram:SpecifiedTradeAllowanceCharge>
  </xsl:template>

  <!-- BG-22 -->
  <xsl:template match="documentTotals">
    <ram:SpecifiedTradeSettlementHeaderMonetarySummation>
      <xsl:for-each select="lineExtensionAmount"><ram:LineTotalAmount><xsl:value-of select="f:num(.)"/></ram:LineTotalAmount></xsl:for-each>
      <xsl:for-each select="chargeTotalAmount"><ram:ChargeTotalAmount><xsl:value-of select="f:num(.)"/></ram:ChargeTotalAmount></xsl:for-each>
      <xsl:for-each select="allowanceTotalAmount"><ram:AllowanceTotalAmount><xsl:value-of select="f:num(.)"/></ram:AllowanceTotalAmount></xsl:for-each>
      <xsl:for-each select="taxExclusiveAmount"><ram:TaxBasisTotalAmount><xsl:value-of select="f:num(.)"/></ram:TaxBasisTotalAmount></xsl:for-each>
      <xsl:for-each select="taxTotalAmount">
        <ram:TaxTotalAmount currencyID="{$currency}"><xsl:value-of select="f:num(.)"/></ram:TaxTotalAmount>
      </xsl:for-each>
      <xsl:for-each select="taxTotalAmountInAccountingCurrency">
        <ram:TaxTotalAmount currencyID="{/invoice/vatAccountingCurrencyCode}"><xsl:value-of select="f:num(.)"/></ram:TaxTotalAmount>
      </xsl:for-each>
      <xsl:for-each select="payableRoundingAmount"><ram:RoundingAmount><xsl:value-of select="f:num(.)"/></ram:RoundingAmount></xsl:for-each>
      <xsl:for-each select="taxInclusiveAmount"><ram:GrandTotalAmount><xsl:value-of select="f:num(.)"/></ram:GrandTotalAmount></xsl:for-each>
      <xsl:for-each select="prepaidAmount"><ram:TotalPrepaidAmount><xsl:value-of select="f:num(.)"/></ram:TotalPrepaidAmount></xsl:for-each>
      <xsl:for-each select="payableAmount"><ram:DuePayableAmount><xsl:value-of select="f:num(.)"/></ram:DuePayableAmount></xsl:for-each>
    </ram:SpecifiedTradeSettlementHeaderMonetarySummation>
  </xsl:template>

  <!-- BG-3 -->
  <xsl:template match="precedingInvoiceReference">
    <ram:InvoiceReferencedDocument>
      <ram:IssuerAssignedID><xsl:value-of select="documentReference"/></ram:IssuerAssignedID>
      <xsl:for-each select="issueDate">
        <ram:FormattedIssueDateTime><qdt:DateTimeString format="102"><xsl:value-of select="f:date102(.)"/></qdt:DateTimeString></ram:FormattedIssueDateTime>
      </xsl:for-each>
    </ram:InvoiceReferencedDocument>
  </xsl:template>

  <!-- ===== BG-25 invoice line ===== -->
  <xsl:template match="invoiceLine">
    <ram:IncludedSupplyChainTradeLineItem>
      <ram:AssociatedDocumentLineDocument>
        <ram:LineID><xsl:value-of select="lineIdentifier"/></ram:LineID>
        <!-- Factur-X EXTENDED's line hierarchy (BT-X-304, BT-X-8; the model accepts it only in EXTENDED documents) -->
        <xsl:for-each select="parentLineIdentifier"><ram:ParentLineID><xsl:value-of select="."/></ram:ParentLineID></xsl:for-each>
        <xsl:for-each select="lineStatusReasonCode"><ram:LineStatusReasonCode><xsl:value-of select="."/></ram:LineStatusReasonCode></xsl:for-each>
        <xsl:for-each select="note"><ram:IncludedNote><ram:Content><xsl:value-of select="."/></ram:Content></ram:IncludedNote></xsl:for-each>
      </ram:AssociatedDocumentLineDocument>
      <xsl:apply-templates select="itemInformation"/>
      <ram:SpecifiedLineTradeAgreement>
        <xsl:for-each select="referencedPurchaseOrderLine">
          <ram:BuyerOrderReferencedDocument><ram:LineID><xsl:value-of select="."/></ram:LineID></ram:BuyerOrderReferencedDocument>
        </xsl:for-each>
        <xsl:apply-templates select="priceDetails"/>
      </ram:SpecifiedLineTradeAgreement>
      <ram:SpecifiedLineTradeDelivery>
        <xsl:for-each select="quantity">
          <ram:BilledQuantity>
            <xsl:for-each select="../unitCode"><xsl:attribute name="unitCode" select="."/></xsl:for-each>
            <xsl:value-of select="f:num(.)"/>
          </ram:BilledQuantity>
        </xsl:for-each>
      </ram:SpecifiedLineTradeDelivery>
      <ram:SpecifiedLineTradeSettlement>
        <xsl:for-each select="lineVatInformation">
          <ram:ApplicableTradeTax>
            <ram:TypeCode>VAT</ram:TypeCode>
            <ram:CategoryCode><xsl:value-of select="vatCategoryCode"/></ram:CategoryCode>
            <xsl:for-each select="vatRate">
              <ram:RateApplicablePercent><xsl:value-of select="f:num(.)"/></ram:RateApplicablePercent>
            </xsl:for-each>
          </ram:ApplicableTradeTax>
        </xsl:for-each>
        <xsl:apply-templates select="invoiceLinePeriod"/>
        <xsl:apply-templates select="invoiceLineAllowance | invoiceLineCharge"/>
        <ram:SpecifiedTradeSettlementLineMonetarySummation>
          <ram:LineTotalAmount><xsl:value-of select="f:num(netAmount)"/></ram:LineTotalAmount>
        </ram:SpecifiedTradeSettlementLineMonetarySummation>
        <xsl:apply-templates select="objectIdentifier"/>
        <xsl:for-each select="buyerAccountingReference">
          <ram:ReceivableSpecifiedTradeAccountingAccount><ram:ID><xsl:value-of select="."/></ram:ID></ram:ReceivableSpecifiedTradeAccountingAccount>
        </xsl:for-each>
      </ram:SpecifiedLineTradeSettlement>
    </ram:IncludedSupplyChainTradeLineItem>
  </xsl:template>

  <!-- BG-31, BG-32 (the further classifications carry their list id and version as siblings, like the first) -->
  <xsl:template match="itemInformation">
    <ram:SpecifiedTradeProduct>
      <xsl:for-each select="standardIdentifier">
        <ram:GlobalID>
          <xsl:for-each select="../standardIdentifierSchemeId"><xsl:attribute name="schemeID" select="."/></xsl:for-each>
          <xsl:value-of select="."/>
        </ram:GlobalID>
      </xsl:for-each>
      <xsl:for-each select="sellersIdentifier"><ram:SellerAssignedID><xsl:value-of select="."/></ram:SellerAssignedID></xsl:for-each>
      <xsl:for-each select="buyersIdentifier"><ram:BuyerAssignedID><xsl:value-of select="."/></ram:BuyerAssignedID></xsl:for-each>
      <ram:Name><xsl:value-of select="name"/></ram:Name>
      <xsl:for-each select="description"><ram:Description><xsl:value-of select="."/></ram:Description></xsl:for-each>
      <xsl:for-each select="itemAttribute">
        <ram:ApplicableProductCharacteristic>
          <ram:Description><xsl:value-of select="name"/></ram:Description>
          <ram:Value><xsl:value-of select="value"/></ram:Value>
        </ram:ApplicableProductCharacteristic>
      </xsl:for-each>
      <xsl:for-each select="classifiedIdentifier, additionalClassifiedIdentifier/classifiedIdentifier">
        <ram:DesignatedProductClassification>
          <ram:ClassCode>
            <xsl:for-each select="../classifiedIdentifierSchemeId"><xsl:attribute name="listID" select="."/></xsl:for-each>
            <xsl:for-each select="../classifiedIdentifierVersion"><xsl:attribute name="listVersionID" select="."/></xsl:for-each>
            <xsl:value-of select="."/>
          </ram:ClassCode>
        </ram:DesignatedProductClassification>
      </xsl:for-each>
      <xsl:for-each select="countryOfOrigin">
        <ram:OriginTradeCountry><ram:ID><xsl:value-of select="."/></ram:ID></ram:OriginTradeCountry>
      </xsl:for-each>
    </ram:SpecifiedTradeProduct>
  </xsl:template>

  <!-- BG-29: gross price (BT-148) with its discount (BT-147, computed by the canonical layer), net price (BT-146). -->
  <xsl:template match="priceDetails">
    <!-- CII carries BT-147 inside the gross price, which needs its amount: without one, net + discount (EN 16931:
         net price = gross price - discount); convert lists it in `changed` -->
    <xsl:for-each select="(grossPrice, priceDiscount)[1]">
      <ram:GrossPriceProductTradePrice>
        <ram:ChargeAmount><xsl:value-of select="f:num((../grossPrice,
            ../netPrice ! (xs:decimal(.) + xs:decimal(current())))[1])"/></ram:ChargeAmount>
        <xsl:call-template name="basis-quantity"/>
        <xsl:for-each select="../priceDiscount">
          <ram:AppliedTradeAllowanceCharge>
            <ram:ChargeIndicator><udt:Indicator>false</udt:Indicator></ram:ChargeIndicator>
            <ram:ActualAmount><xsl:value-of select="f:num(.)"/></ram:ActualAmount>
          </ram:AppliedTradeAllowanceCharge>
        </xsl:for-each>
      </ram:GrossPriceProductTradePrice>
    </xsl:for-each>
    <xsl:for-each select="netPrice">
      <ram:NetPriceProductTradePrice>
        <ram:ChargeAmount><xsl:value-of select="f:num(.)"/></ram:ChargeAmount>
        <xsl:call-template name="basis-quantity"/>
      </ram:NetPriceProductTradePrice>
    </xsl:for-each>
  </xsl:template>

  <!-- BT-149 / BT-150, context: a price element of priceDetails -->
  <xsl:template name="basis-quantity">
    <xsl:for-each select="../priceBasisQuantity">
      <ram:BasisQuantity>
        <xsl:for-each select="../basisUnitCode"><xsl:attribute name="unitCode" select="."/></xsl:for-each>
        <xsl:value-of select="f:num(.)"/>
      </ram:BasisQuantity>
    </xsl:for-each>
  </xsl:template>

</xsl:stylesheet>
