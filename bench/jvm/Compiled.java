// What the JVM harnesses (ValidateHarness, VerdictHarness) share: one Saxon-HE processor, and the stylesheets and
// XSDs each compiles, cached by path for the life of the process. Compiled together with either harness
// (bench_jvm.compile_harness).

import java.io.File;
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
}
