<?xml version="1.0" encoding="UTF-8"?>
<!-- Building blocks shared by read-cii.xsl and read-ubl.xsl (CII / UBL -> canonical invoice, docs/canonical.md).

     Values are taken as the source writes them (text trimmed at both ends, numbers in their own lexical form,
     dates as YYYY-MM-DD); a value the canonical schema cannot hold (an empty text, a number that is no xs:decimal,
     a date in another format than 102) is not written, so its source node stays unreferenced and is reported.

     Provenance: every canonical element with a value gets s:src (namespace urn:einvoice-pipeline:source:1), the
     space-separated path() (document order) of the source nodes it was read from: the node holding the value
     and the other nodes it consumed (a repeated copy of the same value, the @format of a CII date, an amount's @currencyID
     equal to the document currency, a qualifier such as schemeID="VA"). A group element (vatBreakdown,
     documentLevelAllowance, ...) carries s:src when the binding identifies it by a fixed source value (a type
     code, a charge indicator, a tax scheme "VAT"). A source leaf that no s:src names was not read.
     Parameter $provenance = false() writes no s:src (and no s namespace). Parameter $src = 'id' names the nodes
     by cheaper tokens the caller turns into the same path()s (r:id); pipeline.read.provenance.split does. -->
<xsl:stylesheet version="3.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:xs="http://www.w3.org/2001/XMLSchema"
    xmlns:r="urn:einvoice-pipeline:xslt-read-functions"
    xmlns:s="urn:einvoice-pipeline:source:1"
    exclude-result-prefixes="#all">

  <xsl:param name="provenance" as="xs:boolean" select="true()"/>
  <xsl:param name="src" as="xs:string" select="'path'"/>
  <xsl:variable name="r:ids" as="xs:boolean" select="$src eq 'id'"/>

  <xsl:variable name="r:canonical-ns" as="xs:string" select="'urn:einvoice-pipeline:canonical:1'"/>
  <xsl:variable name="r:source-ns" as="xs:string" select="'urn:einvoice-pipeline:source:1'"/>

  <!-- The namespace declaration of s on the canonical root (only with provenance). -->
  <xsl:function name="r:source-namespace" as="namespace-node()?">
    <xsl:if test="$provenance">
      <xsl:namespace name="s" select="$r:source-ns"/>
    </xsl:if>
  </xsl:function>

  <!-- s:src naming $nodes (duplicates removed, document order). -->
  <xsl:function name="r:src" as="attribute()?">
    <xsl:param name="nodes" as="node()*"/>
    <xsl:if test="$provenance and exists($nodes)">
      <xsl:attribute name="s:src" namespace="{$r:source-ns}"
                     select="string-join(if ($r:ids) then ($nodes/.) ! r:id(.) else if ($r:large) then ($nodes/.) ! r:path(.)
                                         else ($nodes/.) ! path(.), ' ')"/>
    </xsl:if>
  </xsl:function>

  <!-- With $src = 'id': an element as its generate-id(), an attribute as its element's id and its path() step
       ('d1e42/@schemeID'), any other node as its path(); the canonical root's s:ids (r:source-ids) lists the ids
       of all source elements in document order, so the caller pairs them with the path()s of its own tree of the
       same document. path() walks the ancestors and counts each one's same-named preceding siblings on every
       call: on a typical invoice half of this stylesheet's time, against a tenth for the ids. -->
  <xsl:function name="r:id" as="xs:string">
    <xsl:param name="node" as="node()"/>
    <xsl:sequence select="
        if ($node instance of element()) then generate-id($node)
        else if ($node instance of attribute() and $node/.. instance of element()) then
          generate-id($node/..) || '/@' || (if (namespace-uri($node) eq '') then local-name($node)
                                            else 'Q{' || namespace-uri($node) || '}' || local-name($node))
        else path($node)"/>
  </xsl:function>

  <!-- s:ids on the canonical root ($node: any node of the source), with $src = 'id'. -->
  <xsl:function name="r:source-ids" as="attribute()?">
    <xsl:param name="node" as="node()"/>
    <xsl:if test="$provenance and $r:ids">
      <xsl:attribute name="s:ids" namespace="{$r:source-ns}" select="string-join(root($node)//* ! generate-id(), ' ')"/>
    </xsl:if>
  </xsl:function>

  <!-- path() walks every ancestor of a node and counts each one's preceding siblings of the same name, on
       every call: in a large document (a 1,000-line invoice: each line's index counts the lines before it) that
       is quadratic (seconds). There r:path builds the same string from the (cached) path of the parent; in a
       small one path() itself is cheaper than the cache (Saxon function calls and caching cost more per step). -->
  <xsl:variable name="r:large" as="xs:boolean" select="exists(/descendant::*[2000])"/>

  <!-- path($node), from the cached path of its parent. Element and attribute steps are written as path()
       writes them; other nodes are left to path(). -->
  <xsl:function name="r:path" as="xs:string" cache="yes">
    <xsl:param name="node" as="node()"/>
    <xsl:sequence select="
        if ($node instance of element()) then
          (if ($node/.. instance of element()) then r:path($node/..) else if ($node/.. instance of document-node()) then ''
           else path($node/..))
          || '/Q{' || namespace-uri($node) || '}' || local-name($node) || '[' || r:index($node) || ']'
        else if ($node instance of attribute() and $node/.. instance of element()) then
          r:path($node/..) || '/@' || (if (namespace-uri($node) eq '') then local-name($node)
                                       else 'Q{' || namespace-uri($node) || '}' || local-name($node))
        else path($node)"/>
  </xsl:function>

  <!-- The position of $element among its siblings of the same name (the [n] of its path() step), counted back
       64 such siblings at a time from a cached position (linear in the siblings, recursion depth n / 64). -->
  <xsl:function name="r:index" as="xs:integer" cache="yes">
    <xsl:param name="element" as="element()"/>
    <xsl:variable name="name" select="node-name($element)"/>
    <xsl:variable name="back" select="$element/preceding-sibling::*[node-name() eq $name][64]"/>
    <xsl:sequence select="if (exists($back)) then r:index($back) + 64
                          else count($element/preceding-sibling::*[node-name() eq $name]) + 1"/>
  </xsl:function>

  <!-- ===== values ===== -->

  <!-- The value of a source node as canonical text of $kind ('text', 'decimal', 'date'); empty when the
       node has none the canonical schema can hold. -->
  <xsl:function name="r:value" as="xs:string?">
    <xsl:param name="node" as="node()"/>
    <xsl:param name="kind" as="xs:string"/>
    <xsl:variable name="text" select="r:trim(string($node))"/>
    <xsl:choose>
      <xsl:when test="$text eq ''"/>
      <xsl:when test="$kind eq 'decimal'">
        <xsl:sequence select="$text[. castable as xs:decimal]"/>
      </xsl:when>
      <xsl:when test="$kind eq 'date'">
        <xsl:sequence select="r:date($text, $node/@format)"/>
      </xsl:when>
      <!-- texts whose line breaks say something (BT-20: XRechnung's Skonto lines each end with one, BR-DE-18;
           notes): as written, when there is more than whitespace -->
      <xsl:when test="$kind eq 'verbatim'">
        <xsl:sequence select="string($node)"/>
      </xsl:when>
      <xsl:otherwise>
        <xsl:sequence select="$text"/>
      </xsl:otherwise>
    </xsl:choose>
  </xsl:function>

  <!-- $text without leading and trailing whitespace (inner whitespace kept: notes keep their lines). A regular
       expression over a whole long text (an attached document of megabytes) takes seconds in Saxon, so the
       expressions only look at its ends, and only when the first or last character is whitespace (\s: space, tab,
       CR, LF): most values have none, and two regular expressions per value were a quarter of the run. -->
  <xsl:function name="r:trim" as="xs:string">
    <xsl:param name="text" as="xs:string"/>
    <xsl:sequence select="if (not(substring($text, 1, 1) = $r:whitespace or substring($text, string-length($text)) = $r:whitespace))
                          then $text else r:trim-ends($text)"/>
  </xsl:function>
  <xsl:variable name="r:whitespace" as="xs:string+" select="' ', '&#9;', '&#10;', '&#13;'"/>
  <xsl:function name="r:trim-ends" as="xs:string">
    <xsl:param name="text" as="xs:string"/>
    <xsl:variable name="length" select="string-length($text)"/>
    <xsl:variable name="head" select="substring($text, 1, 100)"/>
    <xsl:variable name="tail" select="substring($text, $length - 99)"/>
    <xsl:variable name="lead" select="string-length($head) - string-length(replace($head, '^\s+', ''))"/>
    <xsl:variable name="trail" select="string-length($tail) - string-length(replace($tail, '\s+$', ''))"/>
    <xsl:sequence select="
        if ($lead eq 0 and $trail eq 0) then $text
        else if ($lead lt 100 and $trail lt 100) then substring($text, $lead + 1, $length - $lead - $trail)
        else replace($text, '^\s+|\s+$', '')"/>
  </xsl:function>

  <!-- UNTDID 2379 format 102 (CCYYMMDD; the CII dates, $format their @format) or an xs:date (UBL, no $format)
       -> YYYY-MM-DD, an xs:date's time zone kept as sent (2016-04-04+01:00); empty for any other format. -->
  <xsl:function name="r:date" as="xs:string?">
    <xsl:param name="text" as="xs:string"/>
    <xsl:param name="format" as="attribute()?"/>
    <xsl:variable name="iso" as="xs:string?" select="
        if (matches($text, '^[0-9]{8}$') and (empty($format) or normalize-space($format) eq '102'))
        then replace($text, '^(....)(..)(..)$', '$1-$2-$3')
        else if (empty($format)) then $text
        else ()"/>
    <xsl:sequence select="$iso[. castable as xs:date]"/>
  </xsl:function>

  <!-- ===== canonical elements ===== -->

  <!-- An element $name in the canonical namespace with text $value and s:src naming $src. -->
  <xsl:function name="r:element" as="element()">
    <xsl:param name="name" as="xs:string"/>
    <xsl:param name="value" as="xs:string"/>
    <xsl:param name="src" as="node()*"/>
    <xsl:element name="{$name}" namespace="{$r:canonical-ns}">
      <xsl:sequence select="r:src($src)"/>
      <xsl:value-of select="$value"/>
    </xsl:element>
  </xsl:function>

  <!-- A canonical leaf from the first of $nodes with a usable value of $kind. Its s:src names that node, its
       @format (a CII date), every other of $nodes holding the same value (a copy the binding repeats, such as
       BT-8 on every CII breakdown), and $with (qualifiers read with it). Nothing when no node has a value. -->
  <xsl:function name="r:leaf" as="element()?">
    <xsl:param name="name" as="xs:string"/>
    <xsl:param name="nodes" as="node()*"/>
    <xsl:param name="kind" as="xs:string"/>
    <xsl:param name="with" as="node()*"/>
    <!-- each node's value once ('' for none: r:value never returns '') -->
    <xsl:variable name="values" as="xs:string*" select="$nodes ! string(r:value(., $kind))"/>
    <xsl:variable name="value" select="$values[. ne ''][1]"/>
    <xsl:if test="exists($value)">
      <xsl:variable name="same" select="for $i in index-of($values, $value) return $nodes[$i]"/>
      <xsl:sequence select="r:element($name, $value, ($same, $same/@format[$kind eq 'date'], $with))"/>
    </xsl:if>
  </xsl:function>
  <xsl:function name="r:leaf" as="element()?">
    <xsl:param name="name" as="xs:string"/>
    <xsl:param name="nodes" as="node()*"/>
    <xsl:sequence select="r:leaf($name, $nodes, 'text', ())"/>
  </xsl:function>
  <xsl:function name="r:leaf" as="element()?">
    <xsl:param name="name" as="xs:string"/>
    <xsl:param name="nodes" as="node()*"/>
    <xsl:param name="kind" as="xs:string"/>
    <xsl:sequence select="r:leaf($name, $nodes, $kind, ())"/>
  </xsl:function>

  <!-- An amount: a decimal whose @currencyID, when it is $currency, is read with it (a currency other than the
       document's is not: the node's attribute then stays unreferenced). -->
  <xsl:function name="r:amount" as="element()?">
    <xsl:param name="name" as="xs:string"/>
    <xsl:param name="nodes" as="element()*"/>
    <xsl:param name="currency" as="xs:string?"/>
    <xsl:sequence select="r:leaf($name, $nodes, 'decimal', $nodes/@currencyID[normalize-space(.) eq $currency])"/>
  </xsl:function>

  <!-- Group elements (vatBreakdown, documentLevelAllowance, ...) are written by the stylesheets as
       xsl:where-populated around the element, its s:src (r:src) and its content: an object whose fields are all
       absent is itself absent (docs/canonical.md rule 6). They are written in place, not built as a tree that is
       then copied into its parent (which a function taking the content as a parameter costs, at every level). -->

  <!-- The first of $nodes that holds a text (to read an identifier together with its own attributes). -->
  <xsl:function name="r:first" as="node()?">
    <xsl:param name="nodes" as="node()*"/>
    <xsl:sequence select="$nodes[exists(r:value(., 'text'))][1]"/>
  </xsl:function>

  <!-- A source boolean (xs:boolean: true/false/1/0) -->
  <xsl:function name="r:is-true" as="xs:boolean">
    <xsl:param name="node" as="node()?"/>
    <xsl:sequence select="normalize-space($node) = ('true', '1')"/>
  </xsl:function>
  <xsl:function name="r:is-false" as="xs:boolean">
    <xsl:param name="node" as="node()?"/>
    <xsl:sequence select="normalize-space($node) = ('false', '0')"/>
  </xsl:function>

</xsl:stylesheet>
