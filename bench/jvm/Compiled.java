// What the JVM harnesses (ValidateHarness, VerdictHarness) share: one Saxon-HE processor, the stylesheets and XSDs
// each compiles, cached by path for the life of the process, and the line protocol over stdin/stdout (READY, then
// one tab-separated answer per request line, ERR <message> for a failed one, until QUIT). Compiled together with
// either harness (bench_jvm.compile_harness).

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import javax.xml.XMLConstants;
import javax.xml.transform.stream.StreamSource;
import javax.xml.validation.Schema;
import javax.xml.validation.SchemaFactory;

import net.sf.saxon.s9api.DocumentBuilder;
import net.sf.saxon.s9api.Processor;
import net.sf.saxon.s9api.XsltCompiler;
import net.sf.saxon.s9api.XsltExecutable;

abstract class Compiled {
    protected final Processor processor = new Processor(false);
    protected final DocumentBuilder builder = processor.newDocumentBuilder();
    private final XsltCompiler compiler = processor.newXsltCompiler();
    private final Map<String, XsltExecutable> sheets = new HashMap<>();
    private final Map<String, Schema> schemas = new HashMap<>();

    protected XsltExecutable sheet(String path) throws Exception {
        XsltExecutable exe = sheets.get(path);
        if (exe == null) {
            exe = compiler.compile(new StreamSource(new File(path)));
            sheets.put(path, exe);
        }
        return exe;
    }

    protected Schema schema(String path) throws Exception {
        Schema s = schemas.get(path);
        if (s == null) {
            s = SchemaFactory.newInstance(XMLConstants.W3C_XML_SCHEMA_NS_URI).newSchema(new File(path));
            schemas.put(path, s);
        }
        return s;
    }

    /** The answer to one request line, split on tabs; an exception becomes ERR. */
    protected abstract String answer(String[] request) throws Exception;

    protected final void serve() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        out.println("READY\t" + processor.getSaxonProductVersion() + "\t" + System.getProperty("java.version"));
        out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] request = line.split("\t");
            if (request[0].equals("QUIT")) {
                break;
            }
            String answer;
            try {
                answer = answer(request);
            } catch (Exception e) {
                String message = String.valueOf(e).replaceAll("\\s+", " ").trim();
                answer = "ERR\t" + (message.length() > 600 ? message.substring(0, 600) : message);
            }
            out.println(answer);
            out.flush();
        }
    }
}
