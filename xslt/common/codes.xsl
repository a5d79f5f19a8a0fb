<?xml version="1.0" encoding="UTF-8"?>
<!-- Code decisions shared by cii.xsl and ubl.xsl: which values a syntax binding writes, and how. -->
<xsl:stylesheet version="3.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:xs="http://www.w3.org/2001/XMLSchema"
    xmlns:f="urn:einvoice-pipeline:xslt-functions"
    xpath-default-namespace="urn:einvoice-pipeline:canonical:1"
    exclude-result-prefixes="#all">

  <!-- An IBAN (ISO 13616: country, check digits, BBAN) goes to the IBAN element of CII;
       any other account identifier is proprietary. -->
  <xsl:function name="f:is-iban" as="xs:boolean">
    <xsl:param name="account" as="xs:string"/>
    <xsl:sequence select="matches(replace($account, '\s', ''), '^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$')"/>
  </xsl:function>

  <!-- BT-21 + BT-22 in one UBL Note: "#SUBJECT#text" (the convention the CEN UBL binding and XRechnung use). -->
  <xsl:function name="f:note-with-subject" as="xs:string">
    <xsl:param name="text" as="xs:string"/>
    <xsl:param name="subject" as="xs:string?"/>
    <xsl:sequence select="if (normalize-space($subject)) then '#' || normalize-space($subject) || '#' || $text else $text"/>
  </xsl:function>

</xsl:stylesheet>
