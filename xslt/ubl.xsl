<?xml version="1.0" encoding="UTF-8"?>
<!-- Canonical invoice (docs/canonical.md) -> OASIS UBL 2.1 Invoice, or CreditNote for credit-note type codes,
     per the EN 16931-3-2 syntax binding. Element order follows the UBL 2.1 XSD of each document type. -->
<xsl:stylesheet version="3.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:xs="http://www.w3.org/2001/XMLSchema"
    xmlns:f="urn:einvoice-pipeline:xslt-functions"
    xmlns:cac="urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"
    xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"
    xpath-default-namespace="urn:einvoice-pipeline:canonical:1"
    exclude-result-prefixes="xs f">

  <xsl:include href="common/format.xsl"/>
  <xsl:include href="common/codes.xsl"/>

  <!-- Indented, one element per line, so that a finding's line means something and a diff is readable. Saxon's
       serialiser adds whitespace only between elements, never inside one that holds text (tests/test_indent.py).
       pipeline.xslt.run_to_tree serialises the same way; pipeline.xslt.run_stylesheet(indent=False) for one line. -->
  <xsl:output method="xml" encoding="UTF-8" indent="yes"/>

  <!-- BT-24 (CustomizationID) -->
  <xsl:param name="specification-id" as="xs:string" select="'urn:cen.eu:en16931:2017'"/>
  <!-- BT-23 (ProfileID) when the document carries none; empty = none. -->
  <xsl:param name="business-process" as="xs:string" select="''"/>
  <!-- UNTDID 1001 codes written as a UBL CreditNote (the credit-note subset of BR-CL-01). -->
  <xsl:param name="credit-note-type-codes" as="xs:string" select="'81 83 261 262 296 308 381 396 420 458 502 503 532'"/>
  <!-- UBL requires a card network id (cac:CardAccount/cbc:NetworkID); EN 16931 has no term for it. -->
  <xsl:param name="card-network-id" as="xs:string" select="'NA'"/>
  <!-- UBL requires cac:OrderReference/cbc:ID; used when only the sales order reference (BT-14) is known. XRechnung:
       Peppol's "NA" (an empty one breaks PEPPOL-EN16931-R008; convert lists it in `changed`); en16931: empty
       (pipeline.write.transform.SPEC_PARAMS). -->
  <xsl:param name="missing-order-id" as="xs:string" select="'NA'"/>
  <!-- UBL requires cbc:PaymentMeansCode in the cac:PaymentMeans that binds BT-83; a CII document may state BT-83
       without BT-81 (its PaymentReference sits outside the means). UNTDID 4461 "1": instrument not defined, which is
       what the source says; convert lists it in `changed`. -->
  <xsl:param name="missing-means-code" as="xs:string" select="'1'"/>

  <xsl:variable name="currency" select="normalize-space(/invoice/currencyCode)"/>
  <xsl:variable name="credit-note" as="xs:boolean"
      select="normalize-space(/invoice/invoiceTypeCode) = tokenize($credit-note-type-codes)"/>
  <xsl:variable name="line-name" select="if ($credit-note) then 'CreditNoteLine' else 'InvoiceLine'"/>

  <xsl:template match="/">
    <xsl:if test="not(invoice)">
      <xsl:message terminate="yes">ubl.xsl: the input is not a canonical invoice (urn:einvoice-pipeline:canonical:1 invoice)</xsl:message>
    </xsl:if>
    <xsl:choose>
      <xsl:when test="$credit-note">
        <CreditNote xmlns="urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2">
          <xsl:apply-templates select="invoice"/>
        </CreditNote>
      </xsl:when>
      <xsl:otherwise>
        <Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2">
          <xsl:apply-templates select="invoice"/>
        </Invoice>
      </xsl:otherwise>
    </xsl:choose>
  </xsl:template>

  <!-- The document body; the few differences between Invoice and CreditNote are switched on $credit-note. -->
  <xsl:template match="invoice">
    <cbc:CustomizationID><xsl:value-of select="$specification-id"/></cbc:CustomizationID>
    <xsl:for-each select="(processControl/businessProcessType, $business-process[. ne ''])[1]">
      <cbc:ProfileID><xsl:value-of select="."/></cbc:ProfileID>
    </xsl:for-each>
    <cbc:ID><xsl:value-of select="invoiceNumber"/></cbc:ID>
    <cbc:IssueDate><xsl:value-of select="issueDate"/></cbc:IssueDate>
    <xsl:choose>
      <xsl:when test="$credit-note">
        <xsl:apply-templates select="valueAddedTaxPointDate"/>
        <cbc:CreditNoteTypeCode><xsl:value-of select="invoiceTypeCode"/></cbc:CreditNoteTypeCode>
        <xsl:apply-templates select="invoiceNote, additionalInvoiceNote/invoiceNote"/>
      </xsl:when>
      <xsl:otherwise>
        <xsl:for-each select="paymentDueDate"><cbc:DueDate><xsl:value-of select="."/></cbc:DueDate></xsl:for-each>
        <cbc:InvoiceTypeCode><xsl:value-of select="invoiceTypeCode"/></cbc:InvoiceTypeCode>
        <xsl:apply-templates select="invoiceNote, additionalInvoiceNote/invoiceNote"/>
        <xsl:apply-templates select="valueAddedTaxPointDate"/>
      </xsl:otherwise>
    </xsl:choose>
    <cbc:DocumentCurrencyCode><xsl:value-of select="$currency"/></cbc:DocumentCurrencyCode>
    <xsl:for-each select="vatAccountingCurrencyCode"><cbc:TaxCurrencyCode><xsl:value-of select="."/></cbc:TaxCurrencyCode></xsl:for-each>
    <xsl:for-each select="buyerAccountingReference"><cbc:AccountingCost><xsl:value-of select="."/></cbc:AccountingCost></xsl:for-each>
    <xsl:for-each select="buyerReference"><cbc:BuyerReference><xsl:value-of select="."/></cbc:BuyerReference></xsl:for-each>
    <xsl:if test="invoicingPeriod or valueAddedTaxPointDateCode">
      <cac:InvoicePeriod>
        <xsl:apply-templates select="invoicingPeriod/*"/>
        <xsl:for-each select="valueAddedTaxPointDateCode"><cbc:DescriptionCode><xsl:value-of select="."/></cbc:DescriptionCode></xsl:for-each>
      </cac:InvoicePeriod>
    </xsl:if>
    <xsl:if test="purchaseOrderReference or salesOrderReference">
      <cac:OrderReference>
        <cbc:ID><xsl:value-of select="(purchaseOrderReference, $missing-order-id)[1]"/></cbc:ID>
        <xsl:for-each select="salesOrderReference"><cbc:SalesOrderID><xsl:value-of select="."/></cbc:SalesOrderID></xsl:for-each>
      </cac:OrderReference>
    </xsl:if>
    <xsl:apply-templates select="precedingInvoiceReference, additionalPrecedingInvoiceReference"/>
    <xsl:for-each select="despatchAdviceReference">
      <cac:DespatchDocumentReference><cbc:ID><xsl:value-of select="."/></cbc:ID></cac:DespatchDocumentReference>
    </xsl:for-each>
    <xsl:for-each select="receivingAdviceReference">
      <cac:ReceiptDocumentReference><cbc:ID><xsl:value-of select="."/></cbc:ID></cac:ReceiptDocumentReference>
    </xsl:for-each>
    <xsl:if test="not($credit-note)">
      <xsl:apply-templates select="tenderOrLotReference"/>
    </xsl:if>
    <xsl:for-each select="contractReference">
      <cac:ContractDocumentReference><cbc:ID><xsl:value-of select="."/></cbc:ID></cac:ContractDocumentReference>
    </xsl:for-each>
    <xsl:apply-templates select="additionalSupportingDocument"/>
    <xsl:apply-templates select="invoicedObjectIdentifier"/>
    <xsl:choose>
      <xsl:when test="$credit-note">
        <!-- CreditNote has no ProjectReference: BT-11 is a document reference of type 50. -->
        <xsl:for-each select="projectReference">
          <cac:AdditionalDocumentReference>
            <cbc:ID><xsl:value-of select="."/></cbc:ID>
            <cbc:DocumentTypeCode>50</cbc:DocumentTypeCode>
          </cac:AdditionalDocumentReference>
        </xsl:for-each>
        <xsl:apply-templates select="tenderOrLotReference"/>
      </xsl:when>
      <xsl:otherwise>
        <xsl:for-each select="projectReference">
          <cac:ProjectReference><cbc:ID><xsl:value-of select="."/></cbc:ID></cac:ProjectReference>
        </xsl:for-each>
      </xsl:otherwise>
    </xsl:choose>
    <cac:AccountingSupplierParty><xsl:apply-templates select="seller" mode="party"/></cac:AccountingSupplierParty>
    <cac:AccountingCustomerParty><xsl:apply-templates select="buyer" mode="party"/></cac:AccountingCustomerParty>
    <xsl:apply-templates select="payee"/>
    <xsl:apply-templates select="sellerTaxRepresentativeParty"/>
    <xsl:apply-templates select="deliveryInformation"/>
    <xsl:apply-templates select="paymentInstructions"/>
    <xsl:for-each select="paymentTerms">
      <cac:PaymentTerms><cbc:Note><xsl:value-of select="."/></cbc:Note></cac:PaymentTerms>
    </xsl:for-each>
    <!-- XRechnung extension BG-DEX-09: BT-DEX-001 type, BT-DEX-002 amount, BT-DEX-003 description -->
    <xsl:for-each select="thirdPartyPayment">
      <cac:PrepaidPayment>
        <cbc:ID><xsl:value-of select="paymentType"/></cbc:ID>
        <cbc:PaidAmount currencyID="{$currency}"><xsl:value-of select="f:num(amount)"/></cbc:PaidAmount>
        <cbc:InstructionID><xsl:value-of select="description"/></cbc:InstructionID>
      </cac:PrepaidPayment>
    </xsl:for-each>
    <xsl:apply-templates select="documentLevelAllowance | documentLevelCharge"/>
    <cac:TaxTotal>
      <cbc:TaxAmount currencyID="{$currency}">
        <xsl:value-of select="f:num(documentTotals/taxTotalAmount)"/>
      </cbc:TaxAmount>
      <xsl:apply-templates select="vatBreakdown"/>
    </cac:TaxTotal>
    <xsl:for-each select="documentTotals/taxTotalAmountInAccountingCurrency">
      <cac:TaxTotal>
        <cbc:TaxAmount currencyID="{/invoice/vatAccountingCurrencyCode}"><xsl:value-of select="f:num(.)"/></cbc:TaxAmount>
      </cac:TaxTotal>
    </xsl:for-each>
    <xsl:apply-templates select="documentTotals"/>
    <xsl:apply-templates select="invoiceLine"/>
  </xsl:template>

  <!-- BT-18 / BT-128 with their scheme (BT-18-1 / BT-128-1): a document reference of type 130 -->
  <xsl:template match="invoicedObjectIdentifier | objectIdentifier">
    <xsl:element name="cac:{if (self::objectIdentifier) then 'DocumentReference' else 'AdditionalDocumentReference'}">
      <cbc:ID>
        <xsl:for-each select="../(invoicedObjectIdentifierSchemeId, objectIdentifierSchemeId)">
          <xsl:attribute name="schemeID" select="."/>
        </xsl:for-each>
        <xsl:value-of select="."/>
      </cbc:ID>
      <cbc:DocumentTypeCode>130</cbc:DocumentTypeCode>
    </xsl:element>
  </xsl:template>

  <xsl:template match="valueAddedTaxPointDate">
    <cbc:TaxPointDate><xsl:value-of select="."/></cbc:TaxPointDate>
  </xsl:template>

  <!-- BG-1 (BT-21 as "#CODE#" prefix), the first note or a further one -->
  <xsl:template match="invoiceNote">
    <cbc:Note><xsl:value-of select="f:note-with-subject(., ../invoiceNoteSubjectCode)"/></cbc:Note>
  </xsl:template>

  <!-- BT-17 -->
  <xsl:template match="tenderOrLotReference">
    <cac:OriginatorDocumentReference><cbc:ID><xsl:value-of select="."/></cbc:ID></cac:OriginatorDocumentReference>
  </xsl:template>

  <!-- BG-3 -->
  <xsl:template match="precedingInvoiceReference | additionalPrecedingInvoiceReference">
    <cac:BillingReference>
      <cac:InvoiceDocumentReference>
        <cbc:ID><xsl:value-of select="documentReference"/></cbc:ID>
        <xsl:for-each select="issueDate"><cbc:IssueDate><xsl:value-of select="."/></cbc:IssueDate></xsl:for-each>
      </cac:InvoiceDocumentReference>
    </cac:BillingReference>
  </xsl:template>

  <!-- BG-24 -->
  <xsl:template match="additionalSupportingDocument">
    <cac:AdditionalDocumentReference>
      <cbc:ID><xsl:value-of select="reference"/></cbc:ID>
      <xsl:for-each select="description"><cbc:DocumentDescription><xsl:value-of select="."/></cbc:DocumentDescription></xsl:for-each>
      <xsl:if test="attachedDocument or externalLocation">
        <cac:Attachment>
          <xsl:for-each select="attachedDocument">
            <cbc:EmbeddedDocumentBinaryObject>
              <xsl:for-each select="../attachedDocumentMimeType"><xsl:attribute name="mimeCode" select="."/></xsl:for-each>
              <xsl:for-each select="../attachedDocumentFilename"><xsl:attribute name="filename" select="."/></xsl:for-each>
              <xsl:value-of select="."/>
            </cbc:EmbeddedDocumentBinaryObject>
          </xsl:for-each>
          <xsl:for-each select="externalLocation">
            <cac:ExternalReference><cbc:URI><xsl:value-of select="."/></cbc:URI></cac:ExternalReference>
          </xsl:for-each>
        </cac:Attachment>
      </xsl:if>
    </cac:AdditionalDocumentReference>
  </xsl:template>

  <!-- BG-4 / BG-7 as cac:Party -->
  <xsl:template match="seller | buyer" mode="party">
    <cac:Party>
      <xsl:for-each select="electronicAddress">
        <cbc:EndpointID>
          <xsl:for-each select="../electronicAddressSchemeId"><xsl:attribute name="schemeID" select="."/></xsl:for-each>
          <xsl:value-of select="."/>
        </cbc:EndpointID>
      </xsl:for-each>
      <xsl:apply-templates select="identifier, additionalIdentifier/identifier"/>
      <xsl:if test="self::seller and not(/invoice/payee)">
        <xsl:apply-templates select="/invoice/paymentInstructions/directDebit/creditorIdentifier"/>
      </xsl:if>
      <xsl:for-each select="tradingName"><cac:PartyName><cbc:Name><xsl:value-of select="."/></cbc:Name></cac:PartyName></xsl:for-each>
      <xsl:apply-templates select="postalAddress"/>
      <xsl:for-each select="vatIdentifier">
        <cac:PartyTaxScheme>
          <cbc:CompanyID><xsl:value-of select="."/></cbc:CompanyID>
          <cac:TaxScheme><cbc:ID>VAT</cbc:ID></cac:TaxScheme>
        </cac:PartyTaxScheme>
      </xsl:for-each>
      <xsl:for-each select="taxRegistrationIdentifier">
        <cac:PartyTaxScheme>
          <cbc:CompanyID><xsl:value-of select="."/></cbc:CompanyID>
          <cac:TaxScheme><cbc:ID>FC</cbc:ID></cac:TaxScheme>
        </cac:PartyTaxScheme>
      </xsl:for-each>
      <cac:PartyLegalEntity>
        <cbc:RegistrationName><xsl:value-of select="name"/></cbc:RegistrationName>
        <xsl:apply-templates select="legalRegistrationIdentifier"/>
        <xsl:for-each select="additionalLegalInformation"><cbc:CompanyLegalForm><xsl:value-of select="."/></cbc:CompanyLegalForm></xsl:for-each>
      </cac:PartyLegalEntity>
      <xsl:apply-templates select="contact"/>
    </cac:Party>
  </xsl:template>

  <!-- BT-29 (the first or a further one), BT-46, BT-60 -->
  <xsl:template match="identifier">
    <cac:PartyIdentification>
      <cbc:ID>
        <xsl:for-each select="../identifierSchemeId"><xsl:attribute name="schemeID" select="."/></xsl:for-each>
        <xsl:value-of select="."/>
      </cbc:ID>
    </cac:PartyIdentification>
  </xsl:template>

  <!-- BT-90: the bank assigned creditor id is a SEPA party identifier of the payee, else of the seller. -->
  <xsl:template match="creditorIdentifier">
    <cac:PartyIdentification><cbc:ID schemeID="SEPA"><xsl:value-of select="."/></cbc:ID></cac:PartyIdentification>
  </xsl:template>

  <!-- BT-30, BT-47, BT-61 -->
  <xsl:template match="legalRegistrationIdentifier">
    <cbc:CompanyID>
      <xsl:for-each select="../legalRegistrationIdentifierSchemeId"><xsl:attribute name="schemeID" select="."/></xsl:for-each>
      <xsl:value-of select="."/>
    </cbc:CompanyID>
  </xsl:template>

  <!-- BG-6, BG-9 -->
  <xsl:template match="contact">
    <cac:Contact>
      <xsl:for-each select="contactPoint"><cbc:Name><xsl:value-of select="."/></cbc:Name></xsl:for-each>
      <xsl:for-each select="telephone"><cbc:Telephone><xsl:value-of select="."/></cbc:Telephone></xsl:for-each>
      <xsl:for-each select="email"><cbc:ElectronicMail><xsl:value-of select="."/></cbc:ElectronicMail></xsl:for-each>
    </cac:Contact>
  </xsl:template>

  <!-- BG-5, BG-8, BG-12 as cac:PostalAddress; BG-15 as cac:Address -->
  <xsl:template match="postalAddress | address">
    <xsl:element name="{if (self::address) then 'cac:Address' else 'cac:PostalAddress'}">
      <xsl:for-each select="addressLine1"><cbc:StreetName><xsl:value-of select="."/></cbc:StreetName></xsl:for-each>
      <xsl:for-each select="addressLine2"><cbc:AdditionalStreetName><xsl:value-of select="."/></cbc:AdditionalStreetName></xsl:for-each>
      <xsl:for-each select="city"><cbc:CityName><xsl:value-of select="."/></cbc:CityName></xsl:for-each>
      <xsl:for-each select="postcode"><cbc:PostalZone><xsl:value-of select="."/></cbc:PostalZone></xsl:for-each>
      <xsl:for-each select="countrySubdivision"><cbc:CountrySubentity><xsl:value-of select="."/></cbc:CountrySubentity></xsl:for-each>
      <xsl:for-each select="addressLine3"><cac:AddressLine><cbc:Line><xsl:value-of select="."/></cbc:Line></cac:AddressLine></xsl:for-each>
      <xsl:for-each select="countryCode"><cac:Country><cbc:IdentificationCode><xsl:value-of select="."/></cbc:IdentificationCode></cac:Country></xsl:for-each>
    </xsl:element>
  </xsl:template>

  <!-- BG-10 -->
  <xsl:template match="payee">
    <cac:PayeeParty>
      <xsl:apply-templates select="identifier"/>
      <xsl:apply-templates select="/invoice/paymentInstructions/directDebit/creditorIdentifier"/>
      <cac:PartyName><cbc:Name><xsl:value-of select="name"/></cbc:Name></cac:PartyName>
      <xsl:if test="legalRegistrationIdentifier">
        <cac:PartyLegalEntity><xsl:apply-templates select="legalRegistrationIdentifier"/></cac:PartyLegalEntity>
      </xsl:if>
    </cac:PayeeParty>
  </xsl:template>

  <!-- BG-11 -->
  <xsl:template match="sellerTaxRepresentativeParty">
    <cac:TaxRepresentativeParty>
      <cac:PartyName><cbc:Name><xsl:value-of select="name"/></cbc:Name></cac:PartyName>
      <xsl:apply-templates select="postalAddress"/>
      <xsl:for-each select="vatIdentifier">
        <cac:PartyTaxScheme>
          <cbc:CompanyID><xsl:value-of select="."/></cbc:CompanyID>
          <cac:TaxScheme><cbc:ID>VAT</cbc:ID></cac:TaxScheme>
        </cac:PartyTaxScheme>
      </xsl:for-each>
    </cac:TaxRepresentativeParty>
  </xsl:template>

  <!-- BG-13 -->
  <xsl:template match="deliveryInformation">
    <cac:Delivery>
      <xsl:for-each select="actualDeliveryDate"><cbc:ActualDeliveryDate><xsl:value-of select="."/></cbc:ActualDeliveryDate></xsl:for-each>
      <xsl:if test="locationIdentifier or address">
        <cac:DeliveryLocation>
          <xsl:for-each select="locationIdentifier">
            <cbc:ID>
              <xsl:for-each select="../locationIdentifierSchemeId"><xsl:attribute name="schemeID" select="."/></xsl:for-each>
              <xsl:value-of select="."/>
            </cbc:ID>
          </xsl:for-each>
          <xsl:apply-templates select="address"/>
        </cac:DeliveryLocation>
      </xsl:if>
      <xsl:for-each select="partyName">
        <cac:DeliveryParty><cac:PartyName><cbc:Name><xsl:value-of select="."/></cbc:Name></cac:PartyName></cac:DeliveryParty>
      </xsl:for-each>
    </cac:Delivery>
  </xsl:template>

  <!-- BG-16 with BG-17 / BG-18 / BG-19; each further credit transfer is a payment means of its own with the same
       code (UBL-SR-47), and without the text, due date, card or mandate of the first (UBL-SR-45/46/54/55). BT-83 is
       repeated in each (UBL-SR-44 allows it, as CEN, XRechnung and Peppol examples do): a buyer paying to the second
       account sees the reference there too; the reader takes equal repetitions as the one BT-83. -->
  <xsl:template match="paymentInstructions">
    <cac:PaymentMeans>
      <cbc:PaymentMeansCode>
        <xsl:for-each select="meansText"><xsl:attribute name="name" select="."/></xsl:for-each>
        <xsl:value-of select="(meansCode, $missing-means-code)[1]"/>
      </cbc:PaymentMeansCode>
      <xsl:if test="$credit-note">
        <xsl:for-each select="/invoice/paymentDueDate"><cbc:PaymentDueDate><xsl:value-of select="."/></cbc:PaymentDueDate></xsl:for-each>
      </xsl:if>
      <xsl:for-each select="remittanceInformation"><cbc:PaymentID><xsl:value-of select="."/></cbc:PaymentID></xsl:for-each>
      <xsl:for-each select="paymentCardInformation[primaryAccountNumber]">
        <cac:CardAccount>
          <cbc:PrimaryAccountNumberID><xsl:value-of select="primaryAccountNumber"/></cbc:PrimaryAccountNumberID>
          <cbc:NetworkID><xsl:value-of select="$card-network-id"/></cbc:NetworkID>
          <xsl:for-each select="cardHolderName"><cbc:HolderName><xsl:value-of select="."/></cbc:HolderName></xsl:for-each>
        </cac:CardAccount>
      </xsl:for-each>
      <xsl:apply-templates select="creditTransfer"/>
      <xsl:for-each select="directDebit[mandateReferenceIdentifier or debtorAccountIdentifier]">
        <cac:PaymentMandate>
          <xsl:for-each select="mandateReferenceIdentifier"><cbc:ID><xsl:value-of select="."/></cbc:ID></xsl:for-each>
          <xsl:for-each select="debtorAccountIdentifier">
            <cac:PayerFinancialAccount><cbc:ID><xsl:value-of select="."/></cbc:ID></cac:PayerFinancialAccount>
          </xsl:for-each>
        </cac:PaymentMandate>
      </xsl:for-each>
    </cac:PaymentMeans>
    <xsl:for-each select="additionalCreditTransfer">
      <cac:PaymentMeans>
        <cbc:PaymentMeansCode><xsl:value-of select="../meansCode"/></cbc:PaymentMeansCode>
        <xsl:for-each select="../remittanceInformation"><cbc:PaymentID><xsl:value-of select="."/></cbc:PaymentID></xsl:for-each>
        <xsl:apply-templates select="."/>
      </cac:PaymentMeans>
    </xsl:for-each>
  </xsl:template>

  <!-- BG-17 -->
  <xsl:template match="creditTransfer | additionalCreditTransfer">
    <cac:PayeeFinancialAccount>
      <cbc:ID><xsl:value-of select="accountIdentifier"/></cbc:ID>
      <xsl:for-each select="accountName"><cbc:Name><xsl:value-of select="."/></cbc:Name></xsl:for-each>
      <xsl:for-each select="serviceProviderIdentifier">
        <cac:FinancialInstitutionBranch><cbc:ID><xsl:value-of select="."/></cbc:ID></cac:FinancialInstitutionBranch>
      </xsl:for-each>
    </cac:PayeeFinancialAccount>
  </xsl:template>

  <!-- BG-14, BG-26 -->
  <!-- BG-14 (with BT-8, see above), BG-26 -->
  <xsl:template match="invoiceLinePeriod">
    <cac:InvoicePeriod><xsl:apply-templates select="*"/></cac:InvoicePeriod>
  </xsl:template>
  <xsl:template match="startDate"><cbc:StartDate><xsl:value-of select="."/></cbc:StartDate></xsl:template>
  <xsl:template match="endDate"><cbc:EndDate><xsl:value-of select="."/></cbc:EndDate></xsl:template>

  <!-- BG-20, BG-21, BG-27, BG-28: one shape; document level adds the VAT category. -->
  <xsl:template match="documentLevelAllowance | documentLevelCharge | invoiceLineAllowance | invoiceLineCharge">
    <cac:AllowanceCharge>
      <cbc:ChargeIndicator><xsl:value-of select="ends-with(local-name(), 'Charge')"/></cbc:ChargeIndicator>
      <xsl:for-each select="reasonCode"><cbc:AllowanceChargeReasonCode><xsl:value-of select="."/></cbc:AllowanceChargeReasonCode></xsl:for-each>
      <xsl:for-each select="reason"><cbc:AllowanceChargeReason><xsl:value-of select="."/></cbc:AllowanceChargeReason></xsl:for-each>
      <xsl:for-each select="percentage"><cbc:MultiplierFactorNumeric><xsl:value-of select="f:num(.)"/></cbc:MultiplierFactorNumeric></xsl:for-each>
      <cbc:Amount currencyID="{$currency}"><xsl:value-of select="f:num(amount)"/></cbc:Amount>
      <xsl:for-each select="baseAmount"><cbc:BaseAmount currencyID="{$currency}"><xsl:value-of select="f:num(.)"/></cbc:BaseAmount></xsl:for-each>
      <xsl:if test="vatCategoryCode">
        <cac:TaxCategory>
          <cbc:ID><xsl:value-of select="vatCategoryCode"/></cbc:ID>
          <xsl:for-each select="vatRate"><cbc:Percent><xsl:value-of select="f:num(.)"/></cbc:Percent></xsl:for-each>
          <cac:TaxScheme><cbc:ID>VAT</cbc:ID></cac:TaxScheme>
        </cac:TaxCategory>
      </xsl:if>
    </cac:AllowanceCharge>
  </xsl:template>

  <!-- BG-23 -->
  <xsl:template match="vatBreakdown">
    <cac:TaxSubtotal>
      <cbc:TaxableAmount currencyID="{$currency}"><xsl:value-of select="f:num(vatCategoryTaxableAmount)"/></cbc:TaxableAmount>
      <cbc:TaxAmount currencyID="{$currency}"><xsl:value-of select="f:num(vatCategoryTaxAmount)"/></cbc:TaxAmount>
      <cac:TaxCategory>
        <cbc:ID><xsl:value-of select="vatCategoryCode"/></cbc:ID>
        <xsl:for-each select="vatCategoryRate"><cbc:Percent><xsl:value-of select="f:num(.)"/></cbc:Percent></xsl:for-each>
        <xsl:for-each select="exemptionReasonCode"><cbc:TaxExemptionReasonCode><xsl:value-of select="."/></cbc:TaxExemptionReasonCode></xsl:for-each>
        <xsl:for-each select="exemptionReason"><cbc:TaxExemptionReason><xsl:value-of select="."/></cbc:TaxExemptionReason></xsl:for-each>
        <cac:TaxScheme><cbc:ID>VAT</cbc:ID></cac:TaxScheme>
      </cac:TaxCategory>
    </cac:TaxSubtotal>
  </xsl:template>

  <!-- BG-22 -->
  <xsl:template match="documentTotals">
    <cac:LegalMonetaryTotal>
      <xsl:for-each select="lineExtensionAmount, taxExclusiveAmount, taxInclusiveAmount, allowanceTotalAmount,
                            chargeTotalAmount, prepaidAmount, payableRoundingAmount, payableAmount">
        <xsl:element name="cbc:{upper-case(substring(local-name(), 1, 1)) || substring(local-name(), 2)}">
          <xsl:attribute name="currencyID" select="$currency"/>
          <xsl:value-of select="f:num(.)"/>
        </xsl:element>
      </xsl:for-each>
    </cac:LegalMonetaryTotal>
  </xsl:template>

  <!-- BG-25 -->
  <!-- BG-25, and the XRechnung extension's sub-invoice lines (BG-DEX-01), the same shape nested at the line's end -->
  <xsl:template match="invoiceLine | subInvoiceLine">
    <xsl:element name="cac:{if (self::subInvoiceLine) then 'Sub' else ''}{$line-name}">
      <cbc:ID><xsl:value-of select="lineIdentifier"/></cbc:ID>
      <xsl:for-each select="note"><cbc:Note><xsl:value-of select="."/></cbc:Note></xsl:for-each>
      <xsl:for-each select="quantity">
        <xsl:element name="{if ($credit-note) then 'cbc:CreditedQuantity' else 'cbc:InvoicedQuantity'}">
          <xsl:for-each select="../unitCode"><xsl:attribute name="unitCode" select="."/></xsl:for-each>
          <xsl:value-of select="f:num(.)"/>
        </xsl:element>
      </xsl:for-each>
      <cbc:LineExtensionAmount currencyID="{$currency}"><xsl:value-of select="f:num(netAmount)"/></cbc:LineExtensionAmount>
      <xsl:for-each select="buyerAccountingReference"><cbc:AccountingCost><xsl:value-of select="."/></cbc:AccountingCost></xsl:for-each>
      <xsl:apply-templates select="invoiceLinePeriod"/>
      <xsl:for-each select="referencedPurchaseOrderLine">
        <cac:OrderLineReference><cbc:LineID><xsl:value-of select="."/></cbc:LineID></cac:OrderLineReference>
      </xsl:for-each>
      <xsl:apply-templates select="objectIdentifier"/>
      <xsl:apply-templates select="invoiceLineAllowance | invoiceLineCharge"/>
      <xsl:apply-templates select="itemInformation"/>
      <xsl:apply-templates select="priceDetails"/>
      <xsl:apply-templates select="subInvoiceLine"/>
    </xsl:element>
  </xsl:template>

  <!-- BG-31 with the line VAT (BG-30) and attributes (BG-32) -->
  <xsl:template match="itemInformation">
    <cac:Item>
      <xsl:for-each select="description"><cbc:Description><xsl:value-of select="."/></cbc:Description></xsl:for-each>
      <cbc:Name><xsl:value-of select="name"/></cbc:Name>
      <xsl:for-each select="buyersIdentifier"><cac:BuyersItemIdentification><cbc:ID><xsl:value-of select="."/></cbc:ID></cac:BuyersItemIdentification></xsl:for-each>
      <xsl:for-each select="sellersIdentifier"><cac:SellersItemIdentification><cbc:ID><xsl:value-of select="."/></cbc:ID></cac:SellersItemIdentification></xsl:for-each>
      <xsl:for-each select="standardIdentifier">
        <cac:StandardItemIdentification>
          <cbc:ID>
            <xsl:for-each select="../standardIdentifierSchemeId"><xsl:attribute name="schemeID" select="."/></xsl:for-each>
            <xsl:value-of select="."/>
          </cbc:ID>
        </cac:StandardItemIdentification>
      </xsl:for-each>
      <xsl:for-each select="countryOfOrigin"><cac:OriginCountry><cbc:IdentificationCode><xsl:value-of select="."/></cbc:IdentificationCode></cac:OriginCountry></xsl:for-each>
      <xsl:for-each select="classifiedIdentifier, additionalClassifiedIdentifier/classifiedIdentifier">
        <cac:CommodityClassification>
          <cbc:ItemClassificationCode>
            <xsl:for-each select="../classifiedIdentifierSchemeId"><xsl:attribute name="listID" select="."/></xsl:for-each>
            <xsl:for-each select="../classifiedIdentifierVersion"><xsl:attribute name="listVersionID" select="."/></xsl:for-each>
            <xsl:value-of select="."/>
          </cbc:ItemClassificationCode>
        </cac:CommodityClassification>
      </xsl:for-each>
      <xsl:for-each select="../lineVatInformation">
        <cac:ClassifiedTaxCategory>
          <cbc:ID><xsl:value-of select="vatCategoryCode"/></cbc:ID>
          <xsl:for-each select="vatRate"><cbc:Percent><xsl:value-of select="f:num(.)"/></cbc:Percent></xsl:for-each>
          <cac:TaxScheme><cbc:ID>VAT</cbc:ID></cac:TaxScheme>
        </cac:ClassifiedTaxCategory>
      </xsl:for-each>
      <xsl:for-each select="itemAttribute">
        <cac:AdditionalItemProperty>
          <cbc:Name><xsl:value-of select="name"/></cbc:Name>
          <cbc:Value><xsl:value-of select="value"/></cbc:Value>
        </cac:AdditionalItemProperty>
      </xsl:for-each>
    </cac:Item>
  </xsl:template>

  <!-- BG-29: net price (BT-146), base quantity (BT-149/150), gross price (BT-148) with its discount (BT-147,
       computed by the canonical layer whenever both prices are known; without a net price the document fails
       the XSD at cbc:PriceAmount anyway). -->
  <xsl:template match="priceDetails">
    <cac:Price>
      <cbc:PriceAmount currencyID="{$currency}"><xsl:value-of select="f:num(netPrice)"/></cbc:PriceAmount>
      <xsl:for-each select="priceBasisQuantity">
        <cbc:BaseQuantity>
          <xsl:for-each select="../basisUnitCode"><xsl:attribute name="unitCode" select="."/></xsl:for-each>
          <xsl:value-of select="f:num(.)"/>
        </cbc:BaseQuantity>
      </xsl:for-each>
      <xsl:if test="grossPrice or priceDiscount">
        <cac:AllowanceCharge>
          <cbc:ChargeIndicator>false</cbc:ChargeIndicator>
          <!-- UBL requires the amount beside the gross price: BT-147 as sent, else gross - net -->
          <cbc:Amount currencyID="{$currency}"><xsl:value-of select="f:num((priceDiscount,
              netPrice ! (xs:decimal(../grossPrice) - xs:decimal(.)))[1])"/></cbc:Amount>
          <xsl:for-each select="grossPrice">
            <cbc:BaseAmount currencyID="{$currency}"><xsl:value-of select="f:num(.)"/></cbc:BaseAmount>
          </xsl:for-each>
        </cac:AllowanceCharge>
      </xsl:if>
    </cac:Price>
  </xsl:template>

</xsl:stylesheet>
