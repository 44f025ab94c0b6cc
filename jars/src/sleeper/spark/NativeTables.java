package sleeper.spark;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.util.AccumulatorContext;
import org.apache.spark.util.CollectionAccumulator;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import sleeper.spark.bridge.DriverSide;
import sleeper.spark.bridge.FormatBridge;
import sleeper.spark.index.SleeperFileIndex;

/**
 * What the Python side calls through py4j: a DataFrame over one table version that Spark reads
 * with its own Parquet reader (vectorised, column pruning, row-group skipping).
 */
public final class NativeTables {
    private NativeTables() {
    }

    /**
     * A DataFrame over the files listed in {@code manifestFile} (see {@code sleeper.spark.index.FileManifest}).
     *
     * @param schemaJson the table's columns as Spark's schema JSON, partition columns included
     * @param partitionColumns the partition columns in path order
     */
    public static Dataset<Row> dataFrame(SparkSession spark, String description, String rootUri,
                                         String manifestFile, String schemaJson, String[] partitionColumns)
            throws IOException {
        return spark.baseRelationToDataFrame(relation(spark, description, rootUri, manifestFile, schemaJson,
                partitionColumns));
    }

    /** The relation {@link #dataFrame} reads: also what {@code format("sleeper")} gives Spark for a read. */
    public static HadoopFsRelation relation(SparkSession spark, String description, String rootUri, String manifestFile,
                                     String schemaJson, String[] partitionColumns) throws IOException {
        StructType dataSchema = (StructType) DataType.fromJson(schemaJson);
        List<StructField> partitionFields = new ArrayList<>();
        for (String column : partitionColumns) {
            partitionFields.add(dataSchema.apply(column));
        }
        StructType partitionSchema = new StructType(partitionFields.toArray(new StructField[0]));
        String timeZone = spark.sessionState().conf().sessionLocalTimeZone();
        SleeperFileIndex index = SleeperFileIndex.read(description, rootUri, partitionSchema, manifestFile, timeZone);
        // Data files keep their partition columns, so the data schema is the whole table; Spark
        // takes those columns' values from the index and reads the rest from the files.
        return new HadoopFsRelation(index, partitionSchema, dataSchema, Option.empty(), new SleeperParquetFormat(),
                readOptions(dataSchema), spark);
    }

    /**
     * Options for Spark's Parquet reader (they reach parquet-mr through the Hadoop conf).
     *
     * <p>parquet-mr's row-group and page filters get floats wrong: footers that pyarrow writes keep
     * NaN out of a float column's min/max, so the statistics and column-index filters drop a row
     * group whose NaN rows match ({@code x = NaN}, {@code x > 1}); and every one of its filters
     * (statistics, column index, dictionary, bloom) compares doubles with {@code Double.compare}
     * or {@code Double.equals}, for which -0.0 and 0.0 differ, so a row group holding -0.0 but not
     * 0.0 is dropped for {@code d = 0.0} and {@code d = -0.0}. Plain {@code spark.read.parquet}
     * gives wrong rows on such files. So for tables with float columns, parquet-mr skips no row
     * group or page at all; whole files still are skipped, by the index, which compares floats
     * the way Spark does.
     */
    private static scala.collection.immutable.Map<String, String> readOptions(StructType dataSchema) {
        scala.collection.immutable.HashMap<String, String> options = new scala.collection.immutable.HashMap<>();
        if (hasFloats(dataSchema)) {
            options = options.updated("parquet.filter.stats.enabled", "false")
                    .updated("parquet.filter.columnindex.enabled", "false")
                    .updated("parquet.filter.dictionary.enabled", "false")
                    .updated("parquet.filter.bloom.enabled", "false");
        }
        return options;
    }

    private static boolean hasFloats(DataType type) {
        if (type instanceof FloatType || type instanceof DoubleType) {
            return true;
        } else if (type instanceof StructType struct) {
            for (StructField field : struct.fields()) {
                if (hasFloats(field.dataType())) {
                    return true;
                }
            }
        } else if (type instanceof ArrayType array) {
            return hasFloats(array.elementType());
        } else if (type instanceof MapType map) {
            return hasFloats(map.keyType()) || hasFloats(map.valueType());
        }
        return false;
    }

    /** The sleeper file index a DataFrame reads through, or null: lets tests and benchmarks see what was listed. */
    public static SleeperFileIndex indexOf(Dataset<?> df) {
        for (LogicalPlan leaf : CollectionConverters.asJava(df.queryExecution().analyzed().collectLeaves())) {
            if (leaf instanceof LogicalRelation relation && relation.relation() instanceof HadoopFsRelation fs
                    && fs.location() instanceof SleeperFileIndex index) {
                return index;
            }
        }
        return null;
    }

    /** Whether Hadoop has a file system for {@code scheme} in this session (e.g. s3a needs hadoop-aws). */
    public static boolean hasFileSystem(SparkSession spark, String scheme) {
        Configuration conf = spark.sessionState().newHadoopConf();
        try {
            FileSystem.getFileSystemClass(scheme, conf);
            return true;
        } catch (IOException | RuntimeException | LinkageError error) {
            return false;
        }
    }

    /**
     * A new accumulator for the facts of a write's files (see {@link SleeperParquetFormat#FACTS_OPTION}).
     *
     * <p>Unnamed: Spark copies a named accumulator's whole value into the info of every task that
     * updates it, for its status listener to turn into a string, so a write of n files built the
     * text of all the facts so far n times, quadratic in the files, on the driver that runs the
     * tasks' neighbours too (at 1,879 files a write ran 5-10 % slower than Spark's own, and the
     * next write paid for its garbage); an unnamed one is only merged.
     */
    public static CollectionAccumulator<String> factsAccumulator(SparkSession spark) {
        CollectionAccumulator<String> facts = new CollectionAccumulator<>();
        spark.sparkContext().register(facts);
        return facts;
    }

    /**
     * The facts the successful tasks added, one JSON object a line, written to a temporary file
     * whose path this returns (the caller reads and deletes it); the accumulator is forgotten. A
     * file rather than the text itself: py4j sends a long answer in pieces, and the last one waits
     * for the first's delayed acknowledgement, about 40 ms a write.
     */
    public static String takeFactsFile(CollectionAccumulator<String> facts) throws IOException {
        Path file = Files.createTempFile("sleeper-facts-", ".jsonl");
        try {
            Files.writeString(file, String.join("\n", facts.value()), StandardCharsets.UTF_8);
        } catch (IOException | RuntimeException error) {
            Files.deleteIfExists(file);
            throw error;
        }
        AccumulatorContext.remove(facts.id());
        return file.toString();
    }

    /**
     * The session's {@code spark.sleeper.*} settings as one JSON object: py4j hands a whole
     * session conf over an entry a round trip, about 9 ms a helper call.
     */
    public static String sessionConf(SparkSession spark) {
        return DriverSide.sessionConf(spark);
    }

    /** Connects the Python driver's side of {@code format("sleeper")} (see {@link SleeperSource}). */
    public static void connectFormat(FormatBridge driverSide) {
        DriverSide.connect(driverSide);
    }

    /** Whether a Python driver has connected its side of {@code format("sleeper")} in this JVM. */
    public static boolean formatConnected() {
        return DriverSide.connected();
    }

    /** The version of this jar, so that the Python side can refuse a stale one. */
    public static String version() {
        Package own = NativeTables.class.getPackage();
        String version = own == null ? null : own.getImplementationVersion();
        return version == null ? "unknown" : version;
    }
}
