<?xml version="1.0" encoding="UTF-8"?>
<!-- Value formatting shared by cii.xsl and ubl.xsl. Canonical values are already normalised by the model
     (amounts with two decimals, ISO dates), so these functions only change the lexical form a syntax needs. -->
<xsl:stylesheet version="3.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:xs="http://www.w3.org/2001/XMLSchema"
    xmlns:f="urn:einvoice-pipeline:xslt-functions"
    exclude-result-prefixes="#all">

  <!-- ISO date YYYY-MM-DD -> UNTDID 2379 format 102 (CCYYMMDD), as CII wants it. -->
  <xsl:function name="f:date102" as="xs:string">
    <xsl:param name="iso" as="xs:string"/>
    <!-- format 102 has no time zone: a date read with one (UBL's xs:date) loses it, which convert says -->
    <xsl:sequence select="translate(substring(normalize-space($iso), 1, 10), '-', '')"/>
  </xsl:function>

  <!-- Numbers are written exactly as the canonical document carries them (signs and trailing zeros kept):
       golden files and round trips depend on it. An absent value gives an empty element, which the
       official rules then report (a 422 with the business term), instead of a stylesheet error. -->
  <xsl:function name="f:num" as="xs:string">
    <xsl:param name="value" as="item()?"/>
    <xsl:sequence select="normalize-space(string($value))"/>
  </xsl:function>


</xsl:stylesheet>
