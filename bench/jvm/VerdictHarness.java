// The JVM verdict yardstick for bench/realworld_jvm.py: Debian's Saxon-HE runs the ORIGINAL official compiled
// Schematron XSLTs and the JDK's Xerces the XSD, and this says what they find, per document, so that our verdicts
// (saxonche running optimised copies) can be checked by an engine that shares no code with ours. Not part of the
// service; compiled at bench time into ~/.cache:
//
//     javac -cp /usr/share/java/Saxon-HE.jar -d OUT bench/jvm/VerdictHarness.java bench/jvm/Compiled.java
//     java -cp OUT:/usr/share/java/Saxon-HE.jar VerdictHarness
//
// Protocol, one tab-separated line per request and per answer:
//     MATCH <doc path> <KoSIT scenarios.xml>
//  -> OK <index of the first scenario whose match XPath holds, -1 for none>   (the KoSIT validator's choice)
//     CHECK <doc path> <xsd path or -> <stylesheet path>[|<stylesheet path>...]
//  -> OK <xsd: "valid", "-" when not asked, or the first errors> <finding>...
//     one finding per failed assert / successful report of any stylesheet: id␟flag␟location␟text
//     (␟ = U+001F; the text cut to 200 characters, whitespace collapsed); a stylesheet that stops with a dynamic
//     error gives one finding RULE-ENGINE-ERROR␟fatal␟<stylesheet file>␟<error>
//  -> ERR <message>   (e.g. the document is not well-formed)
//     QUIT
import java.io.File;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import javax.xml.transform.stream.StreamSource;
import javax.xml.validation.Schema;
import javax.xml.validation.Validator;

import org.xml.sax.ErrorHandler;
import org.xml.sax.SAXParseException;

import net.sf.saxon.s9api.XPathCompiler;
import net.sf.saxon.s9api.XPathSelector;
import net.sf.saxon.s9api.XdmDestination;
import net.sf.saxon.s9api.XdmItem;
import net.sf.saxon.s9api.XdmNode;
import net.sf.saxon.s9api.XsltExecutable;
import net.sf.saxon.s9api.XsltTransformer;

public final class VerdictHarness extends Compiled {
    private static final String SVRL = "http://purl.oclc.org/dsdl/svrl";
    private static final String SCENARIOS = "http://www.xoev.de/de/validator/framework/1/scenarios";
    private static final char SEP = '\u001f';

    private final Map<String, List<XPathSelector>> matchers = new HashMap<>();

    /** Each scenario's match expression, compiled with the namespaces the scenario declares (as KoSIT does). */
    private List<XPathSelector> matchers(String config) throws Exception {
        List<XPathSelector> found = matchers.get(config);
        if (found != null) {
            return found;
        }
        found = new ArrayList<>();
        XdmNode root = builder.build(new File(config));
        XPathCompiler read = processor.newXPathCompiler();
        read.declareNamespace("s", SCENARIOS);
        for (XdmItem scenario : read.evaluate("/s:scenarios/s:scenario", root)) {
            XPathCompiler xp = processor.newXPathCompiler();
            for (XdmItem ns : read.evaluate("s:namespace", scenario)) {
                xp.declareNamespace(((XdmNode) ns).getAttributeValue(new net.sf.saxon.s9api.QName("prefix")),
                                    ns.getStringValue().trim());
            }
            String match = read.evaluateSingle("s:match", scenario).getStringValue().trim();
            found.add(xp.compile(match).load());
        }
        matchers.put(config, found);
        return found;
    }

    private String match(String doc, String config) throws Exception {
        XdmNode node = builder.build(new File(doc));
        List<XPathSelector> all = matchers(config);
        for (int i = 0; i < all.size(); i++) {
            XPathSelector sel = all.get(i);
            sel.setContextItem(node);
            if (sel.effectiveBooleanValue()) {
                return "OK\t" + i;
            }
        }
        return "OK\t-1";
    }

    /** Every XSD error (not only the first), so that a document's XSD verdict is complete. */
    private static String xsd(Schema schema, String doc) throws Exception {
        List<String> errors = new ArrayList<>();
        Validator v = schema.newValidator();
        v.setErrorHandler(new ErrorHandler() {
            public void warning(SAXParseException e) { }
            public void error(SAXParseException e) { errors.add("line " + e.getLineNumber() + ": " + e.getMessage()); }
            public void fatalError(SAXParseException e) throws SAXParseException { throw e; }
        });
        v.validate(new StreamSource(new File(doc)));
        if (errors.isEmpty()) {
            return "valid";
        }
        String all = String.join(" | ", errors.subList(0, Math.min(3, errors.size())));
        return errors.size() + " error(s): " + all;
    }

    private String check(String doc, String xsdPath, String[] paths) throws Exception {
        XdmNode node = builder.build(new File(doc));
        StringBuilder out = new StringBuilder("OK\t");
        out.append("-".equals(xsdPath) ? "-" : clean(xsd(schema(xsdPath), doc), 600));
        XPathCompiler xp = processor.newXPathCompiler();
        xp.declareNamespace("svrl", SVRL);
        for (String path : paths) {
            XsltTransformer t = sheet(path).load();
            t.setInitialContextNode(node);
            XdmDestination dest = new XdmDestination();
            t.setDestination(dest);
            try {
                t.transform();
            } catch (net.sf.saxon.s9api.SaxonApiException e) {
                // a stylesheet that stops on a document judges nothing: a fatal finding, the others still run
                out.append('\t').append("RULE-ENGINE-ERROR").append(SEP).append("fatal").append(SEP)
                   .append(new File(path).getName()).append(SEP).append(clean(String.valueOf(e), 200));
                continue;
            }
            for (XdmItem f : xp.evaluate("//svrl:failed-assert | //svrl:successful-report", dest.getXdmNode())) {
                XdmNode n = (XdmNode) f;
                out.append('\t').append(attr(n, "id")).append(SEP).append(attr(n, "flag")).append(SEP)
                   .append(clean(attr(n, "location"), 300)).append(SEP)
                   .append(clean(xp.evaluateSingle("string(svrl:text)", n).getStringValue(), 200));
            }
        }
        return out.toString();
    }

    private static String attr(XdmNode n, String name) {
        String v = n.getAttributeValue(new net.sf.saxon.s9api.QName(name));
        return v == null ? "" : v;
    }

    private static String clean(String s, int max) {
        String c = s.replaceAll("\\s+", " ").trim().replace(SEP, ' ');
        return c.length() > max ? c.substring(0, max) : c;
    }

    @Override
    protected String answer(String[] f) throws Exception {
        if (f[0].equals("MATCH") && f.length == 3) {
            return match(f[1], f[2]);
        }
        if (f[0].equals("CHECK") && f.length == 4) {
            return check(f[1], f[2], f[3].split("\\|"));
        }
        throw new IllegalArgumentException("bad request: " + String.join("\t", f));
    }

    public static void main(String[] args) throws Exception {
        new VerdictHarness().serve();
    }
}
