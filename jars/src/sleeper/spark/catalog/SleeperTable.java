package sleeper.spark.catalog;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.catalog.CatalogV2Util;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.ClusterByTransform;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import sleeper.spark.SleeperSource;
import sleeper.spark.bridge.DriverSide;

/**
 * One sleeper table as the SQL catalog gives it to Spark: read with Spark's own Parquet scan over
 * the files of one version (asked of the driver's Python side when a query plans its scan, so the
 * index prunes per query), written through the same native write and commit as
 * {@code format("sleeper")}. A table loaded at a version ({@code VERSION AS OF}) is read only.
 */
final class SleeperTable implements SupportsRead, SupportsWrite {
    private static final String CLUSTER_BY = "cluster_by";
    private static final String CLUSTERING_PROPERTY = "clustering.columns";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Set<TableCapability> READ_ONLY = EnumSet.of(TableCapability.BATCH_READ);
    private static final Set<TableCapability> READ_WRITE = EnumSet.of(TableCapability.BATCH_READ,
            TableCapability.V1_BATCH_WRITE, TableCapability.TRUNCATE, TableCapability.OVERWRITE_BY_FILTER,
            TableCapability.AUTOMATIC_SCHEMA_EVOLUTION);

    private final CatalogOfTables catalog;
    private final Identifier ident;
    private final String table;
    private final StructType schema;
    private final String[] partitionColumns;
    private final Map<String, String> properties;
    private final String pinnedVersion; // null: the current version, writable
    private final boolean nativeRead; // false: Spark's Hadoop cannot open the table, the Python source reads it

    private SleeperTable(CatalogOfTables catalog, Identifier ident, String table, StructType schema,
                         String[] partitionColumns, Map<String, String> properties, String pinnedVersion,
                         boolean nativeRead) {
        this.catalog = catalog;
        this.ident = ident;
        this.table = table;
        this.schema = schema;
        this.partitionColumns = partitionColumns;
        this.properties = properties;
        this.pinnedVersion = pinnedVersion;
        this.nativeRead = nativeRead;
    }

    /** The table the Python side described: {@code {"schema", "partitionColumns", "properties", "version", "pinned"}}. */
    static SleeperTable of(CatalogOfTables catalog, Identifier ident, String table, JsonNode answer) {
        StructType schema = (StructType) DataType.fromJson(answer.get("schema").asText());
        String[] partitionColumns = DriverSide.strings(answer.get("partitionColumns"));
        Map<String, String> properties = new HashMap<>();
        for (Map.Entry<String, JsonNode> property : answer.get("properties").properties()) {
            properties.put(property.getKey(), property.getValue().asText());
        }
        String pinned = answer.path("pinned").asBoolean(false) ? answer.get("version").asText() : null;
        return new SleeperTable(catalog, ident, table, schema, partitionColumns, properties, pinned,
                answer.path("native").asBoolean(false));
    }

    CatalogOfTables catalog() {
        return catalog;
    }

    String[] partitionColumns() {
        return partitionColumns.clone();
    }

    /** The table's name in its sleeper catalog ({@code db.t}). */
    String tableName() {
        return table;
    }

    /** Refuses a change of a table loaded at a version ({@code VERSION AS OF}): it is read only. */
    void checkWritable(String statement) {
        if (pinnedVersion != null) {
            throw new UnsupportedOperationException("sleeper_spark.errors.ConfigError: " + name() + " at version "
                    + pinnedVersion + " is read only; " + statement + " changes the current version: leave out "
                    + "VERSION AS OF / TIMESTAMP AS OF");
        }
    }

    @Override
    public String name() {
        return catalog.name() + "." + ident.toString();
    }

    @Override
    public Column[] columns() {
        return CatalogV2Util.structTypeToV2Columns(schema, false);
    }

    /**
     * The partition columns, then the clustering columns as Spark's {@code CLUSTER BY} transform (what
     * {@code DESCRIBE TABLE EXTENDED} shows under {@code # Clustering Information}).
     */
    @Override
    public Transform[] partitioning() {
        String[] clustering = clusteringColumns(properties);
        Transform[] transforms = new Transform[partitionColumns.length + (clustering.length > 0 ? 1 : 0)];
        for (int i = 0; i < partitionColumns.length; i++) {
            transforms[i] = Expressions.identity(partitionColumns[i]);
        }
        if (clustering.length > 0) {
            List<NamedReference> columns = new ArrayList<>();
            for (String column : clustering) {
                columns.add(Expressions.column(column));
            }
            transforms[partitionColumns.length] = new ClusterByTransform(
                    CollectionConverters.asScala(columns).toList());
        }
        return transforms;
    }

    /** Whether a transform is {@code CLUSTER BY}'s, which names clustering columns rather than partitions. */
    static boolean isClusterBy(Transform transform) {
        return CLUSTER_BY.equals(transform.name());
    }

    /** The names of a {@code CLUSTER BY} transform's columns. */
    static String[] clusterByColumns(Transform transform) {
        NamedReference[] references = transform.references();
        String[] columns = new String[references.length];
        for (int i = 0; i < columns.length; i++) {
            columns[i] = String.join(".", references[i].fieldNames());
        }
        return columns;
    }

    /** The clustering columns of the table's {@code clustering.columns} property (a JSON list); none if unset. */
    static String[] clusteringColumns(Map<String, String> properties) {
        String text = properties.get(CLUSTERING_PROPERTY);
        if (text == null || text.isEmpty()) {
            return new String[0];
        }
        try {
            JsonNode list = JSON.readTree(text);
            return list.isArray() ? DriverSide.strings(list) : new String[0];
        } catch (JsonProcessingException unreadable) {
            return new String[0]; // not written by sleeper: the Python side treats it as unclustered too
        }
    }

    @Override
    public Map<String, String> properties() {
        return properties;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return pinnedVersion == null ? READ_WRITE : READ_ONLY;
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        SparkSession spark = SparkSession.active();
        Map<String, String> read = readOptions(options);
        if (!nativeRead) {
            // The same fallback as format("sleeper"): the Python data source reads the version.
            Table python = new SleeperSource().getTable(schema, partitioning(), read);
            return ((SupportsRead) python).newScanBuilder(new CaseInsensitiveStringMap(read));
        }
        HadoopFsRelation relation = DriverSide.handOver(spark, read, "a read of a SQL catalog's table");
        Map<String, String> scanOptions = new HashMap<>(CollectionConverters.asJava(relation.options()));
        scanOptions.putAll(options.asCaseSensitiveMap());
        return new SleeperScanBuilder(spark.sqlContext().sparkSession(), new CatalogFileIndex(spark, relation.location()),
                relation.schema(), relation.dataSchema(), new CaseInsensitiveStringMap(scanOptions));
    }

    /**
     * {@code relation}'s read as {@code format("sleeper")} gives it to Spark (see {@link CatalogReadRule}),
     * its columns those of {@code relation}; null where the V2 scan must read it instead.
     */
    LogicalPlan fileSourceRead(DataSourceV2Relation relation) {
        if (!nativeRead) {
            return null;
        }
        SparkSession spark = SparkSession.active();
        HadoopFsRelation files = DriverSide.handOver(spark, readOptions(relation.options()),
                "a read of a SQL catalog's table");
        Seq<AttributeReference> output = relation.output();
        StructField[] fields = files.schema().fields();
        if (fields.length != output.size()) {
            return null;
        }
        for (int i = 0; i < fields.length; i++) {
            AttributeReference column = output.apply(i);
            if (!column.name().equals(fields[i].name()) || !column.dataType().equals(fields[i].dataType())) {
                return null; // the table changed since the query was analyzed
            }
        }
        return new LogicalRelation(files, output, Option.empty(), false, Option.empty());
    }

    private Map<String, String> readOptions(CaseInsensitiveStringMap options) {
        Map<String, String> read = tableOptions();
        read.putAll(options.asCaseSensitiveMap());
        if (pinnedVersion != null) {
            read.put("versionAsOf", pinnedVersion);
        }
        return read;
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        Map<String, String> write = tableOptions();
        write.putAll(info.options().asCaseSensitiveMap());
        return new SleeperWriteBuilder(table, write);
    }

    /** The options a {@code format("sleeper")} read or write of this table takes: the catalog's, and its name. */
    private Map<String, String> tableOptions() {
        Map<String, String> options = new HashMap<>(catalog.options());
        options.put("path", table);
        return options;
    }
}
