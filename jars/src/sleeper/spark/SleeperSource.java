package sleeper.spark;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.CreatableRelationProvider;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.sources.RelationProvider;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.jdk.javaapi.CollectionConverters;
import sleeper.spark.bridge.DriverSide;
import sleeper.spark.catalog.SessionCatalogOfTables;
import sleeper.spark.bridge.FormatBridge;

/**
 * {@code format("sleeper")} in a session that has the jar.
 *
 * <p>Spark finds a source by its short name in the jars before it looks at Python data sources,
 * so this class answers every {@code format("sleeper")}. Where the Python driver has connected
 * its {@link FormatBridge} (``sleeper_spark.register``, which every helper call makes), or where
 * the driver started its own Python side (a Spark Connect server, see {@link sleeper.spark.bridge.PythonSide}), batch
 * reads and writes run on Spark's own Parquet reader and writer: the table it gives Spark lacks
 * the batch capabilities, so Spark uses the V1 side, {@link #createRelation}, which asks the
 * driver's Python side for the version's files (a file index that prunes per query) or to
 * commit the write. Everything else (streaming, a session that switched the jar off, a table
 * Spark's reader cannot read) goes to the Python data source (registered as {@value #PYTHON_NAME}), to which this class hands the work
 * unchanged.
 */
public final class SleeperSource implements DataSourceRegister, TableProvider, RelationProvider,
        CreatableRelationProvider {
    public static final String SHORT_NAME = "sleeper";
    /**
     * The name the Python data source is registered under where this jar is loaded: Spark refuses
     * to register a Python source under a name that a jar's source already has.
     */
    public static final String PYTHON_NAME = "sleeper_python";

    private PythonDataSourceV2 python;
    // Spark asks one instance for the schema and then the table of one read: one route answers both.
    private Map<String, String> routedOptions;
    private JsonNode route;

    @Override
    public String shortName() {
        return SHORT_NAME;
    }

    @Override
    public boolean supportsExternalMetadata() {
        return true; // a write hands over its data's schema, so nothing is inferred for it
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        JsonNode routed = route(options.asCaseSensitiveMap());
        if (routed != null && routed.path("native").asBoolean(false) && routed.hasNonNull("missing")) {
            // Only reads (and streaming writes, which need the table) ask for a schema.
            throw new IllegalArgumentException("sleeper_spark.errors.TableNotFoundError: "
                    + routed.get("missing").asText());
        }
        JsonNode schema = routed == null ? null : routed.get("schema");
        if (schema == null || schema.isNull()) {
            return python().inferSchema(options);
        }
        return (StructType) DataType.fromJson(schema.asText());
    }

    @Override
    public Transform[] inferPartitioning(CaseInsensitiveStringMap options) {
        return new Transform[0]; // partition columns are the table's business, not Spark's
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        if (properties.containsKey(TableCatalog.PROP_PROVIDER)) {
            // A table of Spark's session catalog, whose entry names this source as its provider.
            return sessionEntry(schema, partitioning);
        }
        Table table = python().getTable(schema, partitioning, properties);
        JsonNode routed = route(properties);
        return routed != null && routed.path("native").asBoolean(false) ? new StreamingOnlyTable(table) : table;
    }

    /**
     * What Spark's own session catalog gets for a table of provider {@code sleeper}: with
     * {@link SleeperSessionCatalog} in place, only the entry's columns, which Spark checks while it
     * adds the entry (the table itself is served by that catalog); without it, an error naming
     * the setting to add, before the metastore records anything.
     */
    private static Table sessionEntry(StructType schema, Transform[] partitioning) {
        CatalogPlugin session = SparkSession.active().sessionState().catalogManager().v2SessionCatalog();
        if (!(session instanceof SessionCatalogOfTables)) {
            throw new IllegalArgumentException("sleeper_spark.errors.ConfigError: a sleeper table in Spark's session "
                    + "catalog (saveAsTable, CREATE TABLE ... USING sleeper, spark.table of one) needs the sleeper "
                    + "session catalog: set spark.sql.catalog.spark_catalog=" + SleeperSessionCatalog.class.getName()
                    + " with the sleeper catalog's options as spark.sql.catalog.spark_catalog.<key> (in Python: "
                    + "ss.configure_spark(builder, session_catalog=catalog)); or use a sleeper catalog of its own "
                    + "name (spark.sql.catalog.lake=" + SleeperCatalog.class.getName() + ")");
        }
        return new EntryColumns(schema, partitioning);
    }

    /** A batch read: Spark's Parquet reader over a file index of the version the options select. */
    @Override
    public BaseRelation createRelation(SQLContext sqlContext, scala.collection.immutable.Map<String, String> parameters) {
        return DriverSide.handOver((SparkSession) sqlContext.sparkSession(), CollectionConverters.asJava(parameters),
                "a read");
    }

    /** A batch write: Spark's Parquet writer, then one commit, both run by the driver's Python side. */
    @Override
    public BaseRelation createRelation(SQLContext sqlContext, SaveMode mode,
                                       scala.collection.immutable.Map<String, String> parameters, Dataset<Row> data) {
        SparkSession spark = (SparkSession) sqlContext.sparkSession();
        FormatBridge driverSide = DriverSide.bridge("a write");
        DriverSide.answer(driverSide.write(spark, data, mode.name(),
                DriverSide.json(CollectionConverters.asJava(parameters)), DriverSide.sessionConf(spark)));
        return new WrittenRelation(sqlContext, data.schema());
    }

    private JsonNode route(Map<String, String> options) {
        FormatBridge driverSide = DriverSide.connectedBridge(SparkSession.active(),
                "a read or write of format(\"sleeper\")");
        if (driverSide == null) {
            return null;
        }
        if (route == null || !Objects.equals(routedOptions, options)) {
            SparkSession spark = SparkSession.active();
            route = DriverSide.answer(driverSide.route(spark, DriverSide.json(options), DriverSide.sessionConf(spark)));
            routedOptions = new HashMap<>(options);
        }
        return route;
    }

    private PythonDataSourceV2 python() {
        if (python == null) {
            SparkSession spark = SparkSession.active();
            if (!spark.sessionState().dataSourceManager().dataSourceExists(PYTHON_NAME)) {
                // A session whose Python code registered nothing (a Connect client's, a JVM job's, a
                // notebook's first statement): the driver's Python side registers it, started if need be.
                FormatBridge driverSide = DriverSide.connectedBridge(spark, "format(\"sleeper\")");
                if (driverSide != null) {
                    DriverSide.answer(driverSide.register(spark));
                }
            }
            if (!spark.sessionState().dataSourceManager().dataSourceExists(PYTHON_NAME)) {
                throw new IllegalArgumentException("sleeper_spark.errors.ConfigError: the sleeper data source is not "
                        + "registered in this session, and its Python side is switched off ("
                        + "spark.sleeper_spark.pythonSide=false): call sleeper_spark.register(spark) first");
            }
            python = new PythonDataSourceV2();
            python.setShortName(PYTHON_NAME);
        }
        return python;
    }

    /** A session-catalog entry's columns as Spark checks them while it adds the entry: nothing to read or write. */
    private record EntryColumns(StructType entrySchema, Transform[] partitioning) implements Table {
        @Override
        public String name() {
            return "sleeper table entry";
        }

        @Override
        public org.apache.spark.sql.connector.catalog.Column[] columns() {
            return org.apache.spark.sql.connector.catalog.CatalogV2Util.structTypeToV2Columns(entrySchema, false);
        }

        @Override
        public Set<TableCapability> capabilities() {
            return Set.of();
        }
    }

    /** What a write returns to Spark: the written data's schema, for the cache Spark refreshes after an overwrite. */
    private static final class WrittenRelation extends BaseRelation {
        private final SQLContext sqlContext;
        private final StructType schema;

        WrittenRelation(SQLContext sqlContext, StructType schema) {
            this.sqlContext = sqlContext;
            this.schema = schema;
        }

        @Override
        public SQLContext sqlContext() {
            return sqlContext;
        }

        @Override
        public StructType schema() {
            return schema;
        }
    }
}
