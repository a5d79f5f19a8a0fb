<?xml version="1.0" encoding="UTF-8"?>
<!-- France's lifecycle status message (CDV, UN/CEFACT CDAR D22B) -> canonical status
     (urn:einvoice-pipeline:canonical:status:1, pipeline.write.cdar): the way back of xslt/cdar.xsl.

     One status of one invoice: the first AcknowledgementDocument and its ReferenceReferencedDocument number
     $reference (1 by default; parse lists the others of a message reporting several, MDT-74 true, as unmapped),
     or of each invoice $reference to $last (the timeline: a status of each).
     A party's first GlobalID; the seller and the buyer of the invoice by their SIREN (scheme 0002; the buyer is
     the referenced document's recipient of role BY). Codes and identifiers are read with surrounding space
     removed, free texts (names, reasons, actions, notes) as written. Date-times of format 204 (YYYYMMDDHHMMSS)
     become ISO local date-times, dates of format 102 ISO dates; a value in another form is passed on as written,
     for the model to refuse with its field. -->
<xsl:stylesheet version="3.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:xs="http://www.w3.org/2001/XMLSchema"
    xmlns:f="urn:einvoice-pipeline:xslt-functions"
    xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossDomainAcknowledgementAndResponse:100"
    xmlns:ram="urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
    xmlns:qdt="urn:un:unece:uncefact:data:standard:QualifiedDataType:100"
    xmlns:udt="urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100"
    xmlns="urn:einvoice-pipeline:canonical:status:1"
    exclude-result-prefixes="#all">

  <xsl:output method="xml" encoding="UTF-8" indent="no"/>

  <!-- which invoice of a message about several (MDT-74 true) to read: its position, as a string parameter -->
  <xsl:param name="reference" select="'1'"/>
  <!-- several at once, $reference to $last: a lifecycleStatus each, under lifecycleStatuses. One run for all (a run
       per invoice cost 0.5 ms and walked the invoices before it: 3,001 took seconds). -->
  <xsl:param name="last" select="''"/>
  <xsl:variable name="siren-scheme" select="'0002'"/>

  <xsl:template match="/">
    <xsl:if test="not(rsm:CrossDomainAcknowledgementAndResponse)">
      <xsl:message terminate="yes">read-cdar.xsl: the input is no CDAR message (rsm:CrossDomainAcknowledgementAndResponse)</xsl:message>
    </xsl:if>
    <xsl:variable name="refs" select="rsm:CrossDomainAcknowledgementAndResponse/rsm:AcknowledgementDocument[1]
        /ram:ReferenceReferencedDocument"/>
    <xsl:choose>
      <xsl:when test="$last ne ''">
        <lifecycleStatuses>
          <xsl:for-each select="$refs[position() ge xs:integer($reference) and position() le xs:integer($last)]">
            <xsl:apply-templates select="/rsm:CrossDomainAcknowledgementAndResponse">
              <xsl:with-param name="ref" select="."/>
            </xsl:apply-templates>
          </xsl:for-each>
        </lifecycleStatuses>
      </xsl:when>
      <xsl:otherwise>
        <xsl:apply-templates select="rsm:CrossDomainAcknowledgementAndResponse">
          <xsl:with-param name="ref" select="$refs[xs:integer($reference)]"/>
        </xsl:apply-templates>
      </xsl:otherwise>
    </xsl:choose>
  </xsl:template>

  <!-- format 204 -> 2025-07-01T15:10:00; format 102 -> 2025-07-01; anything else as written. Digits 0-9: XPath's
       \d is any script's, and "２０２５０７０１..." came out dashed, in no form a date is written in -->
  <xsl:function name="f:iso" as="xs:string">
    <xsl:param name="value" as="element()"/>
    <xsl:variable name="text" select="normalize-space($value)"/>
    <xsl:sequence select="
      if ($value/@format = '204' and matches($text, '^[0-9]{14}$'))
      then replace($text, '^(....)(..)(..)(..)(..)(..)$', '$1-$2-$3T$4:$5:$6')
      else if ($value/@format = '102' and matches($text, '^[0-9]{8}$'))
      then replace($text, '^(....)(..)(..)$', '$1-$2-$3')
      else $text"/>
  </xsl:function>

  <!-- an element written when the value is there: codes and identifiers trimmed, texts as written. A value the
       message repeats where the XSD allows one (an invalid message, still read) is taken from its first occurrence:
       pipeline.read.cdar lists the others as unmapped. -->
  <xsl:template name="code">
    <xsl:param name="name" as="xs:string"/>
    <xsl:param name="value" as="node()*"/>
    <xsl:if test="normalize-space($value[1]) ne ''">
      <xsl:element name="{$name}"><xsl:value-of select="normalize-space($value[1])"/></xsl:element>
    </xsl:if>
  </xsl:template>
  <xsl:template name="text">
    <xsl:param name="name" as="xs:string"/>
    <xsl:param name="value" as="node()*"/>
    <xsl:if test="normalize-space($value[1]) ne ''">
      <xsl:element name="{$name}"><xsl:value-of select="$value[1]"/></xsl:element>
    </xsl:if>
  </xsl:template>
  <xsl:template name="when">
    <xsl:param name="name" as="xs:string"/>
    <xsl:param name="value" as="element()*"/>
    <xsl:if test="normalize-space($value[1]) ne ''">
      <xsl:element name="{$name}"><xsl:value-of select="f:iso($value[1])"/></xsl:element>
    </xsl:if>
  </xsl:template>

  <xsl:template match="rsm:CrossDomainAcknowledgementAndResponse">
    <xsl:param name="ref" as="element()?"/>
    <xsl:variable name="context" select="rsm:ExchangedDocumentContext[1]"/>
    <xsl:variable name="exchanged" select="rsm:ExchangedDocument[1]"/>
    <xsl:variable name="ack" select="rsm:AcknowledgementDocument[1]"/>
    <lifecycleStatus>
      <message>
        <xsl:call-template name="code"><xsl:with-param name="name" select="'id'"/><xsl:with-param name="value" select="$exchanged/ram:ID"/></xsl:call-template>
        <xsl:call-template name="text"><xsl:with-param name="name" select="'name'"/><xsl:with-param name="value" select="$exchanged/ram:Name"/></xsl:call-template>
        <xsl:call-template name="when"><xsl:with-param name="name" select="'issueDateTime'"/><xsl:with-param name="value" select="$exchanged/ram:IssueDateTime/udt:DateTimeString"/></xsl:call-template>
        <xsl:call-template name="code"><xsl:with-param name="name" select="'businessProcess'"/><xsl:with-param name="value" select="$context/ram:BusinessProcessSpecifiedDocumentContextParameter/ram:ID"/></xsl:call-template>
        <xsl:call-template name="code"><xsl:with-param name="name" select="'guidelineId'"/><xsl:with-param name="value" select="$context/ram:GuidelineSpecifiedDocumentContextParameter/ram:ID"/></xsl:call-template>
        <xsl:apply-templates select="$exchanged/ram:SenderTradeParty[1]">
          <xsl:with-param name="name" select="'sender'"/>
        </xsl:apply-templates>
        <xsl:apply-templates select="$exchanged/ram:IssuerTradeParty[1]">
          <xsl:with-param name="name" select="'issuer'"/>
        </xsl:apply-templates>
        <xsl:if test="$exchanged/ram:RecipientTradeParty">
          <recipients>
            <xsl:apply-templates select="$exchanged/ram:RecipientTradeParty">
              <xsl:with-param name="name" select="'recipient'"/>
            </xsl:apply-templates>
          </recipients>
        </xsl:if>
      </message>
      <status>
        <xsl:call-template name="code"><xsl:with-param name="name" select="'code'"/><xsl:with-param name="value" select="$ref/ram:ProcessConditionCode"/></xsl:call-template>
        <xsl:call-template name="text"><xsl:with-param name="name" select="'name'"/><xsl:with-param name="value" select="$ref/ram:ProcessCondition[1]"/></xsl:call-template>
        <xsl:call-template name="when"><xsl:with-param name="name" select="'dateTime'"/><xsl:with-param name="value" select="$ack/ram:IssueDateTime/udt:DateTimeString"/></xsl:call-template>
        <xsl:call-template name="code"><xsl:with-param name="name" select="'typeCode'"/><xsl:with-param name="value" select="$ack/ram:TypeCode"/></xsl:call-template>
        <xsl:call-template name="code"><xsl:with-param name="name" select="'documentStatusCode'"/><xsl:with-param name="value" select="$ref/ram:StatusCode"/></xsl:call-template>
        <xsl:if test="$ref/ram:SpecifiedDocumentStatus">
          <details><xsl:apply-templates select="$ref/ram:SpecifiedDocumentStatus"/></details>
        </xsl:if>
      </status>
      <invoice>
        <xsl:call-template name="code"><xsl:with-param name="name" select="'number'"/><xsl:with-param name="value" select="$ref/ram:IssuerAssignedID"/></xsl:call-template>
        <xsl:call-template name="when"><xsl:with-param name="name" select="'issueDate'"/><xsl:with-param name="value" select="$ref/ram:FormattedIssueDateTime/qdt:DateTimeString"/></xsl:call-template>
        <xsl:call-template name="code"><xsl:with-param name="name" select="'typeCode'"/><xsl:with-param name="value" select="$ref/ram:TypeCode"/></xsl:call-template>
        <xsl:call-template name="when"><xsl:with-param name="name" select="'receiptDateTime'"/><xsl:with-param name="value" select="$ref/ram:ReceiptDateTime/udt:DateTimeString"/></xsl:call-template>
        <xsl:call-template name="code"><xsl:with-param name="name" select="'referenceTypeCode'"/><xsl:with-param name="value" select="$ref/ram:ReferenceTypeCode"/></xsl:call-template>
        <xsl:call-template name="code"><xsl:with-param name="name" select="'sellerSiren'"/><xsl:with-param name="value" select="$ref/ram:IssuerTradeParty/ram:GlobalID[@schemeID = $siren-scheme][1]"/></xsl:call-template>
        <xsl:call-template name="code"><xsl:with-param name="name" select="'buyerSiren'"/><xsl:with-param name="value" select="$ref/ram:RecipientTradeParty[normalize-space(ram:RoleCode[1]) = 'BY'][1]/ram:GlobalID[@schemeID = $siren-scheme][1]"/></xsl:call-template>
      </invoice>
    </lifecycleStatus>
  </xsl:template>

  <xsl:template match="ram:SenderTradeParty | ram:IssuerTradeParty | ram:RecipientTradeParty">
    <xsl:param name="name" as="xs:string"/>
    <xsl:variable name="address" select="ram:URIUniversalCommunication/ram:URIID"/>
    <xsl:element name="{$name}">
      <xsl:call-template name="code"><xsl:with-param name="name" select="'role'"/><xsl:with-param name="value" select="ram:RoleCode"/></xsl:call-template>
      <xsl:call-template name="code"><xsl:with-param name="name" select="'id'"/><xsl:with-param name="value" select="ram:GlobalID[1]"/></xsl:call-template>
      <xsl:call-template name="code"><xsl:with-param name="name" select="'idScheme'"/><xsl:with-param name="value" select="ram:GlobalID[1][normalize-space() ne '']/@schemeID"/></xsl:call-template>
      <xsl:call-template name="text"><xsl:with-param name="name" select="'name'"/><xsl:with-param name="value" select="ram:Name"/></xsl:call-template>
      <xsl:call-template name="code"><xsl:with-param name="name" select="'electronicAddress'"/><xsl:with-param name="value" select="$address"/></xsl:call-template>
      <xsl:call-template name="code"><xsl:with-param name="name" select="'electronicAddressScheme'"/><xsl:with-param name="value" select="$address[normalize-space() ne '']/@schemeID"/></xsl:call-template>
    </xsl:element>
  </xsl:template>

  <xsl:template match="ram:SpecifiedDocumentStatus">
    <detail>
      <xsl:call-template name="code"><xsl:with-param name="name" select="'reasonCode'"/><xsl:with-param name="value" select="ram:ReasonCode"/></xsl:call-template>
      <xsl:call-template name="text"><xsl:with-param name="name" select="'reason'"/><xsl:with-param name="value" select="ram:Reason[1]"/></xsl:call-template>
      <xsl:call-template name="code"><xsl:with-param name="name" select="'statusCode'"/><xsl:with-param name="value" select="ram:ProcessConditionCode"/></xsl:call-template>
      <xsl:call-template name="text"><xsl:with-param name="name" select="'statusName'"/><xsl:with-param name="value" select="ram:ProcessCondition[1]"/></xsl:call-template>
      <xsl:call-template name="code"><xsl:with-param name="name" select="'actionCode'"/><xsl:with-param name="value" select="ram:RequestedActionCode"/></xsl:call-template>
      <xsl:call-template name="text"><xsl:with-param name="name" select="'action'"/><xsl:with-param name="value" select="ram:RequestedAction[1]"/></xsl:call-template>
      <xsl:call-template name="code"><xsl:with-param name="name" select="'sequence'"/><xsl:with-param name="value" select="ram:SequenceNumeric"/></xsl:call-template>
      <xsl:call-template name="text"><xsl:with-param name="name" select="'note'"/><xsl:with-param name="value" select="ram:IncludedNote[1]/ram:Content[1]"/></xsl:call-template>
      <xsl:if test="ram:SpecifiedDocumentCharacteristic">
        <characteristics><xsl:apply-templates select="ram:SpecifiedDocumentCharacteristic"/></characteristics>
      </xsl:if>
    </detail>
  </xsl:template>

  <xsl:template match="ram:SpecifiedDocumentCharacteristic">
    <characteristic>
      <xsl:call-template name="code"><xsl:with-param name="name" select="'id'"/><xsl:with-param name="value" select="ram:ID"/></xsl:call-template>
      <xsl:call-template name="code"><xsl:with-param name="name" select="'typeCode'"/><xsl:with-param name="value" select="ram:TypeCode"/></xsl:call-template>
      <xsl:call-template name="code"><xsl:with-param name="name" select="'changed'"/><xsl:with-param name="value" select="ram:ValueChangedIndicator/(udt:IndicatorString, udt:Indicator)[1]"/></xsl:call-template>
      <xsl:call-template name="text"><xsl:with-param name="name" select="'name'"/><xsl:with-param name="value" select="ram:Name[1]"/></xsl:call-template>
      <xsl:call-template name="text"><xsl:with-param name="name" select="'location'"/><xsl:with-param name="value" select="ram:Location"/></xsl:call-template>
      <xsl:call-template name="code"><xsl:with-param name="name" select="'amount'"/><xsl:with-param name="value" select="ram:ValueAmount"/></xsl:call-template>
      <xsl:call-template name="code"><xsl:with-param name="name" select="'currencyCode'"/><xsl:with-param name="value" select="ram:ValueAmount[normalize-space() ne '']/@currencyID"/></xsl:call-template>
      <xsl:call-template name="when"><xsl:with-param name="name" select="'date'"/><xsl:with-param name="value" select="ram:ValueDateTime/udt:DateTimeString"/></xsl:call-template>
      <xsl:call-template name="code"><xsl:with-param name="name" select="'percent'"/><xsl:with-param name="value" select="ram:ValuePercent"/></xsl:call-template>
    </characteristic>
  </xsl:template>
</xsl:stylesheet>
