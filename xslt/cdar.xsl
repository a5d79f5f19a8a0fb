<?xml version="1.0" encoding="UTF-8"?>
<!-- Canonical status (pipeline.write.cdar, urn:einvoice-pipeline:canonical:status:1) -> France's lifecycle status
     message (CDV): UN/CEFACT Cross Domain Acknowledgement and Response D22B, as FNFE-MPE's examples write it.
     Element order follows the D22B XSD; one message reports one status of one invoice (MDT-74 false). Date-times
     (ISO, local) are written in format 204 (YYYYMMDDHHMMSS), dates in format 102 (YYYYMMDD). Values are the
     canonical document's, nothing is defaulted here: the model (pipeline.invoice.cdar.with_derived) fills the status
     name, the phase and the document status code before. xslt/read-cdar.xsl is the way back. -->
<xsl:stylesheet version="3.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:xs="http://www.w3.org/2001/XMLSchema"
    xmlns:f="urn:einvoice-pipeline:xslt-functions"
    xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossDomainAcknowledgementAndResponse:100"
    xmlns:ram="urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
    xmlns:qdt="urn:un:unece:uncefact:data:standard:QualifiedDataType:100"
    xmlns:udt="urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100"
    xpath-default-namespace="urn:einvoice-pipeline:canonical:status:1"
    exclude-result-prefixes="xs f">

  <!-- Indented like the invoices we write: a finding's line means something. -->
  <xsl:output method="xml" encoding="UTF-8" indent="yes"/>

  <!-- The buyer of the invoice (a party of the referenced document) and the seller's identifier scheme (SIREN). -->
  <xsl:variable name="buyer-role" select="'BY'"/>
  <xsl:variable name="siren-scheme" select="'0002'"/>

  <xsl:template match="/">
    <xsl:if test="not(lifecycleStatus)">
      <xsl:message terminate="yes">cdar.xsl: the input is not a canonical status (urn:einvoice-pipeline:canonical:status:1 lifecycleStatus)</xsl:message>
    </xsl:if>
    <xsl:apply-templates select="lifecycleStatus"/>
  </xsl:template>

  <!-- ISO date-time 2025-07-01T15:10:00 -> 20250701151000 (format 204); ISO date -> 20250701 (format 102). -->
  <xsl:function name="f:digits" as="xs:string">
    <xsl:param name="iso" as="xs:string"/>
    <xsl:sequence select="replace($iso, '[-T:]', '')"/>
  </xsl:function>

  <xsl:template match="lifecycleStatus">
    <rsm:CrossDomainAcknowledgementAndResponse>
      <rsm:ExchangedDocumentContext>
        <xsl:for-each select="message/businessProcess">
          <ram:BusinessProcessSpecifiedDocumentContextParameter>
            <ram:ID><xsl:value-of select="."/></ram:ID>
          </ram:BusinessProcessSpecifiedDocumentContextParameter>
        </xsl:for-each>
        <ram:GuidelineSpecifiedDocumentContextParameter>
          <ram:ID><xsl:value-of select="message/guidelineId"/></ram:ID>
        </ram:GuidelineSpecifiedDocumentContextParameter>
      </rsm:ExchangedDocumentContext>
      <xsl:apply-templates select="message"/>
      <xsl:apply-templates select="status"/>
    </rsm:CrossDomainAcknowledgementAndResponse>
  </xsl:template>

  <xsl:template match="message">
    <rsm:ExchangedDocument>
      <xsl:for-each select="id"><ram:ID><xsl:value-of select="."/></ram:ID></xsl:for-each>
      <xsl:for-each select="name"><ram:Name><xsl:value-of select="."/></ram:Name></xsl:for-each>
      <xsl:for-each select="issueDateTime">
        <ram:IssueDateTime><xsl:sequence select="f:date-time(.)"/></ram:IssueDateTime>
      </xsl:for-each>
      <xsl:for-each select="sender"><ram:SenderTradeParty><xsl:apply-templates select="."/></ram:SenderTradeParty></xsl:for-each>
      <xsl:for-each select="issuer"><ram:IssuerTradeParty><xsl:apply-templates select="."/></ram:IssuerTradeParty></xsl:for-each>
      <xsl:for-each select="recipients/recipient">
        <ram:RecipientTradeParty><xsl:apply-templates select="."/></ram:RecipientTradeParty>
      </xsl:for-each>
    </rsm:ExchangedDocument>
  </xsl:template>

  <!-- A party: GlobalID (with its scheme), Name, RoleCode, URIUniversalCommunication (the electronic address). -->
  <xsl:template match="sender | issuer | recipient">
    <xsl:for-each select="id">
      <ram:GlobalID>
        <xsl:for-each select="../idScheme"><xsl:attribute name="schemeID" select="."/></xsl:for-each>
        <xsl:value-of select="."/>
      </ram:GlobalID>
    </xsl:for-each>
    <xsl:for-each select="name"><ram:Name><xsl:value-of select="."/></ram:Name></xsl:for-each>
    <xsl:for-each select="role"><ram:RoleCode><xsl:value-of select="."/></ram:RoleCode></xsl:for-each>
    <xsl:for-each select="electronicAddress">
      <ram:URIUniversalCommunication>
        <ram:URIID>
          <xsl:for-each select="../electronicAddressScheme"><xsl:attribute name="schemeID" select="."/></xsl:for-each>
          <xsl:value-of select="."/>
        </ram:URIID>
      </ram:URIUniversalCommunication>
    </xsl:for-each>
  </xsl:template>

  <xsl:function name="f:date-time" as="element()">
    <xsl:param name="iso" as="xs:string"/>
    <udt:DateTimeString format="204"><xsl:value-of select="f:digits($iso)"/></udt:DateTimeString>
  </xsl:function>

  <xsl:template match="status">
    <xsl:variable name="invoice" select="../invoice"/>
    <rsm:AcknowledgementDocument>
      <ram:MultipleReferencesIndicator><udt:Indicator>false</udt:Indicator></ram:MultipleReferencesIndicator>
      <xsl:for-each select="typeCode"><ram:TypeCode><xsl:value-of select="."/></ram:TypeCode></xsl:for-each>
      <xsl:for-each select="dateTime"><ram:IssueDateTime><xsl:sequence select="f:date-time(.)"/></ram:IssueDateTime></xsl:for-each>
      <ram:ReferenceReferencedDocument>
        <xsl:for-each select="$invoice/number"><ram:IssuerAssignedID><xsl:value-of select="."/></ram:IssuerAssignedID></xsl:for-each>
        <xsl:for-each select="documentStatusCode"><ram:StatusCode><xsl:value-of select="."/></ram:StatusCode></xsl:for-each>
        <xsl:for-each select="$invoice/typeCode"><ram:TypeCode><xsl:value-of select="."/></ram:TypeCode></xsl:for-each>
        <xsl:for-each select="$invoice/receiptDateTime">
          <ram:ReceiptDateTime><xsl:sequence select="f:date-time(.)"/></ram:ReceiptDateTime>
        </xsl:for-each>
        <xsl:for-each select="$invoice/referenceTypeCode">
          <ram:ReferenceTypeCode><xsl:value-of select="."/></ram:ReferenceTypeCode>
        </xsl:for-each>
        <xsl:for-each select="$invoice/issueDate">
          <ram:FormattedIssueDateTime>
            <qdt:DateTimeString format="102"><xsl:value-of select="f:digits(.)"/></qdt:DateTimeString>
          </ram:FormattedIssueDateTime>
        </xsl:for-each>
        <xsl:for-each select="code"><ram:ProcessConditionCode><xsl:value-of select="."/></ram:ProcessConditionCode></xsl:for-each>
        <xsl:for-each select="name"><ram:ProcessCondition><xsl:value-of select="."/></ram:ProcessCondition></xsl:for-each>
        <xsl:for-each select="$invoice/sellerSiren">
          <ram:IssuerTradeParty>
            <ram:GlobalID schemeID="{$siren-scheme}"><xsl:value-of select="."/></ram:GlobalID>
          </ram:IssuerTradeParty>
        </xsl:for-each>
        <xsl:for-each select="$invoice/buyerSiren">
          <ram:RecipientTradeParty>
            <ram:GlobalID schemeID="{$siren-scheme}"><xsl:value-of select="."/></ram:GlobalID>
            <ram:RoleCode><xsl:value-of select="$buyer-role"/></ram:RoleCode>
          </ram:RecipientTradeParty>
        </xsl:for-each>
        <xsl:apply-templates select="details/detail"/>
      </ram:ReferenceReferencedDocument>
    </rsm:AcknowledgementDocument>
  </xsl:template>

  <!-- MDG-37, in the order of the D22B DocumentStatusType -->
  <xsl:template match="detail">
    <ram:SpecifiedDocumentStatus>
      <xsl:for-each select="reasonCode"><ram:ReasonCode><xsl:value-of select="."/></ram:ReasonCode></xsl:for-each>
      <xsl:for-each select="reason"><ram:Reason><xsl:value-of select="."/></ram:Reason></xsl:for-each>
      <xsl:for-each select="statusCode"><ram:ProcessConditionCode><xsl:value-of select="."/></ram:ProcessConditionCode></xsl:for-each>
      <xsl:for-each select="statusName"><ram:ProcessCondition><xsl:value-of select="."/></ram:ProcessCondition></xsl:for-each>
      <xsl:for-each select="actionCode"><ram:RequestedActionCode><xsl:value-of select="."/></ram:RequestedActionCode></xsl:for-each>
      <xsl:for-each select="action"><ram:RequestedAction><xsl:value-of select="."/></ram:RequestedAction></xsl:for-each>
      <xsl:for-each select="sequence"><ram:SequenceNumeric><xsl:value-of select="."/></ram:SequenceNumeric></xsl:for-each>
      <xsl:for-each select="note"><ram:IncludedNote><ram:Content><xsl:value-of select="."/></ram:Content></ram:IncludedNote></xsl:for-each>
      <xsl:apply-templates select="characteristics/characteristic"/>
    </ram:SpecifiedDocumentStatus>
  </xsl:template>

  <!-- MDG-43, in the order of the D22B DocumentCharacteristicType -->
  <xsl:template match="characteristic">
    <ram:SpecifiedDocumentCharacteristic>
      <xsl:for-each select="id"><ram:ID><xsl:value-of select="."/></ram:ID></xsl:for-each>
      <xsl:for-each select="typeCode"><ram:TypeCode><xsl:value-of select="."/></ram:TypeCode></xsl:for-each>
      <xsl:for-each select="changed">
        <ram:ValueChangedIndicator><udt:IndicatorString><xsl:value-of select="."/></udt:IndicatorString></ram:ValueChangedIndicator>
      </xsl:for-each>
      <xsl:for-each select="name"><ram:Name><xsl:value-of select="."/></ram:Name></xsl:for-each>
      <xsl:for-each select="location"><ram:Location><xsl:value-of select="."/></ram:Location></xsl:for-each>
      <xsl:for-each select="amount">
        <ram:ValueAmount>
          <xsl:for-each select="../currencyCode"><xsl:attribute name="currencyID" select="."/></xsl:for-each>
          <xsl:value-of select="."/>
        </ram:ValueAmount>
      </xsl:for-each>
      <xsl:for-each select="date">
        <ram:ValueDateTime><udt:DateTimeString format="102"><xsl:value-of select="f:digits(.)"/></udt:DateTimeString></ram:ValueDateTime>
      </xsl:for-each>
      <xsl:for-each select="percent"><ram:ValuePercent><xsl:value-of select="."/></ram:ValuePercent></xsl:for-each>
    </ram:SpecifiedDocumentCharacteristic>
  </xsl:template>
</xsl:stylesheet>
