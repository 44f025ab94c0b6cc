package sleeper.spark.bridge;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import scala.jdk.javaapi.CollectionConverters;
import sleeper.spark.NativeTables;

/**
 * The driver's Python side as the JVM classes reach it: the one {@link FormatBridge} that
 * {@code format("sleeper")} and the SQL catalog share (connected by the Python driver, or by the
 * Python side this driver started, see {@link PythonSide}), and the way its JSON answers are read
 * (a sleeper_spark error comes back as an exception whose message starts
 * {@code sleeper_spark.errors.<name>: }).
 */
public final class DriverSide {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SESSION_PREFIX = "spark.sleeper.";
    private static volatile FormatBridge bridge;
    // Every bridge this JVM has dropped, kept reachable for the JVM's life. py4j's proxy of a Python
    // object tells the Python side to forget that object when the proxy is collected, by its object
    // id, through whichever Python side is connected then; a restarted Python side numbers its
    // objects from the start again, so collecting the dead side's proxy would make the live side
    // forget its own bridge ("Object ID unknown" on the next call).
    private static final List<FormatBridge> RETIRED = new ArrayList<>();

    private DriverSide() {
    }

    /** Connects the Python driver's side; the last one connected wins (one driver per JVM). */
    public static synchronized void connect(FormatBridge driverSide) {
        retire();
        bridge = driverSide;
    }

    /** Drops the connected bridge, keeping its proxy (see {@link #RETIRED}). */
    private static synchronized void retire() {
        if (bridge != null) {
            RETIRED.add(bridge);
            bridge = null;
        }
    }

    /** Whether a Python driver has connected its side in this JVM. */
    public static boolean connected() {
        return bridge != null;
    }

    /** The bridge as connected now, without starting anything: null where none is. */
    public static FormatBridge current() {
        return bridge;
    }

    /**
     * The connected bridge; where none is (a Spark Connect server, a JVM application, a PySpark
     * driver whose code has not called sleeper_spark), this driver's own Python side is started
     * first (see {@link PythonSide}). Null where that is switched off and nothing has connected.
     */
    public static FormatBridge connectedBridge(SparkSession spark, String what) {
        if (PythonSide.died()) {
            retire(); // its process is gone: the bridge would fail every call
        }
        if (bridge == null && PythonSide.enabled(spark)) {
            PythonSide.start(spark, what);
        }
        return bridge;
    }

    /** The connected bridge; a clear error naming {@code what} when no Python driver has connected. */
    public static FormatBridge bridge(String what) {
        FormatBridge driverSide = connectedBridge(SparkSession.active(), what);
        if (driverSide == null) {
            throw new IllegalArgumentException("sleeper_spark.errors.ConfigError: " + what + " needs sleeper_spark's "
                    + "Python side, which this session switched off (" + PythonSide.CONF + "=false): call "
                    + "sleeper_spark.register(spark) in the Python driver first, or leave the setting out");
        }
        return driverSide;
    }

    /** The bridge's answer as JSON, or the sleeper_spark error it reports raised as an exception, message first. */
    public static JsonNode answer(String json) {
        JsonNode node;
        try {
            node = JSON.readTree(json);
        } catch (IOException error) {
            throw new IllegalStateException("the sleeper_spark driver side answered with something other than JSON: "
                    + json, error);
        }
        JsonNode error = node.get("error");
        if (error != null) {
            throw new IllegalArgumentException("sleeper_spark.errors." + error.asText() + ": "
                    + node.path("message").asText());
        }
        JsonNode failure = node.get("failure");
        if (failure != null) { // anything else the driver side raised, Spark's own errors included
            throw new IllegalStateException(failure.asText());
        }
        return node;
    }

    /**
     * The relation over the files of the version a read with {@code options} selects, asked of the
     * driver's Python side: what {@code format("sleeper")} and the SQL catalog's tables read.
     */
    public static HadoopFsRelation handOver(SparkSession spark, Map<String, String> options, String what) {
        FormatBridge driverSide = bridge(what);
        JsonNode files = answer(driverSide.handOver(spark, json(options), sessionConf(spark)));
        Path manifest = Path.of(files.get("manifest").asText());
        try {
            String[] partitionColumns = strings(files.get("partitionColumns"));
            return NativeTables.relation(spark, files.get("description").asText(), files.get("root").asText(),
                    manifest.toString(), files.get("schema").asText(), partitionColumns);
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        } finally {
            try {
                Files.deleteIfExists(manifest);
            } catch (IOException ignored) {
                // a temporary file: the operating system's cleanup removes it
            }
        }
    }

    /** The session's {@code spark.sleeper.*} settings, keys as set, as the JSON object the bridge takes. */
    public static String sessionConf(SparkSession spark) {
        Map<String, String> settings = new HashMap<>();
        CollectionConverters.asJava(spark.conf().getAll()).forEach((key, value) -> {
            if (key.toLowerCase(Locale.ROOT).startsWith(SESSION_PREFIX)) {
                settings.put(key, value);
            }
        });
        return json(settings);
    }

    /** A map of strings as one JSON object. */
    public static String json(Map<String, String> map) {
        try {
            return JSON.writeValueAsString(map);
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
    }

    /** A JSON array of strings (the bridge's lists of column names) as a Java array. */
    public static String[] strings(JsonNode array) {
        String[] values = new String[array.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = array.get(i).asText();
        }
        return values;
    }
}
