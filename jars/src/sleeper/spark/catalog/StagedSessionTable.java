package sleeper.spark.catalog;

import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
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
 * A staged sleeper table of the session catalog ({@code saveAsTable}, {@code CREATE TABLE ... AS
 * SELECT}, {@code CREATE OR REPLACE TABLE}): the sleeper side stages and commits it as the
 * {@code lake} catalog does ({@link StagedSleeperTable}); once it is committed, its metastore entry
 * is added (or, for a replacement, brought up to its new columns). A table this statement made
 * is dropped again when the metastore does not take its entry.
 */
final class StagedSessionTable implements StagedTable, SupportsWrite {
    private final SessionEntries entries;
    private final Identifier ident;
    private final StagedSleeperTable staged;
    private final TableInfo info;
    private final CatalogOfTables tables;
    private final boolean existed; // a sleeper table of this name was there before: never dropped here

    StagedSessionTable(SessionEntries entries, Identifier ident, StagedSleeperTable staged, TableInfo info,
                       CatalogOfTables tables) {
        this.entries = entries;
        this.ident = ident;
        this.staged = staged;
        this.info = info;
        this.tables = tables;
        this.existed = tables.tableExists(ident);
    }

    @Override
    public String name() {
        return staged.name();
    }

    @Override
    public Column[] columns() {
        return staged.columns();
    }

    @Override
    public Transform[] partitioning() {
        return staged.partitioning();
    }

    @Override
    public Map<String, String> properties() {
        return staged.properties();
    }

    @Override
    public Set<TableCapability> capabilities() {
        return staged.capabilities();
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo writeInfo) {
        return staged.newWriteBuilder(writeInfo);
    }

    @Override
    public void commitStagedChanges() {
        staged.commitStagedChanges();
        SleeperTable table;
        try {
            table = (SleeperTable) tables.loadTable(ident);
        } catch (NoSuchTableException gone) {
            throw new IllegalStateException("sleeper_spark.errors.TableNotFoundError: " + ident + " was committed "
                    + "and then dropped before its metastore entry was added: run the statement again", gone);
        }
        if (entries.listed(ident)) {
            entries.refresh(ident, table);
            return;
        }
        try {
            entries.register(ident, table, info.properties(), existed ? null : () -> tables.dropTable(ident));
        } catch (TableAlreadyExistsException raced) {
            // Another driver registered the same name meanwhile; this statement's table was dropped again.
            throw new IllegalStateException("sleeper_spark.errors.TableAlreadyExistsError: " + ident + " was "
                    + "registered by another statement while this one ran; nothing of this one was kept", raced);
        }
    }

    @Override
    public void abortStagedChanges() {
        staged.abortStagedChanges();
    }
}
