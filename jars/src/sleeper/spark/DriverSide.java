package sleeper.spark;

import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;

/**
 * The driver's Python side as the JVM classes outside this package reach it: the one
 * {@link FormatBridge} that {@code format("sleeper")} and the SQL catalog share, and the way
 * its JSON answers are read (a sleeper_spark error comes back as an exception whose message
 * starts {@code sleeper_spark.errors.<name>: }).
 */
public final class DriverSide {
    private DriverSide() {
    }

    /** The connected bridge; a clear error naming {@code what} when no Python driver has connected. */
    public static FormatBridge bridge(String what) {
        return SleeperSource.requireBridge(what);
    }

    /** The bridge's answer as JSON, or the error it reports raised as an exception. */
    public static JsonNode answer(String json) {
        return SleeperSource.answer(json);
    }

    /** The relation over the files of the version a read with {@code options} selects (see {@code handOver}). */
    public static HadoopFsRelation handOver(SparkSession spark, Map<String, String> options, String what) {
        return SleeperSource.handOver(spark, options, what);
    }

    /** The session's {@code spark.sleeper.*} settings as the bridge takes them. */
    public static String sessionConf(SparkSession spark) {
        return SleeperSource.sessionConf(spark);
    }

    /** A map of strings as one JSON object. */
    public static String json(Map<String, String> map) {
        return SleeperSource.json(map);
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
