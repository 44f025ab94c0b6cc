package sleeper.spark.catalog;

import java.util.HashMap;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.connector.catalog.CatalogV2Util;
import org.apache.spark.sql.connector.catalog.Changelog;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import sleeper.spark.bridge.DriverSide;

/**
 * The changes of a range of versions of one table ({@code spark.read.changes}, {@code CHANGES FROM
 * VERSION a TO VERSION b}): the rows each version inserted and deleted, computed by the driver's
 * Python side from the files each version added and removed (see
 * {@code sleeper_spark.table.changes}) and read with Spark's own Parquet reader.
 *
 * <p>Rows a copy-on-write rewrite only copied are never emitted, so there are no carry-over rows
 * for Spark to drop; an update is a delete and an insert of one version, which Spark's
 * {@code computeUpdates} pairs by the table's row identity (the table property
 * {@code changes.row_id}).
 */
final class SleeperChangelog implements Changelog {
    private final String name;
    private final StructType schema;
    private final String[] rowId;
    private final CatalogOfTables catalog;
    private final ObjectNode request;

    private SleeperChangelog(String name, StructType schema, String[] rowId, CatalogOfTables catalog,
                             ObjectNode request) {
        this.name = name;
        this.schema = schema;
        this.rowId = rowId;
        this.catalog = catalog;
        this.request = request;
    }

    /** The changelog the Python side described: {@code {"schema": <Spark schema JSON>, "rowId": [column, ...]}}. */
    static SleeperChangelog of(String name, CatalogOfTables catalog, ObjectNode request, JsonNode answer) {
        StructType schema = (StructType) DataType.fromJson(answer.get("schema").asText());
        return new SleeperChangelog(name, schema, DriverSide.strings(answer.get("rowId")), catalog, request);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Column[] columns() {
        return CatalogV2Util.structTypeToV2Columns(schema, false);
    }

    @Override
    public boolean containsCarryoverRows() {
        return false; // each version's removed and added rows are compared: copies cancel out
    }

    /**
     * A range holds every version's own changes, and an update is a delete and an insert; Spark
     * post-processes both (netChanges, computeUpdates) only by a row identity, so a table without
     * one says neither, and the Python side refuses those options for it with what to set.
     */
    @Override
    public boolean containsIntermediateChanges() {
        return rowId.length > 0;
    }

    @Override
    public boolean representsUpdateAsDeleteAndInsert() {
        return rowId.length > 0;
    }

    @Override
    public NamedReference[] rowId() {
        NamedReference[] references = new NamedReference[rowId.length];
        for (int i = 0; i < references.length; i++) {
            references[i] = Expressions.column(rowId[i]);
        }
        return references;
    }

    /** The version that made a change: the version a row's content last changed in, as far as a change row goes. */
    @Override
    public NamedReference rowVersion() {
        return Expressions.column("_commit_version");
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        StructType readSchema = schema;
        return () -> new ChangesScan(name, readSchema, () -> catalog.changes(request), this::streamOptions);
    }

    /** The options of the streaming source that reads these changes: the catalog's, the table, where to start. */
    private Map<String, String> streamOptions() {
        Map<String, String> options = new HashMap<>(catalog.options());
        options.put("path", request.get("table").asText());
        options.put("readChanges", "true");
        JsonNode range = request.get("range");
        String kind = range.path("kind").asText();
        if (kind.equals("timestamp") || range.hasNonNull("end")) {
            throw new UnsupportedOperationException("sleeper_spark.errors.ConfigError: a streaming read of "
                    + name + " starts at a version (startingVersion) and has no end; give neither an ending "
                    + "version nor timestamps");
        }
        if (kind.equals("version")) {
            long start = Long.parseLong(range.get("start").asText());
            options.put("startingVersion", Long.toString(range.path("startInclusive").asBoolean(true) ? start
                    : start + 1));
        }
        return options;
    }
}
