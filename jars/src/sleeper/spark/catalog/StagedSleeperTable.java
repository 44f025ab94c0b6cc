package sleeper.spark.catalog;

import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableInfo;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;

/**
 * The table of a {@code CREATE TABLE ... AS SELECT} or a {@code CREATE OR REPLACE TABLE [... AS
 * SELECT]} before it is committed. Nothing is changed when Spark stages it: the rows Spark writes
 * into it carry the definition (the option {@link #STAGE}), and the driver's Python side makes
 * or replaces the table and commits the rows together (see
 * {@code sleeper_spark.spark.sql.table_replacement}); a statement with no rows commits the
 * definition alone in {@link #commitStagedChanges}. A failed statement commits nothing.
 */
final class StagedSleeperTable implements StagedTable, SupportsWrite {
    /** The write option that carries the staged definition to the Python side. */
    static final String STAGE = "__sleeper_stage";
    // TRUNCATE: Spark writes a replacement's rows as an overwrite of the whole staged table.
    private static final Set<TableCapability> CAPABILITIES = EnumSet.of(TableCapability.V1_BATCH_WRITE,
            TableCapability.TRUNCATE);

    private final CatalogOfTables catalog;
    private final Identifier ident;
    private final String table;
    private final TableInfo info;
    private final ObjectNode definition;
    private boolean written;

    StagedSleeperTable(CatalogOfTables catalog, Identifier ident, TableInfo info, String kind) {
        this.catalog = catalog;
        this.ident = ident;
        this.table = TableNames.of(ident);
        this.info = info;
        this.definition = catalog.definition(table, info);
        this.definition.put("kind", kind);
    }

    @Override
    public String name() {
        return catalog.name() + "." + ident.toString();
    }

    @Override
    public Column[] columns() {
        return info.columns();
    }

    @Override
    public Transform[] partitioning() {
        return info.partitions();
    }

    @Override
    public Map<String, String> properties() {
        return info.properties();
    }

    @Override
    public Set<TableCapability> capabilities() {
        return CAPABILITIES;
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo writeInfo) {
        Map<String, String> options = new HashMap<>(catalog.options());
        options.put("path", table);
        options.putAll(writeInfo.options().asCaseSensitiveMap());
        options.put(STAGE, definition.toString());
        return new SleeperWriteBuilder(table, options, () -> written = true);
    }

    @Override
    public void commitStagedChanges() {
        if (!written) {
            ObjectNode request = catalog.request("stage");
            request.put("table", table);
            request.set("stage", definition);
            catalog.call(request);
        }
    }

    @Override
    public void abortStagedChanges() {
        // Nothing to undo: the Python side commits a staged table only with its rows, in one go.
    }
}
