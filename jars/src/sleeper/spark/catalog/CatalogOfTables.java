package sleeper.spark.catalog;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.catalog.CatalogV2Util;
import org.apache.spark.sql.connector.catalog.Changelog;
import org.apache.spark.sql.connector.catalog.ChangelogContext;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.NamespaceChange;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.StagingTableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.TableInfo;
import org.apache.spark.sql.connector.expressions.IdentityTransform;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import sleeper.spark.bridge.DriverSide;
import sleeper.spark.bridge.FormatBridge;

/**
 * The tables of one sleeper_spark catalog as a Spark catalog, configured under the name of its
 * public class {@link sleeper.spark.SleeperCatalog}:
 * {@code spark.sql.catalog.<name>=sleeper.spark.SleeperCatalog}, with the catalog's options (those
 * of {@code Catalog.options()}) as {@code spark.sql.catalog.<name>.<key>}.
 *
 * <p>A namespace is a prefix of a table's name: {@code lake.sales.orders} is the table
 * {@code sales.orders}, and {@code lake.a.b.t} is {@code a.b.t}. A namespace exists once it is
 * created (the registry records its comment and properties) or while a table's name has it as a
 * prefix. The log, the commit protocol and the catalog's registry stay in Python: every call
 * here is one request to the driver's Python side through the bridge {@code format("sleeper")} uses.
 */
public class CatalogOfTables implements StagingTableCatalog, SupportsNamespaces, ProcedureCatalog {
    private static final ObjectMapper JSON = new ObjectMapper();

    private String name;
    private Map<String, String> options;

    @Override
    public void initialize(String catalogName, CaseInsensitiveStringMap catalogOptions) {
        this.name = catalogName;
        this.options = new HashMap<>(catalogOptions.asCaseSensitiveMap());
    }

    @Override
    public String name() {
        return name;
    }

    /** The catalog's options, as a {@code format("sleeper")} read or write of its tables takes them. */
    Map<String, String> options() {
        return options;
    }

    @Override
    public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
        ObjectNode request = request("list");
        request.set("namespace", JSON.valueToTree(namespace));
        JsonNode answer = call(request);
        if (!answer.path("exists").asBoolean(true)) {
            throw new NoSuchNamespaceException(namespace);
        }
        List<Identifier> tables = new ArrayList<>();
        for (JsonNode table : answer.get("tables")) {
            tables.add(TableNames.identifier(table.asText()));
        }
        return tables.toArray(new Identifier[0]);
    }

    @Override
    public Table loadTable(Identifier ident) throws NoSuchTableException {
        return load(ident, null, null);
    }

    /** {@code VERSION AS OF n}: the table as version {@code n} left it, read only. */
    @Override
    public Table loadTable(Identifier ident, String version) throws NoSuchTableException {
        return load(ident, version, null);
    }

    /** {@code TIMESTAMP AS OF t}: the newest version committed at or before {@code t}, read only. */
    @Override
    public Table loadTable(Identifier ident, long timestampMicros) throws NoSuchTableException {
        return load(ident, null, timestampMicros);
    }

    Table load(Identifier ident, String version, Long timestampMicros) throws NoSuchTableException {
        String table = TableNames.of(ident);
        ObjectNode request = request("load");
        request.put("table", table);
        JsonNode answer = call(atVersion(request, version, timestampMicros));
        if (answer.hasNonNull("missing")) {
            return metadataTable(ident, version, timestampMicros);
        }
        return SleeperTable.of(this, ident, table, answer);
    }

    /**
     * {@code db.t.history} or {@code db.t.files} where no table has that name: the metadata table
     * of {@code db.t} (as Iceberg resolves its metadata tables).
     */
    private Table metadataTable(Identifier ident, String version, Long timestampMicros) throws NoSuchTableException {
        if (ident.namespace().length == 0 || !MetadataTable.KINDS.contains(ident.name())) {
            throw new NoSuchTableException(ident);
        }
        String[] namespace = ident.namespace();
        Identifier owner = Identifier.of(Arrays.copyOf(namespace, namespace.length - 1), namespace[namespace.length - 1]);
        ObjectNode request = request("metadata");
        request.put("table", TableNames.of(owner));
        request.put("kind", ident.name());
        JsonNode answer = call(atVersion(request, version, timestampMicros));
        if (answer.hasNonNull("missing")) {
            throw new NoSuchTableException(ident);
        }
        return MetadataTable.of(name + "." + ident, answer);
    }

    /** {@code request} with the version time travel selects ({@code VERSION AS OF} or {@code TIMESTAMP AS OF}), if any. */
    private static ObjectNode atVersion(ObjectNode request, String version, Long timestampMicros) {
        if (version != null) {
            request.put("version", version);
        }
        if (timestampMicros != null) {
            request.put("timestampMicros", timestampMicros);
        }
        return request;
    }

    /**
     * {@code spark.read.changes(...)} and {@code CHANGES FROM ...}: the rows each version in the range
     * inserted and deleted (see {@link SleeperChangelog}). The range is checked here; the rows are
     * planned when Spark plans the scan.
     */
    @Override
    public Changelog loadChangelog(Identifier ident, ChangelogContext context, CaseInsensitiveStringMap options)
            throws NoSuchTableException {
        String table = TableNames.of(ident);
        ObjectNode request = request("changelog");
        request.put("table", table);
        request.set("range", ChangeRanges.json(JSON, context.range()));
        request.put("deduplicationMode", context.deduplicationMode().value());
        request.put("computeUpdates", context.computeUpdates());
        JsonNode answer = call(request);
        if (answer.hasNonNull("missing")) {
            throw new NoSuchTableException(ident);
        }
        return SleeperChangelog.of(name + "." + ident + " changes", this, request, answer);
    }

    /** The rows of a changelog's request, as the Python side plans them over Spark's reader. */
    @SuppressWarnings("unchecked") // the bridge answers a DataFrame, or an error as JSON text
    Dataset<Row> changes(ObjectNode request) {
        SparkSession spark = SparkSession.active();
        try {
            Object rows = DriverSide.bridge("the changes of a table of the SQL catalog " + name).changes(spark,
                    JSON.writeValueAsString(request), DriverSide.sessionConf(spark));
            if (rows instanceof String json) {
                DriverSide.answer(json);
                throw new IllegalStateException("the sleeper_spark driver side answered a changes read without rows: "
                        + json);
            }
            return (Dataset<Row>) rows;
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
    }

    @Override
    public void invalidateTable(Identifier ident) {
        // Nothing is cached here: each load asks the log for the table's current version.
    }

    @Override
    public Table createTable(Identifier ident, TableInfo info) throws TableAlreadyExistsException {
        String table = TableNames.of(ident);
        ObjectNode request = request("create");
        request.setAll(definition(table, info));
        JsonNode answer = call(request);
        if (answer.path("exists").asBoolean(false)) {
            throw new TableAlreadyExistsException(ident);
        }
        return SleeperTable.of(this, ident, table, answer);
    }

    /** A table's definition as the Python side takes it: {@code {table, schema, partitionColumns, properties}}. */
    ObjectNode definition(String table, TableInfo info) {
        ObjectNode definition = JSON.createObjectNode();
        definition.put("table", table);
        definition.put("schema", CatalogV2Util.v2ColumnsToStructType(info.columns()).json());
        definition.set("partitionColumns", JSON.valueToTree(partitionColumns(info.partitions())));
        for (Transform transform : info.partitions()) {
            if (SleeperTable.isClusterBy(transform)) { // CLUSTER BY (a, b), df.writeTo(...).clusterBy(...)
                definition.set("clusterColumns", JSON.valueToTree(SleeperTable.clusterByColumns(transform)));
            }
        }
        definition.set("properties", JSON.valueToTree(info.properties()));
        return definition;
    }

    /** {@code CREATE TABLE ... AS SELECT}: the table appears with its rows, in one commit of the Python side. */
    @Override
    public StagedTable stageCreate(Identifier ident, TableInfo info) throws TableAlreadyExistsException {
        if (tableExists(ident)) {
            throw new TableAlreadyExistsException(ident);
        }
        return new StagedSleeperTable(this, ident, info, "create");
    }

    /** {@code REPLACE TABLE [... AS SELECT]}: the table's new definition and rows, with its history kept. */
    @Override
    public StagedTable stageReplace(Identifier ident, TableInfo info) throws NoSuchTableException {
        if (!tableExists(ident)) {
            throw new NoSuchTableException(ident);
        }
        return new StagedSleeperTable(this, ident, info, "replace");
    }

    /** {@code CREATE OR REPLACE TABLE [... AS SELECT]} and {@code df.writeTo(...).createOrReplace()}. */
    @Override
    public StagedTable stageCreateOrReplace(Identifier ident, TableInfo info) {
        return new StagedSleeperTable(this, ident, info, "createOrReplace");
    }

    /** ADD COLUMNS, ALTER COLUMN ... TYPE, DROP COLUMN, SET / UNSET TBLPROPERTIES: the schema evolution calls. */
    @Override
    public Table alterTable(Identifier ident, TableChange... changes) throws NoSuchTableException {
        String table = TableNames.of(ident);
        ObjectNode request = request("alter");
        request.put("table", table);
        request.set("changes", TableChanges.json(JSON, changes));
        JsonNode answer = call(request);
        if (answer.hasNonNull("missing")) {
            throw new NoSuchTableException(ident);
        }
        return SleeperTable.of(this, ident, table, answer);
    }

    @Override
    public boolean dropTable(Identifier ident) {
        return drop(ident, false);
    }

    @Override
    public boolean purgeTable(Identifier ident) {
        return drop(ident, true);
    }

    private boolean drop(Identifier ident, boolean purge) {
        ObjectNode request = request("drop");
        request.put("table", TableNames.of(ident));
        request.put("purge", purge);
        return call(request).path("dropped").asBoolean(false);
    }

    @Override
    public void renameTable(Identifier from, Identifier to) {
        throw new UnsupportedOperationException("a sleeper table cannot be renamed: its files live under its name. "
                + "Copy it instead: CREATE TABLE " + name + "." + TableNames.of(to) + " AS SELECT * FROM " + name + "."
                + TableNames.of(from));
    }

    @Override
    public String[][] listNamespaces() {
        return namespaces(new String[0]).children;
    }

    @Override
    public String[][] listNamespaces(String[] namespace) throws NoSuchNamespaceException {
        Namespaces found = namespaces(namespace);
        if (!found.exists) {
            throw new NoSuchNamespaceException(namespace);
        }
        return found.children;
    }

    @Override
    public boolean namespaceExists(String[] namespace) {
        return namespace.length == 0 || namespaces(namespace).exists;
    }

    /** The namespace's properties, with its comment under {@code comment}, as the Python side records them. */
    @Override
    public Map<String, String> loadNamespaceMetadata(String[] namespace) throws NoSuchNamespaceException {
        if (namespace.length == 0) {
            return new HashMap<>();
        }
        ObjectNode request = request("namespace");
        request.set("namespace", JSON.valueToTree(namespace));
        JsonNode answer = call(request);
        if (answer.hasNonNull("missing")) {
            throw new NoSuchNamespaceException(namespace);
        }
        Map<String, String> metadata = new HashMap<>();
        answer.get("metadata").properties().forEach(entry -> metadata.put(entry.getKey(), entry.getValue().asText()));
        return metadata;
    }

    /**
     * {@code CREATE NAMESPACE}: the Python side records it with its metadata ({@code comment} is its comment), and
     * creates the warehouse if it is new.
     */
    @Override
    public void createNamespace(String[] namespace, Map<String, String> metadata)
            throws NamespaceAlreadyExistsException {
        ObjectNode request = request("createNamespace");
        request.set("namespace", JSON.valueToTree(namespace));
        request.set("metadata", JSON.valueToTree(metadata));
        if (call(request).path("exists").asBoolean(false)) {
            throw new NamespaceAlreadyExistsException(namespace);
        }
    }

    /**
     * {@code ALTER NAMESPACE ... SET / UNSET DBPROPERTIES} and {@code COMMENT ON NAMESPACE}: the properties set and
     * removed, in one change of the namespace's record. Spark's {@code COMMENT ON ... IS NULL} sets the comment to
     * an empty text: that removes it.
     */
    @Override
    public void alterNamespace(String[] namespace, NamespaceChange... changes) throws NoSuchNamespaceException {
        ObjectNode set = JSON.createObjectNode();
        List<String> unset = new ArrayList<>();
        for (NamespaceChange change : changes) {
            if (change instanceof NamespaceChange.SetProperty property) {
                boolean noComment = property.property().equals(SupportsNamespaces.PROP_COMMENT)
                        && (property.value() == null || property.value().isEmpty());
                if (noComment) {
                    unset.add(SupportsNamespaces.PROP_COMMENT);
                } else {
                    set.put(property.property(), property.value());
                }
            } else if (change instanceof NamespaceChange.RemoveProperty property) {
                unset.add(property.property());
            } else {
                throw new UnsupportedOperationException("a sleeper namespace changes by its properties only, not by "
                        + change);
            }
        }
        ObjectNode request = request("alterNamespace");
        request.set("namespace", JSON.valueToTree(namespace));
        request.set("set", set);
        request.set("unset", JSON.valueToTree(unset));
        if (call(request).hasNonNull("missing")) {
            throw new NoSuchNamespaceException(namespace);
        }
    }

    @Override
    public boolean dropNamespace(String[] namespace, boolean cascade) throws NonEmptyNamespaceException {
        ObjectNode request = request("dropNamespace");
        request.set("namespace", JSON.valueToTree(namespace));
        request.put("cascade", cascade);
        JsonNode answer = call(request);
        if (answer.path("nonEmpty").asBoolean(false)) {
            throw new NonEmptyNamespaceException(namespace);
        }
        return answer.path("dropped").asBoolean(false);
    }

    private record Namespaces(boolean exists, String[][] children) {
    }

    private Namespaces namespaces(String[] namespace) {
        ObjectNode request = request("namespaces");
        request.set("namespace", JSON.valueToTree(namespace));
        JsonNode answer = call(request);
        List<String[]> children = new ArrayList<>();
        for (JsonNode child : answer.get("children")) {
            String[] parts = Arrays.copyOf(namespace, namespace.length + 1);
            parts[namespace.length] = child.asText();
            children.add(parts);
        }
        return new Namespaces(answer.path("exists").asBoolean(false), children.toArray(new String[0][]));
    }

    private static String[] partitionColumns(Transform[] partitions) {
        List<String> columns = new ArrayList<>();
        for (Transform partition : partitions) {
            if (SleeperTable.isClusterBy(partition)) {
                continue; // clustering columns, not partitions: see definition()
            }
            if (!(partition instanceof IdentityTransform identity)) {
                throw new UnsupportedOperationException("a sleeper table is partitioned by the values of columns "
                        + "(PARTITIONED BY (day, region)) and clustered by others (CLUSTER BY (a, b)), not by "
                        + partition.describe());
            }
            columns.add(String.join(".", identity.ref().fieldNames()));
        }
        return columns.toArray(new String[0]);
    }

    /** The procedures of the namespace {@code system}: {@code CALL lake.system.compact(table => 'db.t')}. */
    @Override
    public UnboundProcedure loadProcedure(Identifier ident) {
        if (!isSystem(ident.namespace())) {
            throw new IllegalArgumentException("sleeper_spark.errors.ConfigError: the procedures of catalog " + name
                    + " are in its namespace system: CALL " + name + ".system." + ident.name() + "(...)");
        }
        ObjectNode request = request("procedure");
        request.put("name", ident.name());
        JsonNode answer = call(request);
        if (answer.has("missing")) {
            throw new IllegalArgumentException("sleeper_spark.errors.ConfigError: " + answer.get("missing").asText());
        }
        return SleeperProcedure.of(this, ident.name(), answer);
    }

    @Override
    public Identifier[] listProcedures(String[] namespace) {
        if (!isSystem(namespace)) {
            return new Identifier[0];
        }
        ObjectNode request = request("procedure");
        request.put("name", "");
        List<Identifier> procedures = new ArrayList<>();
        for (JsonNode procedure : call(request).get("names")) {
            procedures.add(Identifier.of(namespace, procedure.asText()));
        }
        return procedures.toArray(new Identifier[0]);
    }

    private static boolean isSystem(String[] namespace) {
        return namespace.length == 1 && namespace[0].equals("system");
    }

    ObjectMapper json() {
        return JSON;
    }

    ObjectNode procedureCall(String procedure, ObjectNode arguments) {
        ObjectNode request = request("call");
        request.put("name", procedure);
        request.set("arguments", arguments);
        return request;
    }

    ObjectNode request(String op) {
        ObjectNode request = JSON.createObjectNode();
        request.put("op", op);
        request.set("options", JSON.valueToTree(options));
        return request;
    }

    /** A MERGE, UPDATE or DELETE (see {@link RowChangeRule}); {@code source} is a merge's source rows. */
    JsonNode changeRows(ObjectNode request, Dataset<Row> source) {
        request.set("options", JSON.valueToTree(options));
        return ask(request, (bridge, spark, json, conf) -> bridge.changeRows(spark, json, source, conf));
    }

    JsonNode call(ObjectNode request) {
        return ask(request, FormatBridge::catalog);
    }

    /** One of the bridge's methods that take the session, a JSON request and the session's settings. */
    private interface Question {
        String ask(FormatBridge bridge, SparkSession spark, String request, String sessionConf);
    }

    private JsonNode ask(ObjectNode request, Question question) {
        SparkSession spark = SparkSession.active();
        try {
            return DriverSide.answer(question.ask(DriverSide.bridge("the SQL catalog " + name), spark,
                    JSON.writeValueAsString(request), DriverSide.sessionConf(spark)));
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
    }
}
