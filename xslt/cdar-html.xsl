<?xml version="1.0" encoding="UTF-8"?>
<!--
  Canonical status timeline (pipeline.write.cdar.timeline_canonical: statusTimeline, one or several lifecycle status
  messages of France's reform grouped by invoice) -> the readable page (HTML for WeasyPrint and browsers).

  Per invoice: its facts (one its messages state differently with the other values beside it, and a box listing
  each value with the files stating it: `conflicts`), the list of its statuses in time order (when there are
  several), then each status message
  in full: the status and its phase, the message, its parties, the reasons, actions and data it carries. Labels and
  headings follow $lang (en | fr | de: the German wording is ours, the reform's is French); every value is named with its MDT term; the messages' own texts are shown as
  sent, never translated. Layout from templates/invoice.css (the invoice page's; its last block is this page's).
-->
<xsl:stylesheet version="3.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:xs="http://www.w3.org/2001/XMLSchema"
    xmlns:map="http://www.w3.org/2005/xpath-functions/map"
    xmlns:f="urn:einvoice-pipeline:functions"
    xpath-default-namespace="urn:einvoice-pipeline:canonical:status:1"
    exclude-result-prefixes="#all">

  <xsl:param name="lang" as="xs:string" select="'en'"/>
  <!-- {"message/id": {"term": "MDT-4", "label": "..."}, ...}: canonical path -> term and name (the term table) -->
  <xsl:param name="terms" as="xs:string" select="'{}'"/>
  <!-- {"status:200": "Déposée", "role:SE": "...", "reason:...", "action:...", "characteristic:...",
       "documentStatus:45" (MDT-88), "type:380" (MDT-91), "scheme:0225"}: each code's name in the page's language -->
  <xsl:param name="codes" as="xs:string" select="'{}'"/>

  <xsl:output method="html" html-version="5" encoding="UTF-8" indent="no"/>

  <xsl:decimal-format name="en" decimal-separator="." grouping-separator=","/>
  <xsl:decimal-format name="fr" decimal-separator="," grouping-separator="&#160;"/>
  <xsl:decimal-format name="de" decimal-separator="," grouping-separator="."/>

  <xsl:variable name="term-map" select="parse-json($terms)" as="map(*)"/>
  <xsl:variable name="code-map" select="parse-json($codes)" as="map(*)"/>
  <xsl:variable name="labels" as="map(xs:string, map(xs:string, xs:string))" select="map {
    'en': map {
      'page': 'Page', 'of': 'of', 'title': 'Invoice status', 'titleMany': 'Invoice lifecycle',
      'invoice': 'The invoice', 'timeline': 'Statuses in time order', 'when': 'Date and time', 'status': 'Status',
      'by': 'Reported by', 'about': 'Reason, action or amounts', 'message': 'The message', 'parties': 'Parties',
      'party': 'Party', 'role': 'Role', 'name': 'Name', 'id': 'Identifier', 'address': 'Electronic address',
      'sender': 'Sender', 'issuer': 'Issuer', 'recipient': 'Recipient', 'details': 'Reasons and data',
      'data': 'Data', 'dataName': 'Datum', 'amount': 'Amount', 'percent': 'Percentage', 'date': 'Date', 'changed': 'Changed',
      'location': 'Location in the invoice', 'yes': 'yes', 'no': 'no', 'transmission': 'transmission (platform)',
      'processing': 'processing', 'file': 'File', 'valid': 'Valid', 'invalid': 'Invalid', 'errors': 'errors',
      'error': 'error', 'warnings': 'warnings', 'warning': 'warning', 'receivedAt': 'Received on',
      'unread': 'Files that are no readable status message', 'sellerSiren': 'Seller SIREN',
      'statuses': 'statuses', 'conflicts': 'Stated differently by its messages',
      'conflictsNote': 'The messages about this invoice do not agree on these data. The invoice above shows the value
        of the first message read; ask its sender which one is right.',
      'stated': 'Value stated', 'statedIn': 'In the messages', 'otherValues': 'other messages',
      'reference': 'Invoice of the message', 'referenceOf': 'of',
      'sameId': 'Same identifier, other content, in', 'sameIdNote': 'a message is known by its identifier alone;
        ask its sender which one counts'},
    'fr': map {
      'page': 'Page', 'of': 'sur', 'title': 'Statut de facture', 'titleMany': 'Cycle de vie de la facture',
      'invoice': 'La facture', 'timeline': 'Statuts dans l’ordre du temps', 'when': 'Date et heure',
      'status': 'Statut', 'by': 'Émis par', 'about': 'Motif, action ou montants', 'message': 'Le message',
      'parties': 'Partenaires', 'party': 'Partenaire', 'role': 'Rôle', 'name': 'Raison sociale',
      'id': 'Identifiant', 'address': 'Adresse électronique', 'sender': 'Émetteur', 'issuer': 'Créateur',
      'recipient': 'Destinataire', 'details': 'Motifs et données', 'data': 'Données', 'dataName': 'Donnée', 'amount': 'Montant',
      'percent': 'Pourcentage', 'date': 'Date', 'changed': 'Modifiée', 'location': 'Localisation dans la facture',
      'yes': 'oui', 'no': 'non', 'transmission': 'transmission (plateforme)', 'processing': 'traitement',
      'file': 'Fichier', 'valid': 'Valide', 'invalid': 'Invalide', 'errors': 'erreurs',
      'error': 'erreur', 'warnings': 'avertissements', 'warning': 'avertissement',
      'receivedAt': 'Date-heure de réception',
      'unread': 'Fichiers qui ne sont pas des messages de statut lisibles',
      'sellerSiren': 'SIREN du vendeur', 'statuses': 'statuts', 'conflicts': 'Déclarées différemment par ses messages',
      'conflictsNote': 'Les messages relatifs à cette facture ne concordent pas sur ces données. La facture ci-dessus
        reprend la valeur du premier message lu ; demandez à son émetteur laquelle est juste.',
      'stated': 'Valeur déclarée', 'statedIn': 'Dans les messages', 'otherValues': 'autres messages',
      'reference': 'Facture du message', 'referenceOf': 'sur',
      'sameId': 'Même identifiant, autre contenu, dans', 'sameIdNote': 'un message n’est connu que par son
        identifiant ; demandez à son émetteur lequel fait foi'},
    'de': map {
      'page': 'Seite', 'of': 'von', 'title': 'Rechnungsstatus', 'titleMany': 'Lebenszyklus der Rechnung',
      'invoice': 'Die Rechnung', 'timeline': 'Status in zeitlicher Reihenfolge', 'when': 'Datum und Uhrzeit',
      'status': 'Status', 'by': 'Gemeldet von', 'about': 'Begründung, Aktion oder Beträge', 'message': 'Die Meldung',
      'parties': 'Beteiligte', 'party': 'Beteiligter', 'role': 'Rolle', 'name': 'Name', 'id': 'Kennung',
      'address': 'Elektronische Adresse', 'sender': 'Absender', 'issuer': 'Ersteller', 'recipient': 'Empfänger',
      'details': 'Begründungen und Angaben', 'data': 'Angaben', 'dataName': 'Angabe', 'amount': 'Betrag',
      'percent': 'Prozentsatz', 'date': 'Datum', 'changed': 'Geändert', 'location': 'Fundstelle in der Rechnung',
      'yes': 'ja', 'no': 'nein', 'transmission': 'Übermittlung (Plattform)', 'processing': 'Bearbeitung',
      'file': 'Datei', 'valid': 'Gültig', 'invalid': 'Ungültig', 'errors': 'Fehler',
      'error': 'Fehler', 'warnings': 'Warnungen', 'warning': 'Warnung', 'receivedAt': 'Eingegangen am',
      'unread': 'Dateien, die keine lesbare Statusmeldung sind', 'sellerSiren': 'SIREN des Verkäufers',
      'statuses': 'Status', 'conflicts': 'Von ihren Meldungen verschieden angegeben',
      'conflictsNote': 'Die Meldungen zu dieser Rechnung stimmen bei diesen Angaben nicht überein. Die Rechnung oben
        zeigt den Wert der zuerst gelesenen Meldung; fragen Sie ihren Absender, welcher stimmt.',
      'stated': 'Angegebener Wert', 'statedIn': 'In den Meldungen', 'otherValues': 'andere Meldungen',
      'reference': 'Rechnung der Meldung', 'referenceOf': 'von',
      'sameId': 'Gleiche Kennung, anderer Inhalt, in', 'sameIdNote': 'eine Meldung ist allein an ihrer Kennung
        erkennbar; fragen Sie ihren Absender, welche gilt'}
  }"/>

  <xsl:function name="f:l" as="xs:string">
    <xsl:param name="key" as="xs:string"/>
    <xsl:sequence select="($labels($lang)($key), $labels('en')($key), $key)[1]"/>
  </xsl:function>

  <!-- "0 erreur", "1 error", "2 Warnungen": a count with its noun, singular below two in French, for one elsewhere. -->
  <xsl:function name="f:counted" as="xs:string">
    <xsl:param name="count" as="xs:string"/>
    <xsl:param name="noun" as="xs:string"/>
    <xsl:variable name="singular" select="if ($lang = 'fr') then number($count) lt 2 else number($count) eq 1"/>
    <xsl:sequence select="$count || ' ' || f:l(if ($singular) then $noun else $noun || 's')"/>
  </xsl:function>

  <!-- The term of a value, by its canonical path (items of arrays by their element names). -->
  <xsl:function name="f:term" as="map(*)?">
    <xsl:param name="node" as="element()"/>
    <xsl:variable name="path" select="string-join($node/ancestor-or-self::*[not(self::lifecycleStatus or
        self::statusTimeline or self::invoices or self::invoiceTimeline or self::statuses or self::entry)]
        /local-name(), '/')"/>
    <xsl:sequence select="$term-map($path)"/>
  </xsl:function>

  <!-- dt/dd of a value: its name and term, then the value (nothing when there is none). -->
  <xsl:function name="f:fact">
    <xsl:param name="node" as="element()?"/>
    <xsl:param name="value" as="xs:string?"/>
    <xsl:sequence select="f:fact($node, $value, ())"/>
  </xsl:function>

  <!-- ... and the other values the invoice's messages state for it, marked beside it. -->
  <xsl:function name="f:fact">
    <xsl:param name="node" as="element()?"/>
    <xsl:param name="value" as="xs:string?"/>
    <xsl:param name="others" as="xs:string*"/>
    <xsl:if test="$node and normalize-space($value)">
      <xsl:variable name="term" select="f:term($node)"/>
      <div class="{string-join(('fact', 'conflict'[exists($others)]), ' ')}">
        <dt><xsl:value-of select="($term?label, local-name($node))[1]"/>
          <xsl:if test="$term?term ne ''"><xsl:text> </xsl:text><span class="term"><xsl:value-of select="$term?term"/></span></xsl:if></dt>
        <dd><xsl:value-of select="$value"/>
          <xsl:if test="exists($others)"><xsl:text> </xsl:text><span class="conflict-mark"><xsl:value-of
            select="'≠ ' || string-join($others, ', ') || ' (' || f:l('otherValues') || ')'"/></span></xsl:if></dd>
      </div>
    </xsl:if>
  </xsl:function>

  <xsl:function name="f:code" as="xs:string?">
    <xsl:param name="kind" as="xs:string"/>
    <xsl:param name="code" as="xs:string?"/>
    <xsl:sequence select="if (normalize-space($code)) then
        (for $name in $code-map($kind || ':' || $code) return $code || ' – ' || $name, $code)[1] else ()"/>
  </xsl:function>

  <!-- A status by its name in the page's language (the official list's); the message's own label (MDT-106, e.g.
       "Prise_en_charge") only for a code the list does not have. -->
  <xsl:function name="f:status-name" as="xs:string?">
    <xsl:param name="entry" as="element()"/>
    <xsl:sequence select="($code-map('status:' || $entry/status/code), $entry/status/name)[1]"/>
  </xsl:function>

  <xsl:function name="f:date" as="xs:string?">
    <xsl:param name="iso" as="xs:string?"/>
    <xsl:sequence select="if (matches($iso, '^\d{4}-\d{2}-\d{2}$'))
        then (if ($lang = 'fr') then replace($iso, '^(\d{4})-(\d{2})-(\d{2})$', '$3/$2/$1')
              else if ($lang = 'de') then replace($iso, '^(\d{4})-(\d{2})-(\d{2})$', '$3.$2.$1') else $iso)
        else $iso"/>
  </xsl:function>

  <xsl:function name="f:date-time" as="xs:string?">
    <xsl:param name="iso" as="xs:string?"/>
    <xsl:sequence select="if (matches($iso, '^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$'))
        then f:date(substring($iso, 1, 10)) || ' ' || substring($iso, 12, 5)
             || (if (substring($iso, 18, 2) ne '00') then substring($iso, 17, 3) else '')
        else $iso"/>
  </xsl:function>

  <xsl:function name="f:number" as="xs:string?">
    <xsl:param name="value" as="xs:string?"/>
    <!-- as many decimals as the message states; the picture in the language's own separators -->
    <xsl:variable name="places" select="string-length(substring-after($value, '.'))"/>
    <xsl:variable name="marks" select="if ($lang = 'fr') then ('&#160;', ',') else if ($lang = 'de') then ('.', ',')
        else (',', '.')"/>
    <xsl:sequence select="if ($value castable as xs:decimal)
        then format-number(xs:decimal($value), '#' || $marks[1] || '##0'
             || (if ($places gt 0) then $marks[2] || string-join((1 to $places) ! '0') else ''),
             if ($lang = ('fr', 'de')) then $lang else 'en')
        else $value"/>
  </xsl:function>

  <xsl:function name="f:with-scheme" as="xs:string?">
    <xsl:param name="value" as="xs:string?"/>
    <xsl:param name="scheme" as="xs:string?"/>
    <!-- "100000009 (0002 – SIREN)": the scheme by its name where the reform gives it one -->
    <xsl:sequence select="if (not(normalize-space($value))) then () else if (normalize-space($scheme))
        then $value || ' (' || f:code('scheme', $scheme) || ')' else $value"/>
  </xsl:function>

  <!-- An XML path with a line break allowed after each step's slash (<wbr>), not inside a step: on a phone
       "ram:Specifi / edLineTradeSettlement" was broken mid-word. -->
  <xsl:function name="f:steps" as="node()*">
    <xsl:param name="path" as="xs:string"/>
    <xsl:for-each select="tokenize($path, '/')">
      <xsl:if test="position() gt 1">
        <xsl:text>/</xsl:text>
        <xsl:if test="position() gt 2 or tokenize($path, '/')[1] ne ''"><wbr/></xsl:if>
      </xsl:if>
      <xsl:value-of select="."/>
    </xsl:for-each>
  </xsl:function>

  <xsl:template match="/">
    <xsl:variable name="many" select="count(//entry) gt 1"/>
    <html lang="{$lang}">
      <head>
        <meta charset="utf-8"/>
        <title><xsl:value-of select="f:l(if ($many) then 'titleMany' else 'title') || ' ' || string-join(//invoiceTimeline/invoice/number, ', ')"/></title>
        <style>
          @page { @bottom-right { content: "<xsl:value-of select="f:l('page')"/> " counter(page) " <xsl:value-of select="f:l('of')"/> " counter(pages); } }
          <!-- each invoice from a page of its own: its header (and the footer it sets) never at the foot of the last one's -->
          header.top ~ header.top { break-before: page; }
          <!-- on paper the facts are lines, not floats: a page then breaks between two rows of facts, never between a
               heading and its first row (floats gave the heading's break-after no hold: it stayed alone at a page's
               foot, its facts on the next) -->
          @media print { dl.grid .fact { float: none; display: inline-block; vertical-align: top; } }
        </style>
      </head>
      <body>
        <xsl:apply-templates select="statusTimeline/invoices/invoiceTimeline">
          <xsl:with-param name="many" select="$many"/>
        </xsl:apply-templates>
        <xsl:apply-templates select="statusTimeline/unread[unreadFile]"/>
      </body>
    </html>
  </xsl:template>

  <xsl:template match="invoiceTimeline">
    <xsl:param name="many" as="xs:boolean"/>
    <xsl:variable name="entries" select="statuses/entry"/>
    <!-- each step's own receipt time (MDT-95: the reporting side's), in the timeline when a message states one -->
    <xsl:variable name="received" select="$term-map('invoice/receiptDateTime')[exists($entries/invoice/receiptDateTime)]"/>
    <header class="top">
      <div class="brand"><xsl:value-of select="invoice/sellerSiren ! (f:l('sellerSiren') || ' ' || .)"/></div>
      <div class="title">
        <h1><xsl:value-of select="f:l(if ($many) then 'titleMany' else 'title')"/></h1>
        <div class="docno"><xsl:value-of select="invoice/number"/></div>
        <div class="footer-line"><xsl:value-of select="string-join((invoice/number, invoice/issueDate ! f:date(.),
            if (count($entries) gt 1) then count($entries) || ' ' || f:l('statuses') else ()), ' · ')"/></div>
      </div>
    </header>
    <section class="facts">
      <h2><xsl:value-of select="f:l('invoice')"/></h2>
      <dl class="grid">
        <xsl:sequence select="f:fact(invoice/number, invoice/number)"/>
        <xsl:apply-templates select="invoice/(issueDate, typeCode)" mode="stated"/>
        <xsl:sequence select="f:fact(invoice/sellerSiren, invoice/sellerSiren)"/>
        <xsl:apply-templates select="invoice/buyerSiren" mode="stated"/>
      </dl>
    </section>
    <xsl:apply-templates select="conflicts[conflict]"/>
    <xsl:if test="count($entries) gt 1">
      <section class="timeline">
        <h2><xsl:value-of select="f:l('timeline')"/></h2>
        <table class="plain timeline">
          <thead><tr>
            <th><xsl:value-of select="f:l('when')"/></th>
            <xsl:for-each select="$received">
              <!-- the term's name is a sentence (the examples' MDT-95): a short head, the name in its title -->
              <th title="{?label}"><xsl:value-of select="f:l('receivedAt')"/><xsl:text> </xsl:text>
                <span class="term"><xsl:value-of select="?term"/></span></th>
            </xsl:for-each>
            <th><xsl:value-of select="f:l('status')"/></th>
            <th><xsl:value-of select="f:l('by')"/></th>
            <th><xsl:value-of select="f:l('about')"/></th>
          </tr></thead>
          <tbody>
            <xsl:for-each select="$entries">
              <tr>
                <td><xsl:value-of select="f:date-time(status/dateTime)"/></td>
                <xsl:if test="exists($received)"><td><xsl:value-of select="f:date-time(invoice/receiptDateTime)"/></td></xsl:if>
                <td><span class="status-code"><xsl:value-of select="status/code"/></span>
                  <xsl:value-of select="' ' || f:status-name(.)"/>
                  <xsl:call-template name="badge"/></td>
                <td><xsl:value-of select="string-join((message/issuer/role ! f:code('role', .), message/issuer/name), ', ')"/></td>
                <td class="wrap"><xsl:value-of select="string-join((
                    status/details/detail/statusCode ! f:code('status', .),
                    status/details/detail/reasonCode ! f:code('reason', .),
                    status/details/detail/actionCode ! f:code('action', .),
                    status/details/detail/characteristics/characteristic[amount] ! string-join((
                        f:code('characteristic', typeCode), f:number(amount) || (currencyCode ! ('&#160;' || .)),
                        percent ! (f:number(.) || '&#160;%')), ' '))
                    , '; ')"/></td>
              </tr>
            </xsl:for-each>
          </tbody>
        </table>
      </section>
    </xsl:if>
    <xsl:apply-templates select="$entries"/>
  </xsl:template>

  <!-- A fact of the invoice its messages may state differently (pipeline.flows.status_read._INVOICE_FACTS): the
       other values follow it, marked, so that the merged invoice never shows one of them as if it were the only. -->
  <xsl:template match="invoice/*" mode="stated">
    <xsl:variable name="others" select="ancestor::invoiceTimeline/conflicts/conflict[field = 'invoice.' ||
        local-name(current())]/values/statedValue[position() gt 1]/value"/>
    <xsl:sequence select="f:fact(., f:stated(local-name(), .), $others ! f:stated(local-name(current()), .))"/>
  </xsl:template>

  <xsl:function name="f:stated" as="xs:string?">
    <xsl:param name="field" as="xs:string"/>
    <xsl:param name="value" as="xs:string?"/>
    <!-- the invoice's type (MDT-91) by its name beside the code, wherever the page states it -->
    <xsl:sequence select="if ($field = 'issueDate') then f:date($value)
        else if ($field = 'typeCode') then f:code('type', $value) else $value"/>
  </xsl:function>

  <!-- The invoice's data its messages state differently, each value with the files (and their statuses) stating
       it: right under the invoice, before its statuses, in a box the eye stops at. -->
  <xsl:template match="conflicts">
    <xsl:variable name="entries" select="../statuses/entry"/>
    <section class="conflicts">
      <h2><xsl:value-of select="f:l('conflicts')"/></h2>
      <p class="note"><xsl:value-of select="normalize-space(f:l('conflictsNote'))"/></p>
      <table class="plain conflicts">
        <thead><tr>
          <th><xsl:value-of select="f:l('dataName')"/></th>
          <th><xsl:value-of select="f:l('stated')"/></th>
          <th><xsl:value-of select="f:l('statedIn')"/></th>
        </tr></thead>
        <xsl:for-each select="conflict">
          <xsl:variable name="name" select="substring-after(field, 'invoice.')"/>
          <xsl:variable name="term" select="$term-map(replace(field, '\.', '/'))"/>
          <tbody>
            <xsl:for-each select="values/statedValue">
              <tr>
                <xsl:if test="position() eq 1">
                  <td rowspan="{last()}"><xsl:value-of select="($term?label, $name)[1]"/>
                    <xsl:if test="$term?term ne ''"><xsl:text> </xsl:text><span class="term"><xsl:value-of
                      select="$term?term"/></span></xsl:if></td>
                </xsl:if>
                <td class="stated"><xsl:value-of select="f:stated($name, value)"/></td>
                <td class="wrap"><xsl:value-of select="string-join(files/file ! f:stated-in(., $entries, $name,
                    current()/value), '; ')"/></td>
              </tr>
            </xsl:for-each>
          </tbody>
        </xsl:for-each>
      </table>
    </section>
  </xsl:template>

  <!-- "204.xml (204 Prise en charge, 2026-09-16 10:10)": a file and the status in it that states the invoice's
       $field as $value, as the page lists it (a message about several invoices holds several statuses of one).
       Its statuses found by key: a scan of every status for each file grew as their square. -->
  <xsl:key name="entry-by-file" match="entry" use="for $entry in . return
      ($entry/file, $entry/copies/file) ! (generate-id($entry/../..) || ' ' || .)"/>
  <xsl:function name="f:stated-in" as="xs:string">
    <xsl:param name="file" as="xs:string"/>
    <xsl:param name="entries" as="element()*"/>
    <xsl:param name="field" as="xs:string"/>
    <xsl:param name="value" as="xs:string"/>
    <xsl:variable name="in-file" select="key('entry-by-file', generate-id($entries[1]/../..) || ' ' || $file,
        root($entries[1]))"/>
    <xsl:sequence select="string-join(($file, $in-file[invoice/*[local-name() = $field] = $value][1] ! ('('
        || status/code || ' ' || f:status-name(.) || ', '
        || f:date-time(status/dateTime) || ')')), ' ')"/>
  </xsl:function>

  <xsl:template name="badge">
    <xsl:for-each select="validation">
      <xsl:text> </xsl:text>
      <span class="badge {if (valid = 'true') then 'valid' else 'invalid'}">
        <xsl:value-of select="f:l(if (valid = 'true') then 'valid' else 'invalid') || ' · '
            || f:counted(errors, 'error') || ', ' || f:counted(warnings, 'warning')
            || (if (failed/rule) then ' · ' || string-join(failed/rule, ', ') else '')"/>
      </span>
    </xsl:for-each>
  </xsl:template>

  <xsl:template match="entry">
    <section class="status-entry">
      <h2><span class="status-code"><xsl:value-of select="status/code"/></span>
        <xsl:value-of select="' ' || f:status-name(.) || ' · '
            || f:date-time(status/dateTime)"/>
        <xsl:call-template name="badge"/></h2>
      <dl class="grid">
        <xsl:sequence select="f:fact(status/code, f:code('status', status/code))"/>
        <xsl:sequence select="f:fact(status/dateTime, f:date-time(status/dateTime))"/>
        <xsl:sequence select="f:fact(status/typeCode, status/typeCode ! (. || ' – '
            || f:l(if (. = '305') then 'transmission' else 'processing')))"/>
        <xsl:sequence select="f:fact(status/documentStatusCode, f:code('documentStatus', status/documentStatusCode))"/>
        <!-- the invoice as this message states it for its step: its receipt by the reporting side, the reference type -->
        <xsl:sequence select="f:fact(invoice/receiptDateTime, f:date-time(invoice/receiptDateTime))"/>
        <xsl:sequence select="f:fact(invoice/referenceTypeCode, invoice/referenceTypeCode)"/>
        <xsl:sequence select="f:fact(message/id, message/id)"/>
        <xsl:sequence select="f:fact(message/name, message/name)"/>
        <xsl:sequence select="f:fact(message/issueDateTime, f:date-time(message/issueDateTime))"/>
        <xsl:sequence select="f:fact(message/guidelineId, message/guidelineId)"/>
        <xsl:sequence select="f:fact(message/businessProcess, f:code('process', message/businessProcess))"/>
        <!-- a message about several invoices (MDT-74 true): which of them this status is -->
        <xsl:if test="normalize-space(references)">
          <div class="fact"><dt><xsl:value-of select="f:l('reference')"/><xsl:text> </xsl:text><span class="term">MDT-74</span></dt>
            <dd><xsl:value-of select="reference || ' ' || f:l('referenceOf') || ' ' || references"/></dd></div>
        </xsl:if>
        <xsl:if test="normalize-space(file)">
          <div class="fact"><dt><xsl:value-of select="f:l('file')"/></dt><dd class="wrap"><xsl:value-of
            select="string-join(distinct-values((file, copies/file)), ', ')"/></dd></div>
        </xsl:if>
        <!-- another file's message under this identifier says something else (pipeline.flows.status_read) -->
        <xsl:if test="sameIdentifier/file">
          <div class="fact conflict"><dt><xsl:value-of select="f:l('sameId')"/><xsl:text> </xsl:text><span
            class="term">MDT-4</span></dt>
            <dd class="wrap"><xsl:value-of select="string-join(sameIdentifier/file, ', ')"/><xsl:text> </xsl:text><span
              class="conflict-mark"><xsl:value-of select="'(' || normalize-space(f:l('sameIdNote')) || ')'"/></span></dd></div>
        </xsl:if>
      </dl>
      <h2><xsl:value-of select="f:l('parties')"/></h2>
      <table class="plain parties">
        <thead><tr>
          <th><xsl:value-of select="f:l('party')"/></th>
          <th><xsl:value-of select="f:l('role')"/></th>
          <th><xsl:value-of select="f:l('name')"/></th>
          <th><xsl:value-of select="f:l('id')"/></th>
          <th><xsl:value-of select="f:l('address')"/></th>
        </tr></thead>
        <tbody>
          <xsl:for-each select="message/(sender, issuer, recipients/recipient)">
            <tr>
              <td><xsl:value-of select="f:l(local-name())"/>
                <span class="term"><xsl:value-of select="' ' || f:term(.)?term"/></span></td>
              <td><xsl:value-of select="f:code('role', role)"/></td>
              <td><xsl:value-of select="name"/></td>
              <td class="wrap"><xsl:value-of select="f:with-scheme(id, idScheme)"/></td>
              <td class="wrap"><xsl:value-of select="f:with-scheme(electronicAddress, electronicAddressScheme)"/></td>
            </tr>
          </xsl:for-each>
        </tbody>
      </table>
      <xsl:if test="status/details/detail">
        <h2><xsl:value-of select="f:l('details')"/></h2>
        <xsl:apply-templates select="status/details/detail"/>
      </xsl:if>
    </section>
  </xsl:template>

  <xsl:template match="detail">
    <dl class="grid">
      <xsl:sequence select="f:fact(reasonCode, f:code('reason', reasonCode))"/>
      <xsl:sequence select="f:fact(reason, reason)"/>
      <xsl:sequence select="f:fact(statusCode, f:code('status', statusCode))"/>
      <xsl:sequence select="f:fact(statusName, statusName)"/>
      <xsl:sequence select="f:fact(actionCode, f:code('action', actionCode))"/>
      <xsl:sequence select="f:fact(action, action)"/>
      <xsl:sequence select="f:fact(note, note)"/>
    </dl>
    <xsl:if test="characteristics/characteristic">
      <table class="plain data">
        <thead><tr>
          <th><xsl:value-of select="f:l('data')"/>
            <span class="term"><xsl:value-of select="' ' || (characteristics/characteristic/typeCode)[1] ! f:term(.)?term"/></span></th>
          <th><xsl:value-of select="f:l('dataName')"/></th>
          <th class="num"><xsl:value-of select="f:l('amount')"/></th>
          <th class="num"><xsl:value-of select="f:l('percent')"/></th>
          <th><xsl:value-of select="f:l('date')"/></th>
          <th><xsl:value-of select="f:l('changed')"/></th>
        </tr></thead>
        <tbody>
          <xsl:for-each select="characteristics/characteristic">
            <tr>
              <td><xsl:value-of select="f:code('characteristic', typeCode)"/></td>
              <td class="wrap"><xsl:value-of select="string-join((id, name), ' ')"/></td>
              <td class="num"><xsl:value-of select="string-join((amount ! f:number(.), currencyCode), '&#160;')"/></td>
              <td class="num"><xsl:value-of select="percent ! (f:number(.) || '&#160;%')"/></td>
              <td><xsl:value-of select="f:date(date)"/></td>
              <td><xsl:value-of select="changed ! f:l(if (. = 'true') then 'yes' else 'no')"/></td>
            </tr>
            <xsl:for-each select="location">
              <!-- the invoice XML path of the datum, on a row of its own: too long for a column (French sets a
                   no-break space before the colon) -->
              <tr class="location"><td/><td colspan="5" class="small mono wrap">
                <xsl:value-of select="f:term(.)?label || (if ($lang = 'fr') then '&#160;: ' else ': ')"/><xsl:sequence select="f:steps(.)"/></td></tr>
            </xsl:for-each>
          </xsl:for-each>
        </tbody>
      </table>
    </xsl:if>
  </xsl:template>

  <xsl:template match="unread">
    <section class="unread">
      <h2><xsl:value-of select="f:l('unread')"/></h2>
      <xsl:for-each select="unreadFile">
        <p class="note"><span class="code"><xsl:value-of select="file"/></span>
          <xsl:value-of select="' ' || error/message"/></p>
      </xsl:for-each>
    </section>
  </xsl:template>
</xsl:stylesheet>
