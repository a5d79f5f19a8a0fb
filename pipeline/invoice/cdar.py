"""The model of France's lifecycle status messages (CDV): a status request as JSON (`StatusRequest`, pydantic) and
what FNFE-MPE's BR-FR-CDV rules (1.4.0.03) require of it, checked before any generation so that every missing or
contradicting value is a 400 entry naming its JSON field and its MDT term (`pipeline.invoice.cdar_terms`), with the
rule in the message. The rules themselves judge the generated message afterwards (422 when they refuse it).

    message   the CDV itself: its id (MDT-4), creation time (MDT-8), profile (MDT-3), business process (MDT-2) and
              parties: sender (MDG-9), issuer (MDG-16), recipients (MDG-23), each with role, id, name, address
    status    the status: code (MDT-105) and name (MDT-106), date-time (MDT-78), the phase (MDT-77: 305
              transmission by a platform, 23 processing), the document status code (MDT-88), and details (MDG-37):
              reason (MDT-113/114), a status of the detail's own (MDT-115/116), requested action (MDT-121/122),
              note (MDT-126), characteristics (MDG-43: amounts received per VAT rate of a payment status,
              MEN/MDT-215/MDT-224, data in dispute, ...)
    invoice   the invoice it is about: number (MDT-87), issue date (MDT-100), type code (MDT-91), receipt time
              (MDT-95), the seller's SIREN (MDT-129) and the buyer's (role BY)

Date-times are local times without offset, `YYYY-MM-DDTHH:MM:SS` (the message's format 204 has no time zone); dates
`YYYY-MM-DD` (format 102). The code lists are those of the BR-FR-CDV Schematron (custom:is-valid-... functions and
the closed lists of its rules); the codes' French names as published texts give them (each table's source beside
it; where none names a code, ours, and so are the English and German names).
"""
from __future__ import annotations

import re
import unicodedata
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Annotated, Any

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, ValidationError,
                      WithJsonSchema)
from pydantic_core import PydanticCustomError

from pipeline.errors import ApiError, ErrorDetail, invalid_input
from pipeline.invoice import cdar_terms, france
from pipeline.invoice.codes import CURRENCY_CODES
from pipeline.invoice.model import MAX_ERRORS, LongText, Number, Text, from_pydantic, loads, rejected_value

# ---- code lists ------------------------------------------------------------------------------------------------

# BR-FR-CDV-CL-06 (MDT-105): the status codes; a code outside the list is a warning of the rules (FNFE leaves room
# for codes agreed between the parties), so it is accepted here with its name sent. French names: 200-213 as DGFiP's
# external specifications 3.1, general file, table 7 "Les statuts d'une facture" (p. 58) words them, except 201 and
# 202, which that table calls "Emise par la plateforme" / "Reçue par la plateforme": kept as FNFE's examples write
# MDT-106 ("Reçue") with the accent French capitals take. 214-228 and 501: XP Z12-012's annex A
# (XP_Z12-012_Annexe_A_2026_V1.4_VF.xlsx, in FNFE-MPE's France_RFE repository, folder Z.notes_&_docs), not read
# itself (a spreadsheet) but as two independent transcriptions of it agree: Akretion's Odoo module fr-einvoicing
# (l10n_fr_einvoicing/models/fr_einvoicing_event.py, from annex A V1.3, sheet "CDV FE - CDAR") and Vertex's
# e-invoicing documentation "France (CII(CDAR)): Code Lists", table "Status Value Map" (which also gives each its
# MDT-77 phase: 221 transmission, the others processing). 221 is "Erreur routage" there, without "de" (the
# BR-FR-CDV-CL-09 texts call it ERREUR_ROUTAGE), not the reason ROUTAGE_ERR's "Erreur de routage"; 501 is also
# XP Z12-012 (2026-02) BR-FR-CDV-10's. 250, 251, 300, 301, 400, 401, 500 and 601, in the rules' list: no published
# name found (transcriptions disagree or are silent), so unnamed here: a request names them, a page shows the code.
# English: ours, faithful to the French (204 "In process" after BR-FR-CDV-CL-05, which pairs 204 with UNTDID 1373
# code 45 "In Process"; 214 "Visée", bearing the public accountant's visa: "Endorsed"; 226 "confidentiel", the
# factoring the buyer is not told of: "confidential").
STATUS_CODES = ("200 201 202 203 204 205 206 207 208 209 210 211 212 213 214 220 221 224 225 226 227 228 250 251 "
                "300 301 400 401 500 501 601").split()
STATUS_NAMES = {
    "200": ("Déposée", "Submitted"), "201": ("Émise par la plateforme", "Issued by the platform"),
    "202": ("Reçue", "Received"), "203": ("Mise à disposition", "Made available"),
    "204": ("Prise en charge", "In process"), "205": ("Approuvée", "Approved"),
    "206": ("Approuvée partiellement", "Partially approved"), "207": ("En litige", "Disputed"),
    "208": ("Suspendue", "Suspended"), "209": ("Complétée", "Completed"), "210": ("Refusée", "Refused"),
    "211": ("Paiement transmis", "Payment sent"), "212": ("Encaissée", "Payment received"),
    "213": ("Rejetée", "Rejected"), "214": ("Visée", "Endorsed"), "220": ("Annulée", "Cancelled"),
    "221": ("Erreur routage", "Routing error"), "224": ("Demande de paiement direct", "Direct payment request"),
    "225": ("Affacturée", "Factored"), "226": ("Affacturée confidentiel", "Factored (confidential)"),
    "227": ("Changement de compte à payer", "Change of the account to pay into"),
    "228": ("Non affacturée", "Not factored"),
    "501": ("Irrecevable", "Inadmissible"),
}
# MDT-77: 305 = the transmission phase, statuses a platform reports (FNFE's examples: 200, 202 with sender and
# issuer WK); 23 = the processing phase, statuses of the businesses. A code of neither needs status.typeCode.
TRANSMISSION, PROCESSING = "305", "23"
TRANSMISSION_STATUSES = ("200", "201", "202", "203", "213", "221", "501")
PROCESSING_STATUSES = ("204", "205", "206", "207", "208", "209", "210", "211", "212", "214", "220", "224", "225",
                       "226", "227", "228")
# BR-FR-CDV-CL-05 (MDT-88): the document status codes of each phase, and the one each status takes, as XP Z12-012
# (2026-02) BR-FR-CDV-CL-05 pairs them and FNFE's examples write them (200 10, 202 43, 204 45, 207 46, 211 and 212
# 47); Vertex's CDAR documentation ("Additional Response Code") lists the same pairs. 47 is both payment statuses. The
# processing phase's other statuses (214, 220, 224-228) take 5, which the 1.4.0 rule's text gives "pour les autres
# statuts"; a code of neither phase takes none (the rules accept a message without it).
DOCUMENT_STATUS_CODES = {TRANSMISSION: ("10", "51", "43", "8", "48"),
                         PROCESSING: ("45", "39", "37", "50", "49", "47", "46", "1", "5")}
OTHER_PROCESSING = "5"
_DOCUMENT_STATUS_STEPS = {"200": "10", "201": "51", "202": "43", "203": "48", "213": "8", "204": "45", "205": "1",
                          "206": "49", "207": "46", "208": "39", "209": "37", "210": "50", "211": "47", "212": "47"}
DOCUMENT_STATUS_OF = {**_DOCUMENT_STATUS_STEPS,
                      **{s: OTHER_PROCESSING for s in PROCESSING_STATUSES if s not in _DOCUMENT_STATUS_STEPS}}


def _named_by_steps(dsc: str) -> tuple[str, str]:
    steps = [status for status, code in _DOCUMENT_STATUS_STEPS.items() if code == dsc]
    return (" / ".join(STATUS_NAMES[s][0] for s in steps), " / ".join(STATUS_NAMES[s][1] for s in steps))


DOCUMENT_STATUS_NAMES = {dsc: _named_by_steps(dsc) for dsc in dict.fromkeys(_DOCUMENT_STATUS_STEPS.values())}
# 5: named after the rule's "pour les autres statuts" (ours)
DOCUMENT_STATUS_NAMES[OTHER_PROCESSING] = ("Autre statut de traitement", "Other processing status")
# BR-FR-CDV-CL-02/03/04 (MDT-21, MDT-40, MDT-59): the roles of the parties; in the transmission phase sender and
# issuer are the platform (WK). Names: XP Z12-012 (2026-02) BR-FR-CDV-CL-02/03/04/08, which extract them from UNCL
# 3035 (AB is listed twice there, also as "Représentant de l'acheteur pour la vente"; WK goes on "(du
# fournisseur/vendeur ou de l'acheteur)"); DFH, "Pour le PPF" there: DGFiP's glossary name. English: ours.
ROLES = {"BY": ("Acheteur", "Buyer"), "AB": ("Agent d'acheteur", "Buyer's agent"), "DL": ("Affactureur", "Factor"),
         "SE": ("Vendeur", "Seller"), "SR": ("Agent de Vendeur", "Seller's agent"),
         "WK": ("Plateforme ou opérateur de dématérialisation", "Platform or e-invoicing operator"),
         "DFH": ("Portail public de facturation (PPF)", "Public invoicing portal (PPF)"),
         "PE": ("Bénéficiaire", "Payee"), "PR": ("Payeur", "Payer"), "II": ("Facturant", "Invoicer"),
         "IV": ("Facturé à, adressé à", "Invoicee")}
SENDER_ROLES = ("BY", "AB", "DL", "SE", "SR", "WK", "PE", "PR", "II", "IV")
ISSUER_ROLES = ("BY", "AB", "DL", "SE", "SR", "PE", "PR", "II", "IV")
RECIPIENT_ROLES = (*ISSUER_ROLES, "WK", "DFH")
ROLES_WITHOUT_ADDRESS = ("WK", "DFH")   # BR-FR-CDV-08: every other recipient needs its electronic address (MDT-73)
# BR-FR-CDV-02 / CL-01 (MDT-3, MDT-2)
GUIDELINE_INVOICE = "urn.cpro.gouv.fr:1p0:CDV:invoice"
GUIDELINE_PPF = "urn.cpro.gouv.fr:1p0:CDV:einvoicingF2"
# MDT-2, the business process (the examples' "Type de processus métier (cadre de facturation)"): which exchange
# the invoice belongs to, as the invoices' BAR note (BR-FR-20) names the same cases (B2B, B2BINT, B2C, B2CINT,
# OUTOFSCOPE); REGULATED is the reform's own B2B e-invoicing, NON_REGULATED an invoice exchanged outside it. Names:
# ours (BR-FR-CDV-CL-01 lists the values without names; BR-FR-20 gives the BAR values meanings, e.g. B2B "relève du
# e-invoicing", OUTOFSCOPE "hors réforme").
BUSINESS_PROCESS_NAMES = {
    "REGULATED": ("Facturation électronique réglementée (B2B en France)", "Regulated e-invoicing (B2B in France)"),
    "NON_REGULATED": ("Hors facturation électronique réglementée", "Outside regulated e-invoicing"),
    "B2C": ("Vente à des particuliers (B2C)", "Sale to consumers (B2C)"),
    "B2CINT": ("Vente à des particuliers à l'international (B2C)", "International sale to consumers (B2C)"),
    "B2BINT": ("Opération internationale entre entreprises (B2B)", "International business-to-business (B2B)"),
    "OUTOFSCOPE": ("Hors du champ de la réforme", "Outside the reform's scope")}
BUSINESS_PROCESSES = tuple(BUSINESS_PROCESS_NAMES)
# A message to the PPF alone holds in MDT-2 a value of at most 3 characters instead (BR-FR-CDV-CL-01): what FNFE's
# examples name MDT-2, "Type de processus métier (cadre de facturation)", the invoice's billing frame (BT-23). That
# reading is ours: XP Z12-012 (2026-02) says MDT-2 is not sent in a message to the PPF, whose example has none.
# Names (fr) as XP Z12-012 (2026-02) BR-FR-08 lists the frames, apostrophes typed straight, S3 without the rule's
# "restriction non vérifiable", M8's "facrtures" spelled right; B9, S9, M9 (in the rules' list since 1.1.0, not in
# that text) stay unnamed, as does a short value that is no frame. English and German: ours. Names only: no
# business process of the list.
_FRAMES = {
    "B1": ("Dépôt d'une facture de bien", "Submission of an invoice for goods",
           "Einreichung einer Rechnung über Waren"),
    "S1": ("Dépôt d'une facture de prestation de service", "Submission of an invoice for services",
           "Einreichung einer Rechnung über Dienstleistungen"),
    "M1": ("Dépôt d'une facture double (livraison de biens et services qui ne sont pas accessoires l'une de l'autre)",
           "Submission of a dual invoice (goods and services, neither ancillary to the other)",
           "Einreichung einer gemischten Rechnung (Waren und Dienstleistungen, keine Nebenleistung der anderen)"),
    "B2": ("Dépôt d'une facture de bien déjà payée", "Submission of an invoice for goods already paid",
           "Einreichung einer bereits bezahlten Rechnung über Waren"),
    "S2": ("Dépôt d'une facture de prestation de service déjà payée", "Submission of an invoice for services already "
           "paid", "Einreichung einer bereits bezahlten Rechnung über Dienstleistungen"),
    "M2": ("Dépôt d'une facture double déjà payée", "Submission of a dual invoice already paid",
           "Einreichung einer bereits bezahlten gemischten Rechnung"),
    "S3": ("Dépôt d'une demande de paiement de sous-traitance avec paiement direct (uniquement B2G)",
           "Submission of a subcontractor's payment request with direct payment (B2G only)",
           "Einreichung einer Zahlungsanforderung eines Subunternehmers mit Direktzahlung (nur B2G)"),
    "B4": ("Dépôt d'une facture définitive (après acompte) de bien", "Submission of a final invoice (after a "
           "prepayment) for goods", "Einreichung einer Schlussrechnung (nach Anzahlung) über Waren"),
    "S4": ("Dépôt d'une facture définitive (après acompte) de service", "Submission of a final invoice (after a "
           "prepayment) for services", "Einreichung einer Schlussrechnung (nach Anzahlung) über Dienstleistungen"),
    "M4": ("Dépôt d'une facture définitive (après acompte) double", "Submission of a final dual invoice (after a "
           "prepayment)", "Einreichung einer gemischten Schlussrechnung (nach Anzahlung)"),
    "S5": ("Dépôt par un sous-traitant d'une facture de prestation de service", "Submission by a subcontractor of an "
           "invoice for services", "Einreichung einer Rechnung über Dienstleistungen durch einen Subunternehmer"),
    "S6": ("Dépôt par un cotraitant d'une facture de prestation de service", "Submission by a co-contractor of an "
           "invoice for services", "Einreichung einer Rechnung über Dienstleistungen durch einen Mitauftragnehmer"),
    "B7": ("Dépôt d'une facture de bien ayant fait l'objet d'un e-reporting (TVA déjà collectée)",
           "Submission of an invoice for goods already e-reported (VAT already collected)",
           "Einreichung einer bereits per E-Reporting gemeldeten Rechnung über Waren (Umsatzsteuer bereits erhoben)"),
    "S7": ("Dépôt d'une facture de prestation de service ayant fait l'objet d'un e-reporting (TVA déjà collectée)",
           "Submission of an invoice for services already e-reported (VAT already collected)",
           "Einreichung einer bereits per E-Reporting gemeldeten Rechnung über Dienstleistungen (Umsatzsteuer bereits "
           "erhoben)"),
    "B8": ("Dépôt d'une facture multi-vendeurs de bien", "Submission of a multi-vendor invoice for goods",
           "Einreichung einer Rechnung mehrerer Verkäufer über Waren"),
    "S8": ("Dépôt d'une facture multi-vendeurs de service", "Submission of a multi-vendor invoice for services",
           "Einreichung einer Rechnung mehrerer Verkäufer über Dienstleistungen"),
    "M8": ("Dépôt d'une facture multi-vendeurs double, contenant des factures unitaires qui ne sont pas toutes Sx ou "
           "Bx", "Submission of a dual multi-vendor invoice, holding unit invoices that are not all Sx or Bx",
           "Einreichung einer gemischten Rechnung mehrerer Verkäufer mit Einzelrechnungen, die nicht alle Sx oder Bx "
           "sind")}
BILLING_FRAME_NAMES = {frame: names[:2] for frame, names in _FRAMES.items() if frame in france.BILLING_FRAMES}
PPF_SCHEME, PPF_ID = "0238", "0000"   # the PPF as the one recipient: GlobalID 0000, scheme 0238, role DFH
B2G_SENDER_ID = "9999"                # a sender GlobalID 9999 (scheme 0238): the State's platform (B2G refusals)
SIREN_SCHEME = france.SIREN_SCHEME
# BR-FR-CDV-15: the statuses that carry a reason (MDT-113)
REASON_REQUIRED = ("206", "207", "208", "210", "213", "501")
# BR-FR-CDV-CL-09: the reason codes, with a label (fr, en), and those each status allows. French labels: IRR_* as
# DGFiP's external specifications 3.1, general file, table 3 "Liste des motifs d'irrecevabilité" words them (each
# names the check the file failed); the others as XP Z12-012's annex A ("Tableau des motifs de STATUTS") words them,
# not read itself but as Akretion's Odoo module for the reform transcribes it, where DGFiP's annex 7 ("Tableau des
# motifs de refus", as a public transcription of specifications 3.2 quotes it) agrees; B2G-only codes (those of
# annex 7 alone) as annex 7. The two disagree on DOUBLE_FACT (annex 7: "Données réglementaire F1 en doublon"),
# LIVR_INCOMP (annex A: "Problème de livraison") and CMD_ERR (annex 7: "N° de COMMANDE/Engagement Incorrect ou
# manquant"): each takes the label that matches its code's name, to be checked against annex A itself.
# RETRAIT_MAN_SERV has no published label: shown as its code. English: ours.
REASONS = {
    "RETRAIT_MAN_SERV": None,
    "ST_CT_NON_DECLAR": ("Sous-traitant / cotraitant non déclaré", "Subcontractor / co-contractor not declared"),
    "SUPPR_COMP_AVOIR": ("Suppression pour compensation d'avoirs", "Withdrawn to offset credit notes"),
    "TRANSF_PMNT_REGIE": ("Transfert pour paiement en régie (réservé B2G)",
                          "Transferred for payment by the public cashier (B2G only)"),
    "CONTACT_ACHTR": ("Autres : contacter votre acheteur", "Other: contact your buyer"),
    "NON_TRANSMISE": ("Destinataire non connecté", "Recipient not connected"),
    "JUSTIF_ABS": ("Justificatif absent ou insuffisant", "Supporting document missing or insufficient"),
    "ROUTAGE_ERR": ("Erreur de routage", "Routing error"), "AUTRE": ("Autre", "Other"),
    "COORD_BANC_ERR": ("Erreur de coordonnées bancaires", "Bank details error"),
    "TX_TVA_ERR": ("Taux de TVA erroné", "Wrong VAT rate"),
    "MONTANTTOTAL_ERR": ("Montant total erroné", "Wrong total amount"),
    "CALCUL_ERR": ("Erreur de calcul de la facture", "Error in the invoice's calculation"),
    "NON_CONFORME": ("Mention légale manquante", "Legal mention missing"),
    "DOUBLON": ("Facture en doublon (déjà émise / reçue)", "Duplicate invoice (already issued / received)"),
    "DEST_INC": ("Destinataire inconnu", "Unknown recipient"),
    "DEST_ERR": ("Erreur de destinataire", "Recipient error"),
    "TRANSAC_INC": ("Transaction inconnue", "Unknown transaction"),
    "EMMET_INC": ("Émetteur inconnu", "Unknown issuer"), "CONTRAT_TERM": ("Contrat terminé", "Contract ended"),
    "DOUBLE_FACT": ("Déjà facturé sur autre facture", "Already invoiced on another invoice"),
    "CMD_ERR": ("N° de commande incorrect ou manquant", "Order number incorrect or missing"),
    "ADR_ERR": ("Adresse de facturation électronique erronée", "Wrong electronic invoicing address"),
    "SIRET_ERR": ("SIRET erroné ou absent", "SIRET wrong or missing"),
    "CODE_ROUTAGE_ERR": ("Code routage absent ou erroné", "Routing code missing or wrong"),
    "REF_CT_ABSENT": ("Référence contractuelle nécessaire pour le traitement de la facture manquante",
                      "Contract reference needed to process the invoice missing"),
    "REF_ERR": ("Référence incorrecte", "Incorrect reference"),
    "PU_ERR": ("Prix unitaires incorrects", "Incorrect unit prices"),
    "REM_ERR": ("Remise erronée", "Wrong discount"), "QTE_ERR": ("Quantité facturée incorrecte",
                                                               "Incorrect invoiced quantity"),
    "ART_ERR": ("Article facturé incorrect", "Incorrect invoiced item"),
    "MODPAI_ERR": ("Modalités de paiement incorrectes", "Incorrect payment terms"),
    "QUALITE_ERR": ("Qualité d'article livré incorrecte", "Delivered item of incorrect quality"),
    "LIVR_INCOMP": ("Livraison incomplète / non effectuée", "Delivery incomplete / not made"),
    # 213 Rejetée: the platform's checks
    "REJ_SEMAN": ("Rejet pour erreur sémantique", "Rejected for a semantic error"),
    "REJ_UNI": ("Rejet sur contrôle unicité", "Rejected on the uniqueness check"),
    "REJ_COH": ("Rejet sur contrôle Cohérence de données", "Rejected on the data consistency check"),
    "REJ_ADR": ("Rejet sur Contrôle d'adressage", "Rejected on the addressing check"),
    "REJ_CONT_B2G": ("Rejet sur Contrôles métier B2G", "Rejected on the public-sector (B2G) business checks"),
    "REJ_REF_PJ": ("Rejet sur Référence de PJ", "Rejected on an attachment reference"),
    "REJ_ASS_PJ": ("Rejet sur Erreur d'association de la PJ", "Rejected on an attachment association error"),
    # 501 Irrecevable: the file could not be taken in
    "IRR_VIDE_F": ("Contrôle des fichiers non vides", "Check that the files are not empty"),
    "IRR_TYPE_F": ("Contrôle de type et extension des fichiers", "File type and extension check"),
    "IRR_SYNTAX": ("Contrôle syntaxique des fichiers", "File syntax check"),
    "IRR_TAILLE_PJ": ("Contrôle de taille des pièces jointes", "Attachment size check"),
    "IRR_NOM_PJ": ("Contrôle du nom des pièces jointes", "Attachment name check"),
    "IRR_VID_PJ": ("Contrôle des pièces jointes non vides", "Check that the attachments are not empty"),
    "IRR_EXT_DOC": ("Contrôle de type et extension des pièces jointes", "Attachment type and extension check"),
    "IRR_TAILLE_F": ("Contrôle de taille des fichiers", "File size check"),
    "IRR_ANTIVIRUS": ("Contrôle anti-virus", "Virus check"),
    "IRR_NOM_F": ("Contrôle du nom des fichiers", "File name check"),
}
_REFUSAL = ("TX_TVA_ERR", "MONTANTTOTAL_ERR", "CALCUL_ERR", "NON_CONFORME", "DOUBLON", "DEST_ERR", "TRANSAC_INC",
            "EMMET_INC", "CONTRAT_TERM", "DOUBLE_FACT", "CMD_ERR", "ADR_ERR", "REF_CT_ABSENT")
_DETAIL = ("CMD_ERR", "SIRET_ERR", "CODE_ROUTAGE_ERR", "REF_CT_ABSENT", "REF_ERR", "PU_ERR", "REM_ERR", "QTE_ERR",
           "ART_ERR", "MODPAI_ERR", "QUALITE_ERR", "LIVR_INCOMP")
REASONS_OF = {
    "200": ("NON_TRANSMISE",),
    "206": ("AUTRE", *_DETAIL),
    "207": ("AUTRE", "COORD_BANC_ERR", "TX_TVA_ERR", "MONTANTTOTAL_ERR", "CALCUL_ERR", "NON_CONFORME", "DOUBLON",
            "DEST_INC", "DEST_ERR", "TRANSAC_INC", "EMMET_INC", "CONTRAT_TERM", "DOUBLE_FACT", "ADR_ERR", *_DETAIL),
    "208": ("JUSTIF_ABS", "COORD_BANC_ERR", "CMD_ERR", "SIRET_ERR", "CODE_ROUTAGE_ERR", "REF_CT_ABSENT", "REF_ERR"),
    "210": _REFUSAL,
    "213": ("MONTANTTOTAL_ERR", "CALCUL_ERR", "DOUBLON", "DEST_INC", "ADR_ERR", "REJ_SEMAN", "REJ_UNI", "REJ_COH",
            "REJ_ADR", "REJ_CONT_B2G", "REJ_REF_PJ", "REJ_ASS_PJ"),
    "221": ("ROUTAGE_ERR",),
    "501": ("IRR_VIDE_F", "IRR_TYPE_F", "IRR_SYNTAX", "IRR_TAILLE_PJ", "IRR_NOM_PJ", "IRR_VID_PJ", "IRR_EXT_DOC",
            "IRR_TAILLE_F", "IRR_ANTIVIRUS", "IRR_NOM_F"),
}
# BR-FR-CDV-CL-09_MDT-113_210B2G: a refusal the State's platform sends (sender GlobalID 9999, scheme 0238)
B2G_REFUSAL_REASONS = ("RETRAIT_MAN_SERV", "ST_CT_NON_DECLAR", "SUPPR_COMP_AVOIR", "TRANSF_PMNT_REGIE", "AUTRE",
                       "COORD_BANC_ERR", *_REFUSAL, "LIVR_INCOMP")
# BR-FR-CDV-CL-10 (MDT-121). Names: XP Z12-012's annex A, sheet "Codes Action", not read itself but as Akretion's
# Odoo module for the reform transcribes it (CNF as FNFE's example UC5 207 writes MDT-122, "Créer un Avoir total").
# English: ours.
ACTIONS = {"NOA": ("Aucune Action Requise", "No action required"),
           "PIN": ("Information complémentaire requise", "Additional information required"),
           "NIN": ("Créer une Facture Rectificative", "Create a corrected invoice"),
           "CNF": ("Créer un Avoir total", "Create a full credit note"),
           "CNP": ("Créer un Avoir Partiel", "Create a partial credit note"),
           "CNA": ("Rembourser le paiement de la facture", "Refund the invoice's payment"), "OTH": ("Autre", "Other")}
# BR-FR-CDV-CL-11 (MDT-207); BR-FR-CDV-14: a 212 (Encaissée) states the amounts received (MEN) per VAT rate. Names:
# XP Z12-012 (2026-02) BR-FR-CDV-CL-11, as written there (capitals included). English: ours.
CHARACTERISTICS = {
    "MEN": ("Montant encaissé (TTC)", "Amount received (incl. VAT)"), "MPA": ("Montant payé", "Amount paid"),
    "RAP": ("Reste à payer (en cas de paiement partiel)", "Amount still due (after a partial payment)"),
    "ESC": ("Escompte accordé", "Early payment discount granted"), "RAB": ("Rabais accordé", "Rebate granted"),
    "REM": ("Remise accordée", "Discount granted"),
    "MAP": ("Montant HT Approuvé", "Approved amount excl. VAT"),
    "MAPTTC": ("Montant TTC Approuvé", "Approved amount incl. VAT"),
    "MNA": ("Montant HT NON Approuvé", "Amount excl. VAT not approved"),
    "MNATTC": ("Montant TTC Non Approuvé", "Amount incl. VAT not approved"),
    "CBB": ("Coordonnées Bancaires Bénéficiaire à modifier", "Payee's bank details to change"),
    "DIV": ("Donnée INVALIDE", "Invalid value"), "DVA": ("Donnée VALIDE attendue", "Expected valid value"),
    "MAJ": ('Donnée à prendre en compte à la place de celle présente dans la facture pour le traitement (Statut '
            '"Complétée" ou "Complément")', 'Value to process in place of the one in the invoice (status "Completed" '
            'or "Complement")')}
RECEIVED = "MEN"
PAYMENT_RECEIVED = "212"
NOT_RECEIVABLE = "501"   # Irrecevable: the rules ask for no invoice date (MDG-35) nor seller id (MDT-129)
DOCUMENT_TYPES = france.DOCUMENT_TYPES   # BR-FR-04 (MDT-91)
# ... and their names (fr, en) on the readable page: as XP Z12-012 (2026-02) BR-FR-04 names these UNTDID 1001 codes
# (262 "Avoir pour Remise Global" there, "Remise Globale" in its BR-FR-MAP-02). English: ours.
DOCUMENT_TYPE_NAMES = {
    "380": ("Facture commerciale", "Commercial invoice"), "389": ("Facture auto-facturée", "Self-billed invoice"),
    "393": ("Facture affacturée", "Factored invoice"),
    "501": ("Facture auto-facturée affacturée", "Self-billed factored invoice"),
    "386": ("Facture d'acompte", "Prepayment invoice"),
    "500": ("Facture d'acompte auto-facturée", "Self-billed prepayment invoice"),
    "384": ("Facture rectificative", "Corrected invoice"),
    "471": ("Facture rectificative auto-facturée", "Self-billed corrected invoice"),
    "472": ("Facture rectificative affacturée", "Factored corrected invoice"),
    "473": ("Facture rectificative auto-facturée affacturée", "Self-billed factored corrected invoice"),
    "381": ("Avoir", "Credit note"), "261": ("Avoir auto-facturé", "Self-billed credit note"),
    "262": ("Avoir pour Remise Globale", "Credit note for a global discount"),
    "396": ("Avoir affacturé", "Factored credit note"),
    "502": ("Avoir auto-facturé affacturé", "Self-billed factored credit note"),
    "503": ("Avoir de facture d'acompte", "Prepayment invoice credit note")}
# The identifier schemes (ISO 6523 ICD) of the parties' ids and electronic addresses that the reform gives a meaning
# (fr, en): SIREN, SIRET, the directory's e-invoicing address (BR-FR-23), the platforms' ids (PPF 0000, the State 9999).
# Names: ours (the rules and XP Z12-012 name the schemes by their use only).
SCHEMES = {SIREN_SCHEME: ("SIREN", "SIREN"), france.SIRET_SCHEME: ("SIRET", "SIRET"),
           france.SIREN_ADDRESS_SCHEME: ("Adresse de l'annuaire", "Directory address"),
           PPF_SCHEME: ("Identifiant de plateforme", "Platform identifier"), "EM": ("Adresse e-mail", "E-mail address")}


# German names of the code lists' codes (ours, not official: the reform names them in French only; the page shows
# the French name beside each, `pipeline.pdf.status_page`), by kind as `CODE_LISTS`: translations of the French
# names above, so each follows its French name's source (204 as "In Process", the UNTDID 1373 name CL-05 pairs it with).
_STATUS_DE = {
    "200": "Eingereicht", "201": "Von der Plattform ausgestellt", "202": "Empfangen", "203": "Bereitgestellt",
    "204": "In Bearbeitung", "205": "Genehmigt", "206": "Teilweise genehmigt", "207": "Strittig", "208": "Ausgesetzt",
    "209": "Vervollständigt", "210": "Abgelehnt", "211": "Zahlung übermittelt", "212": "Zahlung eingegangen",
    "213": "Zurückgewiesen", "214": "Mit Prüfvermerk", "220": "Storniert", "221": "Zustellungsfehler",
    "224": "Antrag auf Direktzahlung", "225": "Abgetreten (Factoring)", "226": "Still abgetreten (Factoring)",
    "227": "Wechsel des Kontos, auf das zu zahlen ist", "228": "Nicht abgetreten", "501": "Unzulässig"}
GERMAN_NAMES = {
    "status": _STATUS_DE,
    "process": {"REGULATED": "Regulierte E-Rechnungsstellung (B2B in Frankreich)",
                "NON_REGULATED": "Außerhalb der regulierten E-Rechnungsstellung",
                "B2C": "Verkauf an Verbraucher (B2C)", "B2CINT": "Internationaler Verkauf an Verbraucher (B2C)",
                "B2BINT": "Internationales Geschäft zwischen Unternehmen (B2B)",
                "OUTOFSCOPE": "Außerhalb des Geltungsbereichs der Reform",
                **{frame: _FRAMES[frame][2] for frame in BILLING_FRAME_NAMES}},
    "role": {"BY": "Käufer", "AB": "Vertreter des Käufers", "DL": "Factoring-Gesellschaft", "SE": "Verkäufer",
             "SR": "Vertreter des Verkäufers", "WK": "Plattform oder Dienstleister für elektronische Rechnungen",
             "DFH": "Öffentliches Rechnungsportal (PPF)", "PE": "Zahlungsempfänger", "PR": "Zahler",
             "II": "Rechnungssteller", "IV": "Rechnungsempfänger"},
    "reason": {
        "ST_CT_NON_DECLAR": "Subunternehmer / Mitauftragnehmer nicht gemeldet",
        "SUPPR_COMP_AVOIR": "Zurückgezogen zur Verrechnung mit Gutschriften",
        "TRANSF_PMNT_REGIE": "Zur Zahlung durch die öffentliche Kasse weitergegeben (nur B2G)",
        "CONTACT_ACHTR": "Sonstiges: wenden Sie sich an Ihren Käufer", "NON_TRANSMISE": "Empfänger nicht angeschlossen",
        "JUSTIF_ABS": "Beleg fehlt oder reicht nicht aus", "ROUTAGE_ERR": "Zustellungsfehler", "AUTRE": "Sonstiges",
        "COORD_BANC_ERR": "Fehler in der Bankverbindung", "TX_TVA_ERR": "Falscher Umsatzsteuersatz",
        "MONTANTTOTAL_ERR": "Falscher Gesamtbetrag", "CALCUL_ERR": "Rechenfehler in der Rechnung",
        "NON_CONFORME": "Pflichtangabe fehlt", "DOUBLON": "Doppelte Rechnung (bereits ausgestellt / empfangen)",
        "DEST_INC": "Empfänger unbekannt", "DEST_ERR": "Fehler beim Empfänger", "TRANSAC_INC": "Vorgang unbekannt",
        "EMMET_INC": "Aussteller unbekannt", "CONTRAT_TERM": "Vertrag beendet",
        "DOUBLE_FACT": "Bereits in einer anderen Rechnung berechnet",
        "CMD_ERR": "Bestellnummer unrichtig oder fehlend",
        "ADR_ERR": "Falsche elektronische Rechnungsadresse", "SIRET_ERR": "SIRET falsch oder fehlend",
        "CODE_ROUTAGE_ERR": "Leitweg-Code fehlend oder falsch",
        "REF_CT_ABSENT": "Für die Bearbeitung der Rechnung nötige Vertragsreferenz fehlt",
        "REF_ERR": "Unrichtige Referenz", "PU_ERR": "Unrichtige Stückpreise", "REM_ERR": "Falscher Nachlass",
        "QTE_ERR": "Unrichtige berechnete Menge", "ART_ERR": "Unrichtiger berechneter Artikel",
        "MODPAI_ERR": "Unrichtige Zahlungsbedingungen",
        "QUALITE_ERR": "Gelieferter Artikel in unrichtiger Qualität",
        "LIVR_INCOMP": "Lieferung unvollständig / nicht erfolgt",
        "REJ_SEMAN": "Zurückgewiesen wegen eines semantischen Fehlers",
        "REJ_UNI": "Zurückgewiesen bei der Eindeutigkeitsprüfung",
        "REJ_COH": "Zurückgewiesen bei der Prüfung der Datenkonsistenz",
        "REJ_ADR": "Zurückgewiesen bei der Adressierungsprüfung",
        "REJ_CONT_B2G": "Zurückgewiesen bei den fachlichen Prüfungen der öffentlichen Hand (B2G)",
        "REJ_REF_PJ": "Zurückgewiesen wegen des Verweises auf einen Anhang",
        "REJ_ASS_PJ": "Zurückgewiesen wegen eines Fehlers bei der Zuordnung eines Anhangs",
        "IRR_VIDE_F": "Prüfung, dass die Dateien nicht leer sind",
        "IRR_TYPE_F": "Prüfung von Typ und Endung der Dateien",
        "IRR_SYNTAX": "Syntaxprüfung der Dateien", "IRR_TAILLE_PJ": "Prüfung der Größe der Anhänge",
        "IRR_NOM_PJ": "Prüfung des Namens der Anhänge", "IRR_VID_PJ": "Prüfung, dass die Anhänge nicht leer sind",
        "IRR_EXT_DOC": "Prüfung von Typ und Endung der Anhänge", "IRR_TAILLE_F": "Prüfung der Dateigröße",
        "IRR_ANTIVIRUS": "Virenprüfung", "IRR_NOM_F": "Prüfung der Dateinamen"},
    "action": {"NOA": "Keine Aktion erforderlich", "PIN": "Zusätzliche Angaben erforderlich",
               "NIN": "Korrigierte Rechnung erstellen", "CNF": "Vollständige Gutschrift erstellen",
               "CNP": "Teilgutschrift erstellen", "CNA": "Zahlung der Rechnung erstatten", "OTH": "Sonstiges"},
    "characteristic": {"MEN": "Eingegangener Betrag (brutto)", "MPA": "Gezahlter Betrag",
                       "RAP": "Offener Betrag (bei Teilzahlung)", "ESC": "Gewährtes Skonto",
                       "RAB": "Gewährte Preisminderung", "REM": "Gewährter Nachlass",
                       "MAP": "Genehmigter Betrag netto", "MAPTTC": "Genehmigter Betrag brutto",
                       "MNA": "Nicht genehmigter Betrag netto", "MNATTC": "Nicht genehmigter Betrag brutto",
                       "CBB": "Zu ändernde Bankverbindung des Zahlungsempfängers", "DIV": "Ungültiger Wert",
                       "DVA": "Erwarteter gültiger Wert",
                       "MAJ": "Statt des Werts der Rechnung zu verarbeitender Wert (Status „Vervollständigt“)"},
    "documentStatus": {**{dsc: " / ".join(_STATUS_DE[s] for s, code in _DOCUMENT_STATUS_STEPS.items() if code == dsc)
                          for dsc in DOCUMENT_STATUS_NAMES}, "5": "Anderer Verarbeitungsstatus"},
    "type": {"380": "Handelsrechnung", "389": "Gutschriftsrechnung (Selbstfakturierung)",
             "393": "Abgetretene Rechnung (Factoring)",
             "501": "Abgetretene Gutschriftsrechnung (Selbstfakturierung, Factoring)",
             "386": "Vorauszahlungsrechnung", "500": "Vorauszahlungsrechnung (Selbstfakturierung)",
             "384": "Korrigierte Rechnung", "471": "Korrigierte Rechnung (Selbstfakturierung)",
             "472": "Korrigierte abgetretene Rechnung (Factoring)",
             "473": "Korrigierte Rechnung (Selbstfakturierung, Factoring)", "381": "Gutschrift",
             "261": "Gutschrift (Selbstfakturierung)", "262": "Gutschrift für einen Gesamtnachlass",
             "396": "Abgetretene Gutschrift (Factoring)", "502": "Gutschrift (Selbstfakturierung, Factoring)",
             "503": "Gutschrift zu einer Vorauszahlungsrechnung"},
    "scheme": {SIREN_SCHEME: "SIREN", france.SIRET_SCHEME: "SIRET",
               france.SIREN_ADDRESS_SCHEME: "Adresse aus dem Verzeichnis", PPF_SCHEME: "Plattform-Kennung",
               "EM": "E-Mail-Adresse"},
}

# The code lists by kind (the page's `kind:code` labels) and the JSON fields each names: what `code_names` and the
# readable page name a code with.
CODE_LISTS = {"status": STATUS_NAMES, "process": {**BUSINESS_PROCESS_NAMES, **BILLING_FRAME_NAMES}, "role": ROLES,
              "reason": REASONS, "action": ACTIONS, "characteristic": CHARACTERISTICS,
              "documentStatus": DOCUMENT_STATUS_NAMES, "type": DOCUMENT_TYPE_NAMES, "scheme": SCHEMES}
_PARTIES = ("message.sender", "message.issuer", "message.recipients[]")
CODED_FIELDS = {"message.businessProcess": "process", "status.code": "status",
                "status.documentStatusCode": "documentStatus", "status.details[].reasonCode": "reason",
                "status.details[].statusCode": "status", "status.details[].actionCode": "action",
                "status.details[].characteristics[].typeCode": "characteristic", "invoice.typeCode": "type",
                **{f"{party}.role": "role" for party in _PARTIES},
                **{f"{party}.{field}": "scheme" for party in _PARTIES
                   for field in ("idScheme", "electronicAddressScheme")}}


def code_names(data: dict) -> dict[str, dict[str, str]]:
    """The name (fr, en, and our German `de`) of each code of status data that has one, by the JSON path of its
    value: {"message.businessProcess": {"code": "REGULATED", "fr": ..., "en": ..., "de": ...}, ...}; codes without a
    name left out."""
    out: dict[str, dict[str, str]] = {}

    def walk(node, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{path}.{key}" if path else key)
        elif isinstance(node, list):
            for n, item in enumerate(node):
                walk(item, f"{path}[{n}]")
        elif isinstance(node, str):
            kind = CODED_FIELDS.get(cdar_terms.pattern_of(path))
            names = CODE_LISTS[kind].get(node) if kind else None
            if names:
                out[path] = {"code": node, "fr": names[0], "en": names[1], "de": GERMAN_NAMES[kind][node]}
    walk(data, "")
    return out


def status_name(code: str, language: str = "fr") -> str | None:
    names = STATUS_NAMES.get(code)
    return names[0 if language == "fr" else 1] if names else None


def _folded(text: str) -> str:
    """A name as compared: no accents, case or punctuation (`En_litige` = `En litige`, `Reçue` = `RECUE`)."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return " ".join(re.sub(r"[^a-z0-9]+", " ", plain.lower()).split())


# Both languages: "Refused" on a 207 contradicts its code as much as "Refusée" does.
_CODE_OF_NAME = {_folded(name): code for code, names in STATUS_NAMES.items() for name in names}

# ---- field types -----------------------------------------------------------------------------------------------

# ASCII digits only: Python's \d takes any script's ("２０２６", "٢٠٢٦"), which a message's reader cannot take as numbers
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}", re.ASCII)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)


def _date_time(value: Any) -> str:
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.isoformat(timespec="seconds")
    if not isinstance(value, str):
        raise PydanticCustomError("INVALID_TYPE", "must be a local date and time YYYY-MM-DDTHH:MM:SS")
    if not _DATE_TIME.fullmatch(value):
        raise PydanticCustomError("INVALID_FORMAT", "must be a local date and time YYYY-MM-DDTHH:MM:SS, without time "
                                  "zone or fraction (the message's format 204 carries neither)")
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise PydanticCustomError("INVALID_FORMAT", "is not a valid date and time")
    return value


def _date(value: Any) -> str:
    if type(value) is date:
        return value.isoformat()
    if not isinstance(value, str) or not _DATE.fullmatch(value):
        raise PydanticCustomError("INVALID_FORMAT", "must be a date YYYY-MM-DD (the message's format 102)")
    try:
        date.fromisoformat(value)
    except ValueError:
        raise PydanticCustomError("INVALID_FORMAT", "is not a valid calendar date")
    return value


def _listed(codes, what: str):
    """A code of a closed list, upper-cased on input (the lists are upper case)."""
    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise PydanticCustomError("INVALID_TYPE", "must be a string")
        code = value.strip().upper()
        if code not in codes:
            raise PydanticCustomError("INVALID_VALUE", f"is not {what}: one of {', '.join(codes)}")
        return code
    return Annotated[str, BeforeValidator(check), WithJsonSchema({"type": "string", "enum": list(codes)})]


def _pattern(regex: str, what: str):
    # ASCII, as the JSON Schema pattern reads `\d`: a status code "２０４" or a SIREN in Arabic-Indic digits passed,
    # and the rules let them through (XPath's \d is any script's too), to a platform that knows no such code
    compiled = re.compile(regex, re.ASCII)

    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise PydanticCustomError("INVALID_TYPE", "must be a string")
        if not compiled.fullmatch(value.strip()):
            raise PydanticCustomError("INVALID_FORMAT", f"must be {what}")
        return value.strip()
    return Annotated[str, BeforeValidator(check), WithJsonSchema({"type": "string", "pattern": f"^{regex}$"})]


DateTimeText = Annotated[str, BeforeValidator(_date_time),
                         WithJsonSchema({"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$",
                                         "description": "Local date and time, no offset."})]
DateText = Annotated[str, BeforeValidator(_date), WithJsonSchema({"type": "string", "format": "date"})]
StatusCode = _pattern(r"\d{3}", "a status code of three digits 0-9 (200 Déposée ... 213 Rejetée)")
Siren = _pattern(r"\d{9}", "a SIREN: nine digits 0-9")
Role = _listed(tuple(ROLES), "a party role of the CDV")
TypeCode = _listed((PROCESSING, TRANSMISSION), "a CDV message type (23 processing, 305 transmission)")
DocumentStatusCode = _listed(tuple(dict.fromkeys(c for codes in DOCUMENT_STATUS_CODES.values() for c in codes)),
                             "a document status code of the CDV")
ReasonCode = _listed(tuple(REASONS), "a CDV status reason code (BR-FR-CDV-CL-09)")
ActionCode = _listed(tuple(ACTIONS), "a CDV requested action code (BR-FR-CDV-CL-10)")
CharacteristicType = _listed(tuple(CHARACTERISTICS), "a CDV data type code (BR-FR-CDV-CL-11)")


def _guideline_id(value: Any) -> str:
    """MDT-3, case-insensitive on input, written as the rules spell it."""
    found = {g.upper(): g for g in (GUIDELINE_INVOICE, GUIDELINE_PPF)}.get(value.strip().upper()) \
        if isinstance(value, str) else None
    if found is None:
        raise PydanticCustomError("INVALID_VALUE", f"is not a CDV profile: {GUIDELINE_INVOICE} or {GUIDELINE_PPF} "
                                  "(BR-FR-CDV-02)")
    return found


def _business_process(value: Any) -> Any:
    """MDT-2 written as the list spells it when it is one of BR-FR-CDV-CL-01's (`regulated` as `REGULATED`, as the
    roles are upper-cased); a message to the PPF carries its own short code, kept as sent."""
    if isinstance(value, str) and value.strip().upper() in BUSINESS_PROCESSES:
        return value.strip().upper()
    return value


GuidelineId = Annotated[str, BeforeValidator(_guideline_id),
                        WithJsonSchema({"type": "string", "enum": [GUIDELINE_INVOICE, GUIDELINE_PPF]})]
InvoiceTypeCode = _listed(DOCUMENT_TYPES, "an invoice type code of the French rules (BR-FR-04)")


def _currency(value: Any) -> str:
    """MDT-215's currency (the amount's currencyID): ISO 4217, upper-cased on input. The XSD takes any token, so
    `EURO` or `€` reached the message unchecked."""
    if not isinstance(value, str):
        raise PydanticCustomError("INVALID_TYPE", "must be a string")
    if value.strip().upper() not in CURRENCY_CODES:
        raise PydanticCustomError("INVALID_VALUE", "is not an ISO 4217 currency code (EUR, USD, ...)")
    return value.strip().upper()


# An identifier or code of the message (UN/CEFACT IDType, CodeType: xs:token) as a schema-aware reader takes it: line
# breaks and tabs as spaces, runs of spaces as one, none at either end. Written as sent, " 0000 " was no PPF to the
# rules (they compare the raw text), an invoice number "F-1\nA" matched no invoice, and what was read back (trimmed)
# generated another message. Only XML's four whitespace characters, as xs:token and normalize-space() collapse them.
_XML_SPACE = re.compile(r"[ \t\n\r]+")
Token = Annotated[Text, AfterValidator(lambda value: _XML_SPACE.sub(" ", value).strip(" "))]


CurrencyCode = Annotated[str, BeforeValidator(_currency), WithJsonSchema({"type": "string", "minLength": 3,
                                                                          "maxLength": 3})]
Sequence = Annotated[int, Field(strict=True, ge=1, le=999_999)]

# ---- models (field order = the CDAR element order) -------------------------------------------------------------


def _describe(schema: dict, cls: type) -> None:
    """OpenAPI: each property's description from the term table (the MDT term and its names)."""
    for name, prop in schema.get("properties", {}).items():
        rows = [t for t in cdar_terms.TERMS if t.json_path.rsplit(".", 1)[-1].removesuffix("[]") == name
                and _MODEL_OF.get(t.json_path.rsplit(".", 1)[0].removesuffix("[]")) is cls]
        if rows:
            row = rows[0]
            text = f"{row.en} ({row.fr})" + (f" - {row.term}" if row.term else "") + "."
            prop["description"] = f"{text} {prop['description']}" if prop.get("description") else text


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=_describe)


class StatusParty(_Model):
    """A party of the message: sender (MDG-9), issuer (MDG-16) or a recipient (MDG-23). The sender's and the
    issuer's role are required (BR-FR-CDV-CL-02/03); a recipient may go without when it has an address."""
    role: Role | None = None
    id: Token | None = None
    idScheme: Token | None = None
    name: Text | None = None
    electronicAddress: Token | None = None
    electronicAddressScheme: Token | None = None


class StatusMessage(_Model):
    id: Token
    name: Text | None = None
    issueDateTime: DateTimeText
    businessProcess: Annotated[Token, BeforeValidator(_business_process)] | None = None
    guidelineId: GuidelineId | None = None
    sender: StatusParty
    issuer: StatusParty | None = None
    recipients: list[StatusParty] = Field(min_length=1, max_length=100)


class StatusCharacteristic(_Model):
    """MDG-43: a value the status is about (an amount received per VAT rate, a datum in dispute, ...)."""
    id: Token | None = None
    typeCode: CharacteristicType
    changed: StrictBool | None = None
    name: Text | None = None
    location: LongText | None = None
    amount: Number | None = None
    currencyCode: CurrencyCode | None = None
    date: DateText | None = None
    percent: Number | None = None


class StatusDetail(_Model):
    """MDG-37: the reason of a refusal, dispute or rejection, the action expected, and characteristics; a detail may
    state a status of its own (MDT-115, its name MDT-116), whose reason list then judges its reason."""
    reasonCode: ReasonCode | None = None
    reason: LongText | None = None
    statusCode: StatusCode | None = None
    statusName: Text | None = None
    actionCode: ActionCode | None = None
    action: LongText | None = None
    sequence: Sequence | None = None
    note: LongText | None = None
    characteristics: list[StatusCharacteristic] | None = Field(default=None, max_length=1000)


class StatusInfo(_Model):
    code: StatusCode
    name: Text | None = None
    dateTime: DateTimeText
    typeCode: TypeCode | None = None
    documentStatusCode: DocumentStatusCode | None = None
    details: list[StatusDetail] | None = Field(default=None, max_length=100)


class StatusInvoice(_Model):
    number: Token
    issueDate: DateText | None = None
    typeCode: InvoiceTypeCode | None = None   # required but for 501, whose file may not be readable (request_errors)
    receiptDateTime: DateTimeText | None = None
    referenceTypeCode: Token | None = None
    sellerSiren: Siren | None = None
    buyerSiren: Siren | None = None


class StatusRequest(_Model):
    """A lifecycle status message (CDV) of France's reform, as JSON."""
    message: StatusMessage
    status: StatusInfo
    invoice: StatusInvoice


_MODEL_OF = {"message": StatusMessage, "message.sender": StatusParty, "message.issuer": StatusParty,
             "message.recipients": StatusParty, "status": StatusInfo, "status.details": StatusDetail,
             "status.details[].characteristics": StatusCharacteristic, "invoice": StatusInvoice}
for _path in list(_MODEL_OF):
    _MODEL_OF[_path.replace("[]", "")] = _MODEL_OF[_path]

# ---- errors ----------------------------------------------------------------------------------------------------


def detail(code: str, field: str | None, message: str, rejected: Any = None) -> ErrorDetail:
    """An ErrorDetail naming the field and its MDT term (the term table), like the invoice model's."""
    term = cdar_terms.term_for(field)
    label = f"{term.en}, {term.term}" if term and term.term else (term.en if term else "")
    prefix = f"{field}" + (f" ({label})" if label else "")
    return ErrorDetail(code=code, field=field, businessTerm=term.term if term else None,
                       rejectedValue=rejected_value(rejected), message=f"{prefix}: {message}" if field else message)


def phase(req: StatusRequest) -> str | None:
    """MDT-77 as sent, else the phase of the status code (None for a code of neither phase)."""
    if req.status.typeCode:
        return req.status.typeCode
    code = req.status.code
    return TRANSMISSION if code in TRANSMISSION_STATUSES else PROCESSING if code in PROCESSING_STATUSES else None


def _is_ppf(recipients: list[StatusParty]) -> bool:
    """The PPF is the one recipient with an id (BR-FR-CDV-02, CL-01's $TestPPF): GlobalID 0000 of scheme 0238, and a
    recipient of role DFH."""
    with_id = [r for r in recipients if r.id]
    return (len(with_id) == 1 and with_id[0].id == PPF_ID and with_id[0].idScheme == PPF_SCHEME
            and any(r.role == "DFH" for r in recipients))


def request_errors(req: StatusRequest) -> list[ErrorDetail]:
    """Every BR-FR-CDV requirement the request misses or contradicts, as entries naming field and MDT term."""
    errors: list[ErrorDetail] = []

    def need(ok: bool, field: str, message: str, rejected=None, code: str = "REQUIRED") -> None:
        # a field two requirements miss (an id sent without its scheme's value and required by the phase) is
        # named once: the first requirement says what it is for
        if not ok and not (code == "REQUIRED" and any(e.field == field and e.code == code for e in errors)):
            errors.append(detail(code, field, message, rejected))

    msg, st, inv = req.message, req.status, req.invoice
    code = st.code
    # the status: its name, its phase and the phase's parties
    known = STATUS_NAMES.get(code)
    need(known is not None or st.name is not None, "status.name",
         f"is required for status code {code}, which no published text names (the reform names 200 ... "
         "228 and 501)")
    named = _CODE_OF_NAME.get(_folded(st.name)) if st.name else None
    need(named in (None, code), "status.name", f"names status {named} ({status_name(named or '')}), not {code}",
         st.name, "INVALID_VALUE")
    typed = phase(req)
    need(typed is not None, "status.typeCode", f"is required for status code {code}, which belongs to no phase here: "
         f"{TRANSMISSION} (transmission, by a platform) or {PROCESSING} (processing) (BR-FR-CDV-09)")
    usual = TRANSMISSION if code in TRANSMISSION_STATUSES else PROCESSING if code in PROCESSING_STATUSES else None
    reporter = "a platform reports in phase 305" if usual == TRANSMISSION else "a business reports in phase 23"
    need(st.typeCode is None or usual in (None, st.typeCode), "status.typeCode",
         f"contradicts status {code}, which {reporter}", st.typeCode, "INVALID_VALUE")
    need(msg.sender.role is not None, "message.sender.role", "is required (BR-FR-CDV-06, BR-FR-CDV-CL-02)")
    need(msg.issuer is None or msg.issuer.role is not None, "message.issuer.role", "is required (BR-FR-CDV-CL-03)")
    if typed == TRANSMISSION:
        need(msg.sender.role in (None, "WK"), "message.sender.role", "must be WK (the platform) in the transmission "
             "phase (MDT-77 305, BR-FR-CDV-CL-02)", msg.sender.role, "INVALID_VALUE")
        need(msg.issuer is not None, "message.issuer", "is required: the platform (role WK) in the transmission phase "
             "(BR-FR-CDV-CL-03)")
        need(msg.issuer is None or msg.issuer.role in (None, "WK"), "message.issuer.role", "must be WK (the "
             "platform) in the transmission phase (MDT-77 305, BR-FR-CDV-CL-03)", msg.issuer and msg.issuer.role,
             "INVALID_VALUE")
    elif typed == PROCESSING:
        need(msg.sender.role in (None, *SENDER_ROLES), "message.sender.role", f"must be one of "
             f"{', '.join(SENDER_ROLES)} in the processing phase (MDT-77 23, BR-FR-CDV-CL-02)", msg.sender.role,
             "INVALID_VALUE")
        need(msg.issuer is not None, "message.issuer", "is required in the processing phase: the business that "
             "reports the status, with its id (BR-FR-CDV-CL-03, BR-FR-CDV-07)")
        if msg.issuer is not None:
            need(msg.issuer.role in (None, *ISSUER_ROLES), "message.issuer.role", f"must be one of "
                 f"{', '.join(ISSUER_ROLES)} in the processing phase (MDT-77 23, BR-FR-CDV-CL-03): a platform (WK) "
                 "only transmits", msg.issuer.role, "INVALID_VALUE")
            need(msg.issuer.id is not None, "message.issuer.id", "is required in the processing phase (MDT-77 23, "
                 "BR-FR-CDV-07)")
    dsc = st.documentStatusCode
    need(dsc is None or typed is None or dsc in DOCUMENT_STATUS_CODES[typed], "status.documentStatusCode",
         f"is not a document status code of phase {typed}: one of {', '.join(DOCUMENT_STATUS_CODES.get(typed, ()))} "
         "(BR-FR-CDV-CL-05)", dsc, "INVALID_VALUE")
    # the parties
    for i, r in enumerate(msg.recipients):
        need(r.role in (None, *RECIPIENT_ROLES), f"message.recipients[{i}].role",
             f"must be one of {', '.join(RECIPIENT_ROLES)} (BR-FR-CDV-CL-04)", r.role, "INVALID_VALUE")
        need(r.role in ROLES_WITHOUT_ADDRESS or r.electronicAddress is not None,
             f"message.recipients[{i}].electronicAddress", f"is required for a recipient of role {r.role or '(none)'}: "
             "only a platform (WK) or the PPF (DFH) is reached without one (BR-FR-CDV-08)")
    for path, party in (("message.sender", msg.sender), ("message.issuer", msg.issuer),
                        *((f"message.recipients[{i}]", r) for i, r in enumerate(msg.recipients))):
        if party is not None:
            need(party.idScheme is None or party.id is not None, f"{path}.id", "is required with idScheme")
            problem = france.identifier_problem(party.idScheme, party.id)
            need(problem is None, f"{path}.id", str(problem), party.id, "INVALID_VALUE")
            need(party.electronicAddressScheme is None or party.electronicAddress is not None,
                 f"{path}.electronicAddress", "is required with electronicAddressScheme")
            # the rules check no address; the invoices' rules hold the directory's to a form (BR-FR-23)
            problem = france.address_problem(party.electronicAddressScheme, party.electronicAddress)
            need(problem is None, f"{path}.electronicAddress", str(problem), party.electronicAddress,
                 "INVALID_VALUE")
    # the profile and the business process
    ppf = _is_ppf(msg.recipients)
    need(msg.guidelineId != GUIDELINE_PPF or ppf, "message.guidelineId", f"{GUIDELINE_PPF} is the profile of a "
         f"message whose one recipient is the PPF (id {PPF_ID}, scheme {PPF_SCHEME}, role DFH) (BR-FR-CDV-02)",
         msg.guidelineId, "INVALID_VALUE")
    if ppf:
        need(msg.businessProcess is None or len(msg.businessProcess.strip()) <= 3, "message.businessProcess",
             "has at most 3 characters in a message to the PPF (BR-FR-CDV-CL-01)", msg.businessProcess,
             "INVALID_VALUE")
    else:
        need(msg.businessProcess is not None, "message.businessProcess",
             f"is required: one of {', '.join(BUSINESS_PROCESSES)} (BR-FR-CDV-CL-01)")
        need(msg.businessProcess is None or msg.businessProcess in BUSINESS_PROCESSES, "message.businessProcess",
             f"must be one of {', '.join(BUSINESS_PROCESSES)} (BR-FR-CDV-CL-01)", msg.businessProcess,
             "INVALID_VALUE")
    # the invoice
    for field, siren in (("invoice.sellerSiren", inv.sellerSiren), ("invoice.buyerSiren", inv.buyerSiren)):
        problem = france.identifier_problem(SIREN_SCHEME, siren)
        need(problem is None, field, str(problem), siren, "INVALID_VALUE")
    if code != NOT_RECEIVABLE:
        need(inv.issueDate is not None, "invoice.issueDate", "is required (BR-FR-CDV-11), except for status 501 "
             "(Irrecevable)")
        need(inv.sellerSiren is not None, "invoice.sellerSiren", "is required (BR-FR-CDV-13): the seller's SIREN "
             "(BT-30), except for status 501 (Irrecevable)")
        # no rule asks for MDT-91, but a status names the invoice's type as every FNFE example does; a file refused
        # as not receivable (empty, unreadable, a virus) may not tell it, as it may not tell its date and seller
        need(inv.typeCode is not None, "invoice.typeCode", "is required: the invoice's type code (BT-3, BR-FR-04's "
             "list), except for status 501 (Irrecevable)")
    # the details: reasons, actions, amounts
    details = st.details or []
    reasons = [(i, d.reasonCode) for i, d in enumerate(details) if d.reasonCode]
    b2g = msg.sender.id == B2G_SENDER_ID and msg.sender.idScheme == PPF_SCHEME
    # named where the reason goes (MDT-113, the term BR-FR-CDV-15 names), details sent or not, with the reasons the
    # status takes: the user learns what to send, not only that something is missing
    need(code not in REASON_REQUIRED or bool(reasons), "status.details[0].reasonCode",
         f"a reason is required for status {code} ({status_name(code)}) (BR-FR-CDV-15): one of "
         f"{', '.join(_allowed_reasons(code, b2g) or ())}")
    for i, reason in reasons:
        problem = _reason_problem(reason, details[i].statusCode or code, b2g)
        need(problem is None, f"status.details[{i}].reasonCode", str(problem), reason, "INVALID_VALUE")
    for i, d in enumerate(details):
        need(d.statusName is None or d.statusCode is not None, f"status.details[{i}].statusCode",
             "is required with statusName")
        named = _CODE_OF_NAME.get(_folded(d.statusName)) if d.statusName else None
        need(d.statusCode is None or named in (None, d.statusCode), f"status.details[{i}].statusName",
             f"names status {named} ({status_name(named or '')}), not {d.statusCode}", d.statusName, "INVALID_VALUE")
        for j, c in enumerate(d.characteristics or []):
            where = f"status.details[{i}].characteristics[{j}]"
            need(c.currencyCode is None or c.amount is not None, f"{where}.amount", "is required with currencyCode")
            # MDT-215 is money the invoice states to the cent (BR-FR-DEC-01): 10500.005 received cannot be matched
            # with it, and rounding it here would misstate what the sender reported
            need(c.amount is None or c.amount == c.amount.quantize(_CENT), f"{where}.amount", "has more than 2 "
                 "decimals: an amount is stated to the cent, as the invoice's amounts are (BR-FR-DEC-01)", c.amount,
                 "INVALID_VALUE")
            if c.typeCode == RECEIVED and code == PAYMENT_RECEIVED:
                need(c.amount is not None, f"{where}.amount", "is required: the amount received at this VAT rate "
                     "(BR-FR-CDV-14)")
                need(c.percent is not None, f"{where}.percent", "is required: the VAT rate of the amount received "
                     "(BR-FR-CDV-14)")
                # the VAT due on receipts is declared per French rate: 19 for 19.6 would misstate it
                need(c.percent is None or c.percent in france.VAT_RATES, f"{where}.percent", "is no French VAT "
                     f"rate: one of {', '.join(str(r) for r in france.VAT_RATES)} (the rates of BR-FR-16)",
                     c.percent, "INVALID_VALUE")
    if code == PAYMENT_RECEIVED:
        # one amount received per VAT rate (BR-FR-CDV-14): two at one rate leave the reader to guess which is meant
        # (or to add them up) when declaring the VAT due on receipts
        first: dict[Decimal, str] = {}
        for i, d in enumerate(details):
            for j, c in enumerate(d.characteristics or []):
                if c.typeCode != RECEIVED or c.percent is None:
                    continue
                where = f"status.details[{i}].characteristics[{j}]"
                need(c.percent not in first, f"{where}.percent", f"states a second amount received at {c.percent} % "
                     f"({first.get(c.percent)} states one): a payment received gives one amount per VAT rate "
                     "(BR-FR-CDV-14)", c.percent, "INVALID_VALUE")
                first.setdefault(c.percent, where)
    numbers = [d.sequence for d in details if d.sequence is not None]
    for i, d in enumerate(details):
        need(d.sequence is None or numbers.count(d.sequence) == 1, f"status.details[{i}].sequence",
             "numbers one status detail only: each detail has its own incremental number (MDT-124-2)", d.sequence,
             "INVALID_VALUE")
    if code == PAYMENT_RECEIVED:
        need(any(c.typeCode == RECEIVED for d in details for c in d.characteristics or []),
             "status.details[0].characteristics" if details else "status.details",
             f"a payment received (212 Encaissée) states the amounts received per VAT rate: a characteristic of "
             f"typeCode {RECEIVED} with amount and percent for each rate (BR-FR-CDV-14)")
    errors += _time_errors(req)
    return errors


def _allowed_reasons(code: str, b2g: bool) -> tuple[str, ...] | None:
    """The reasons (MDT-113) status `code` takes (BR-FR-CDV-CL-09), a refusal by the State's platform its own; None
    for a status whose reasons no rule lists."""
    return B2G_REFUSAL_REASONS if code == "210" and b2g else REASONS_OF.get(code)


def _reason_problem(reason: str, code: str, b2g: bool) -> str | None:
    """What is wrong with a detail's reason under the status judging it (BR-FR-CDV-CL-09: the detail's own status,
    MDT-115, else the message's, MDT-105), or None. The State platform's refusals have their own list; its rule's
    text names CONTACT_ACHTR, its test refuses it."""
    b2g_refusal = code == "210" and b2g
    allowed = _allowed_reasons(code, b2g)
    if allowed is None or reason in allowed:
        return None
    of = (f"a refusal (210) by the State's platform (sender {B2G_SENDER_ID} of scheme {PPF_SCHEME})" if b2g_refusal
          else f"status {code} ({status_name(code)})")
    rule = ("BR-FR-CDV-CL-09_MDT-113_210B2G; CONTACT_ACHTR, which the rule's text lists, its test refuses"
            if b2g_refusal else "BR-FR-CDV-CL-09")
    return f"is not a reason of {of}: one of {', '.join(allowed)} ({rule})"


_CENT = Decimal("0.01")
# Local date-times of different places: the invoice's date is the seller's, a status's time the platform's (Paris,
# or an overseas department a few hours off), so comparisons across them, and with this server's clock, allow a day.
_SLACK = timedelta(days=1)


def _time_errors(req: StatusRequest) -> list[ErrorDetail]:
    """The message's dates in the order a status happens: the invoice issued (MDT-100) and received (MDT-95) before
    its status (MDT-78), the status before the message reporting it (MDT-8), none of them in the future. The rules
    compare no dates, but a platform that gets a status before its invoice, or dated next year, cannot place it."""
    msg, st, inv = req.message, req.status, req.invoice
    latest = datetime.now(timezone.utc).replace(tzinfo=None) + _SLACK
    created, happened = datetime.fromisoformat(msg.issueDateTime), datetime.fromisoformat(st.dateTime)
    received = datetime.fromisoformat(inv.receiptDateTime) if inv.receiptDateTime else None
    issued = datetime.fromisoformat(inv.issueDate) if inv.issueDate else None
    errors: list[ErrorDetail] = []
    for field, value, sent in (("message.issueDateTime", created, msg.issueDateTime),
                               ("status.dateTime", happened, st.dateTime),
                               ("invoice.receiptDateTime", received, inv.receiptDateTime),
                               ("invoice.issueDate", issued, inv.issueDate)):
        if value is not None and value > latest:
            errors.append(detail("INVALID_VALUE", field, "is in the future: a message reports what has happened",
                                 sent))
    if not errors and happened > created:
        errors.append(detail("INVALID_VALUE", "status.dateTime", f"is after the message's creation "
                             f"(message.issueDateTime {msg.issueDateTime}): a message reports a status that has "
                             "happened", st.dateTime))
    if not errors and received is not None and received > happened:
        errors.append(detail("INVALID_VALUE", "invoice.receiptDateTime", f"is after the status (status.dateTime "
                             f"{st.dateTime}): an invoice has a status once it is received", inv.receiptDateTime))
    for field, later, what in (("status.dateTime", happened, "the status"),
                               ("invoice.receiptDateTime", received, "its receipt")):
        if not errors and issued is not None and later is not None and issued > later + _SLACK:
            errors.append(detail("INVALID_VALUE", "invoice.issueDate", f"is after {what} ({field} "
                                 f"{later.isoformat()}): an invoice is received and given a status once it is issued",
                                 inv.issueDate))
    return errors


def with_derived(req: StatusRequest) -> StatusRequest:
    """The request with what the message states and the request may leave out filled in: the status name, the
    phase (MDT-77), the document status code (MDT-88), the profile (MDT-3) and the details' sequence numbers."""
    st = req.status
    details = [d if d.sequence is not None else d.model_copy(update={"sequence": n})
               for n, d in enumerate(st.details or [], 1)] or None
    status = st.model_copy(update={"name": st.name or status_name(st.code), "typeCode": phase(req),
                                   "documentStatusCode": st.documentStatusCode or DOCUMENT_STATUS_OF.get(st.code),
                                   "details": details})
    message = req.message.model_copy(update={"guidelineId": req.message.guidelineId or GUIDELINE_INVOICE})
    return req.model_copy(update={"status": status, "message": message})


def validate_status_request(data: Any) -> StatusRequest:
    """Parsed JSON -> StatusRequest, or ApiError 400 INVALID_INPUT with every problem (field, MDT term)."""
    if not isinstance(data, dict):
        raise invalid_input("The request body must be a JSON object.",
                            [detail("INVALID_TYPE", None, "the request body must be a JSON object (a status request "
                                    "with message, status and invoice)", data)])
    try:
        req = StatusRequest.model_validate(data)
    except ValidationError as exc:
        errors = from_pydantic(exc, detail)
        raise invalid_input(f"The request has {len(errors)} invalid field(s).", errors[:MAX_ERRORS]) from None
    errors = request_errors(req)
    if errors:
        raise invalid_input(f"The request has {len(errors)} invalid field(s).", errors[:MAX_ERRORS])
    return req


def parse_status_request(body: bytes) -> StatusRequest:
    """Request body -> StatusRequest, or ApiError 400 INVALID_INPUT."""
    if not body or not body.strip():
        raise invalid_input("The request body is empty.", [detail("EMPTY_BODY", None, "the request body is empty; "
                                                                  "send a status request JSON object")])
    try:
        data = loads(body)
    except (ValueError, RecursionError) as exc:
        raise invalid_input("The request body is not valid JSON.", [detail("MALFORMED_JSON", None,
                                                                           f"malformed JSON: {exc}")]) from None
    return validate_status_request(data)


def reading_problems(data: dict) -> tuple[list[str], list[ErrorDetail]]:
    """What a status read from a message lacks for generation: (fields required and missing, other problems)."""
    try:
        validate_status_request(data)
    except ApiError as exc:
        missing = [e.field for e in exc.errors if e.code == "REQUIRED" and e.field]
        return missing, [e for e in exc.errors if e.code != "REQUIRED" or not e.field]
    return [], []

