package sleeper.spark.bridge;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.spark.SparkConf;
import org.apache.spark.api.python.Py4JServer;
import org.apache.spark.api.python.PythonUtils;
import org.apache.spark.sql.classic.SparkSession;

/**
 * The Python side of a driver that has no Python driver process: a Spark Connect server, or a
 * JVM application. The log and the commit protocol are Python; where no Python driver has
 * connected its {@link FormatBridge}, this starts one Python process on the driver, as Spark's own
 * {@code PythonRunner} starts a Python application: a py4j gateway in this JVM, and Python given
 * its port and secret ({@code PYSPARK_GATEWAY_PORT}, {@code PYSPARK_GATEWAY_SECRET}), which
 * attaches to this JVM's SparkContext and connects the bridge (module
 * {@code sleeper_spark.spark.bridge.jvm_started}). So a classic session and a Connect server run one
 * design: the jar calls the bridge, whoever started the Python side.
 *
 * <p>One process per driver, started when the bridge is first needed and reused; started again
 * when it has died; stopped with the JVM (a shutdown hook, and the process exits by itself when
 * its gateway goes away). A process that does not connect within the timeout, or exits first, is
 * an error that names it and its last output, never a hang. A PySpark driver that has connected
 * its own bridge ({@code sleeper_spark.register}, which every helper call makes) needs none; the
 * session setting {@value #CONF}{@code =false} switches this off.
 */
public final class PythonSide {
    public static final String CONF = "spark.sleeper_spark.pythonSide";
    public static final String TIMEOUT_CONF = "spark.sleeper_spark.pythonSide.timeoutSeconds";
    /** The Python to start ({@code ss.configure_spark} sets it to the driver's own). */
    public static final String PYTHON_CONF = "spark.sleeper_spark.pythonSide.python";
    static final String MODULE = "sleeper_spark.spark.bridge.jvm_started";
    // Set by PySpark in the environment of a JVM that a Python driver launched.
    private static final String PYSPARK_DRIVER_MARK = "_PYSPARK_DRIVER_CONN_INFO_PATH";

    private static Py4JServer gateway;
    private static Process process;
    private static Path output;

    private PythonSide() {
    }

    /**
     * Whether this driver may start its Python side: unless switched off. A PySpark driver whose
     * Python code has not connected its own bridge (it never called into sleeper_spark) gets one
     * too, so that no statement needs a registration step first.
     */
    static boolean enabled(SparkSession spark) {
        return !spark.conf().get(CONF, "auto").trim().toLowerCase(Locale.ROOT).equals("false");
    }

    /** Whether a bridge this class's process connected is gone: the process has exited. */
    static synchronized boolean died() {
        return process != null && !process.isAlive();
    }

    /**
     * Starts the Python side (again, if it died) and waits until it has connected its bridge.
     * {@code what} names the work that needs it, for the error a failed start raises.
     */
    static synchronized void start(SparkSession spark, String what) {
        if (process != null && process.isAlive()) {
            return;
        }
        SparkConf conf = spark.sparkContext().getConf();
        if (gateway == null) {
            gateway = new Py4JServer(conf);
            gateway.start();
            Runtime.getRuntime().addShutdownHook(new Thread(PythonSide::stop, "sleeper-python-side-stop"));
        }
        String python = pythonExecutable(conf);
        deleteOutput();
        try {
            output = Files.createTempFile("sleeper-python-side-", ".log");
            ProcessBuilder builder = new ProcessBuilder(python, "-m", MODULE);
            Map<String, String> env = builder.environment();
            env.put("PYSPARK_GATEWAY_PORT", Integer.toString(gateway.getListeningPort()));
            env.put("PYSPARK_GATEWAY_SECRET", gateway.secret());
            env.remove("SPARK_CONNECT_MODE_ENABLED"); // the Python side is a classic driver of this JVM
            String sparkPath = PythonUtils.sparkPythonPath();
            String path = env.get("PYTHONPATH");
            env.put("PYTHONPATH", path == null || path.isEmpty() ? sparkPath : path + java.io.File.pathSeparator
                    + sparkPath);
            builder.redirectErrorStream(true).redirectOutput(output.toFile());
            process = builder.start();
        } catch (IOException error) {
            throw new IllegalStateException("sleeper_spark.errors.ConfigError: " + what + " needs sleeper_spark's "
                    + "Python side on the driver, and " + python + " could not be started (" + error.getMessage()
                    + "); set spark.pyspark.python to a Python that has sleeper_spark installed", error);
        }
        awaitConnection(conf, python, what);
    }

    private static void awaitConnection(SparkConf conf, String python, String what) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(conf.getLong(TIMEOUT_CONF, 120));
        while (!DriverSide.connected()) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                String state = process.isAlive() ? "did not connect in time" : "exited with code "
                        + process.exitValue();
                process.destroyForcibly();
                throw new IllegalStateException("sleeper_spark.errors.ConfigError: " + what + " needs sleeper_spark's "
                        + "Python side on the driver; " + python + " -m " + MODULE + " " + state + ". Its output: "
                        + lastLines(output) + ". Install sleeper-spark (the version of this jar) in that Python, or "
                        + "set spark.pyspark.python to one that has it");
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException interrupted) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while sleeper_spark's Python side started", interrupted);
            }
        }
    }

    /**
     * The Python the driver's own Python work would use: the one {@code ss.configure_spark} names,
     * a PySpark driver's own, then Spark's settings and its environment.
     */
    private static String pythonExecutable(SparkConf conf) {
        if (conf.contains(PYTHON_CONF)) {
            return conf.get(PYTHON_CONF);
        }
        String driver = pysparkDriverPython();
        if (driver != null) {
            return driver;
        }
        for (String key : new String[] {"spark.pyspark.driver.python", "spark.pyspark.python"}) {
            if (conf.contains(key)) {
                return conf.get(key);
            }
        }
        for (String variable : new String[] {"PYSPARK_DRIVER_PYTHON", "PYSPARK_PYTHON"}) {
            String value = System.getenv(variable);
            if (value != null && !value.isEmpty()) {
                return value;
            }
        }
        return "python3";
    }

    /**
     * The Python of the PySpark driver that launched this JVM (Spark's launcher scripts exec the
     * JVM, so it is the parent process), as that process was started: the path it was given, not
     * the file it links to, so that a virtual environment's Python stays in its environment.
     */
    private static String pysparkDriverPython() {
        if (System.getenv(PYSPARK_DRIVER_MARK) == null) {
            return null;
        }
        long parent = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
        try {
            byte[] commandLine = Files.readAllBytes(Path.of("/proc", Long.toString(parent), "cmdline"));
            int end = 0;
            while (end < commandLine.length && commandLine[end] != 0) {
                end++;
            }
            String program = new String(commandLine, 0, end, StandardCharsets.UTF_8);
            if (!program.contains("python")) {
                return null;
            }
            Path path = Path.of(program);
            if (!path.isAbsolute() && program.contains("/")) {
                path = Path.of("/proc", Long.toString(parent), "cwd").toRealPath().resolve(path);
            }
            return path.toString();
        } catch (IOException | RuntimeException unknown) {
            return null; // not Linux, or the parent is gone: Spark's settings decide
        }
    }

    private static String lastLines(Path file) {
        try {
            List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
            List<String> tail = new ArrayList<>(lines.subList(Math.max(0, lines.size() - 15), lines.size()));
            return tail.isEmpty() ? "(none)" : String.join("\n", tail);
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
    }

    private static synchronized void stop() {
        if (process != null) {
            process.destroy();
        }
        if (gateway != null) {
            gateway.shutdown();
        }
        deleteOutput();
    }

    /** The output of the process before: kept while it runs, for the error a failed start raises. */
    private static void deleteOutput() {
        if (output != null) {
            try {
                Files.deleteIfExists(output);
            } catch (IOException ignored) {
                // a temporary file: the operating system's cleanup removes it
            }
        }
    }
}
