package sleeper.spark.bridge;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.classic.SparkSession;

/**
 * What the Python driver does for {@code format("sleeper")}: the log and the commit protocol
 * stay in Python, and the JVM source calls them through py4j's callback server (the mechanism
 * of PySpark's {@code foreachBatch}).
 *
 * <p>Each method gets the read's or write's options and the session's {@code spark.sleeper.*}
 * settings as two JSON objects of strings (one string crosses py4j in one call, where a map
 * costs a call per entry), and answers with one JSON object. A failure is {@code {"error": <name>,
 * "message": <text>}}, where the name is a sleeper_spark error class; {@link DriverSide#answer}
 * turns it into an exception whose message starts {@code sleeper_spark.errors.<name>: }. Any
 * other failure is {@code {"failure": <text>}}.
 */
public interface FormatBridge {
    /**
     * How a read or write with these options runs: {@code {"native": true|false, "schema": <Spark
     * schema JSON, or null when the table does not exist>}}, and for a table that does not exist
     * {@code "missing": <why>}. Not native: the Python data source runs it (a session switched off
     * the jar, a table Spark's reader cannot read).
     */
    String route(SparkSession spark, String options, String sessionConf);

    /**
     * The files of the version a read selects: {@code {"description", "root", "manifest",
     * "schema", "partitionColumns"}}, as {@link sleeper.spark.NativeTables#relation} takes them. The manifest
     * is a temporary file that the caller deletes once it is read.
     */
    String handOver(SparkSession spark, String options, String sessionConf);

    /** Writes {@code data} as one snapshot with Spark's own Parquet writer: {@code {"version": n}} or {@code {}}. */
    String write(SparkSession spark, Dataset<Row> data, String mode, String options, String sessionConf);

    /**
     * What the SQL catalog asks of the table catalog behind it: {@code request} is a JSON object
     * with {@code "op"} (load, list, namespaces, create, drop) and the catalog's options under
     * {@code "options"}; the answer is one JSON object (see {@code sleeper_spark.spark.sql.sql_catalog}).
     */
    String catalog(SparkSession spark, String request, String sessionConf);

    /**
     * A SQL catalog's {@code MERGE INTO}, {@code UPDATE} or {@code DELETE FROM}: {@code request}
     * is a JSON object with {@code "op"} (merge, update, delete), the table, the catalog's options
     * and the statement's conditions and values as Spark SQL; {@code source} holds a merge's
     * source rows (null otherwise). The answer is rows, as a procedure's.
     */
    String changeRows(SparkSession spark, String request, Dataset<Row> source, String sessionConf);

    /**
     * The changes of a table of the SQL catalog: {@code request} is the {@code "changelog"} request
     * of {@code SleeperCatalog.loadChangelog} (the table, its range, the catalog's options). The
     * answer is a DataFrame over Spark's own reader whose columns are those the changelog
     * described, or, when it cannot be made, the error as JSON text (as the other methods answer).
     */
    Object changes(SparkSession spark, String request, String sessionConf);

    /**
     * Registers the sleeper Python data source (as {@value sleeper.spark.SleeperSource#PYTHON_NAME}) in {@code spark},
     * where the Python driver did not (a Spark Connect session whose client did not call
     * {@code sleeper_spark.register}): {@code {}}, or an error as the other methods answer.
     */
    String register(SparkSession spark);
}
