// The JVM yardstick for bench/bench_jvm.py: Saxon-HE (Debian's libsaxonhe-java) on a warm JVM running the same
// official compiled Schematron XSLTs our engine runs, driven over stdin/stdout so that its rounds interleave
// with the Python side's. Not part of the service; compiled at bench time:
//
//     javac -cp /usr/share/java/Saxon-HE.jar -d OUT bench/jvm/ValidateHarness.java bench/jvm/Compiled.java
//     java -cp OUT:/usr/share/java/Saxon-HE.jar ValidateHarness
//
// Protocol, one line per request (tab-separated), one line per answer:
//     RUN <doc path> <xsd path or -> <stylesheet path>[|<stylesheet path>...]
//  -> OK <parse ns> <rules ns> <xsd ns or -1> <failed asserts + successful reports>
//     (or ERR <message>)
//     QUIT
// parse = Saxon's DocumentBuilder building a tree from the file (what a KoSIT-style validator does once per
// document); rules = each stylesheet run on that tree into an in-memory SVRL tree (XdmDestination), in order;
// xsd = JAXP (the JDK's Xerces) validating the file against the preloaded schema, timed apart, so the figure
// comparable with ours (which includes XSD) is available too. Compiled stylesheets and schemas are cached by
// path for the life of the process; the finding count (outside the timings) is there to check that both sides
// did the same work. The processor and the caches are Compiled.java's.
import java.io.File;

import javax.xml.transform.stream.StreamSource;
import javax.xml.validation.Schema;

import net.sf.saxon.s9api.DocumentBuilder;
import net.sf.saxon.s9api.XPathCompiler;
import net.sf.saxon.s9api.XPathExecutable;
import net.sf.saxon.s9api.XPathSelector;
import net.sf.saxon.s9api.XdmDestination;
import net.sf.saxon.s9api.XdmNode;
import net.sf.saxon.s9api.XsltExecutable;
import net.sf.saxon.s9api.XsltTransformer;

public final class ValidateHarness extends Compiled {
    private final XPathExecutable countFindings;

    private ValidateHarness() throws Exception {
        XPathCompiler xp = processor.newXPathCompiler();
        xp.declareNamespace("svrl", "http://purl.oclc.org/dsdl/svrl");
        countFindings = xp.compile("count(//svrl:failed-assert | //svrl:successful-report)");
    }

    private String run(String doc, String xsd, String[] paths) throws Exception {
        XsltExecutable[] exes = new XsltExecutable[paths.length];
        for (int i = 0; i < paths.length; i++) {
            exes[i] = sheet(paths[i]);  // compiled on first use, outside the timings
        }
        Schema schema = "-".equals(xsd) ? null : schema(xsd);

        long t0 = System.nanoTime();
        XdmNode node = builder.build(new File(doc));
        long t1 = System.nanoTime();
        XdmNode[] reports = new XdmNode[exes.length];
        for (int i = 0; i < exes.length; i++) {
            XsltTransformer t = exes[i].load();
            t.setInitialContextNode(node);
            XdmDestination out = new XdmDestination();
            t.setDestination(out);
            t.transform();
            reports[i] = out.getXdmNode();
        }
        long t2 = System.nanoTime();
        long xsdNs = -1;
        if (schema != null) {
            long t3 = System.nanoTime();
            schema.newValidator().validate(new StreamSource(new File(doc)));
            xsdNs = System.nanoTime() - t3;
        }
        long findings = 0;
        for (XdmNode report : reports) {
            XPathSelector sel = countFindings.load();
            sel.setContextItem(report);
            findings += Long.parseLong(sel.evaluateSingle().getStringValue());
        }
        return "OK\t" + (t1 - t0) + "\t" + (t2 - t1) + "\t" + xsdNs + "\t" + findings;
    }

    @Override
    protected String answer(String[] f) throws Exception {
        if (!f[0].equals("RUN") || f.length != 4) {
            throw new IllegalArgumentException("bad request: " + String.join("\t", f));
        }
        return run(f[1], f[2], f[3].split("\\|"));
    }

    public static void main(String[] args) throws Exception {
        new ValidateHarness().serve();
    }
}
