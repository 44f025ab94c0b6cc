package sleeper.spark.catalog;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.catalog.CatalogV2Util;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * The metastore entries of the sleeper tables in Spark's session catalog: an external table of
 * provider {@code sleeper} whose location is the table's root, with the table's columns (its
 * partition columns last, where the metastore keeps them) and partitioning. Entries are written
 * after the sleeper table is made, and a failed entry undoes the table it was made for, so a
 * statement leaves both or neither.
 */
final class SessionEntries {
    static final String PROVIDER = "sleeper";
    // Properties the sleeper side derives for each load: the metastore keeps none of them.
    private static final List<String> DERIVED = List.of("current-version", TableCatalog.PROP_LOCATION,
            TableCatalog.PROP_PROVIDER);

    private final SessionCatalogOfTables session;
    // "<ident> <columns>" of each stale entry refreshed (or tried) by this catalog
    private final Set<String> refreshesTried = ConcurrentHashMap.newKeySet();

    SessionEntries(SessionCatalogOfTables session) {
        this.session = session;
    }

    /** Spark's TableAlreadyExistsException where the metastore lists {@code ident}. */
    void checkAbsent(Identifier ident) throws TableAlreadyExistsException {
        if (entry(ident) != null) {
            throw new TableAlreadyExistsException(ident);
        }
    }

    /** Refuses to replace a table of another format: a sleeper table replaces only a sleeper table. */
    void checkReplaceable(Identifier ident) {
        Table entry = entry(ident);
        if (entry != null && !SessionCatalogOfTables.isSleeper(entry)) {
            throw new UnsupportedOperationException("sleeper_spark.errors.ConfigError: " + ident + " is a table of "
                    + "provider " + entry.properties().get(TableCatalog.PROP_PROVIDER) + "; a sleeper table replaces "
                    + "only a sleeper table: DROP TABLE " + ident + " first, then create it USING sleeper");
        }
    }

    boolean listed(Identifier ident) {
        return entry(ident) != null;
    }

    private Table entry(Identifier ident) {
        try {
            return session.delegateLoad(ident);
        } catch (NoSuchTableException missing) {
            return null;
        }
    }

    /**
     * Adds the metastore entry of {@code table}; where that fails, runs {@code undo} (drops a
     * table made for this entry; null for a table that was there before) and says what happened.
     */
    void register(Identifier ident, SleeperTable table, Map<String, String> statement, Runnable undo)
            throws TableAlreadyExistsException {
        Map<String, String> properties = new HashMap<>();
        table.properties().forEach((key, value) -> {
            if (!DERIVED.contains(key)) {
                properties.put(key, value);
            }
        });
        for (String key : List.of(TableCatalog.PROP_COMMENT, TableCatalog.PROP_OWNER)) {
            if (statement.containsKey(key)) {
                properties.put(key, statement.get(key));
            }
        }
        properties.put(TableCatalog.PROP_PROVIDER, PROVIDER);
        properties.put(TableCatalog.PROP_LOCATION, table.properties().get(TableCatalog.PROP_LOCATION));
        properties.put(TableCatalog.PROP_EXTERNAL, "true"); // the metastore never deletes a sleeper table's files
        try {
            session.delegateCreate(ident, CatalogV2Util.structTypeToV2Columns(entrySchema(table), false),
                    partitionsOnly(table.partitioning()), properties);
        } catch (TableAlreadyExistsException exists) {
            undo(undo);
            throw exists;
        } catch (Exception | LinkageError failed) {
            undo(undo);
            throw new IllegalStateException("sleeper_spark.errors.StorageError: the session catalog's metastore did "
                    + "not register " + ident + " (" + failed.getMessage() + "); "
                    + (undo == null ? "the sleeper table is unchanged" : "the sleeper table made for it was dropped "
                    + "again") + ". Check that the metastore is reachable (spark.sql.catalogImplementation, "
                    + "hive.metastore.uris) and run the statement again", failed);
        }
    }

    /**
     * The partition transforms alone: the entry records where files are, not how the table clusters, which
     * changes with ALTER TABLE ... CLUSTER BY (the table itself answers that on every load).
     */
    private static Transform[] partitionsOnly(Transform[] transforms) {
        List<Transform> partitions = new ArrayList<>();
        for (Transform transform : transforms) {
            if (!SleeperTable.isClusterBy(transform)) {
                partitions.add(transform);
            }
        }
        return partitions.toArray(new Transform[0]);
    }

    private static void undo(Runnable undo) {
        if (undo != null) {
            undo.run();
        }
    }

    /**
     * Brings the entry's columns up to the log's after a schema change. Best effort: the log is
     * the truth for reads, and a metastore that refuses the change (an older Hive that cannot drop
     * a column) keeps the entry it had.
     */
    void refresh(Identifier ident, SleeperTable table) {
        try {
            TableIdentifier name = new TableIdentifier(ident.name(), Option.apply(ident.namespace()[0]));
            // The whole schema, partition columns last: the data-schema call refuses to drop a column.
            SparkSession.active().sessionState().catalog().alterTableSchema(name, entrySchema(table));
        } catch (Exception stale) { // Spark's AnalysisException is checked in Java's eyes only
            // the entry stays as it was: reads take the schema from the log
        }
    }

    /**
     * Refreshes the entry where its columns are not the table's (a schema changed where no session
     * catalog saw it: the Python API, another catalog). Tried once per table schema in this
     * catalog, so a metastore that refuses the change is not asked again at every load.
     */
    void refreshIfStale(Identifier ident, Table entry, SleeperTable table) {
        String wanted = columnsOf(entrySchema(table));
        if (wanted.equals(columnsOf(CatalogV2Util.v2ColumnsToStructType(entry.columns())))
                || !refreshesTried.add(ident + " " + wanted)) {
            return;
        }
        refresh(ident, table);
    }

    /** Names and types, in order; the metastore may keep names in lower case and every column nullable. */
    private static String columnsOf(StructType schema) {
        StringBuilder text = new StringBuilder();
        for (StructField field : schema.fields()) {
            text.append((field.name() + " " + field.dataType().catalogString()).toLowerCase(Locale.ROOT)).append(',');
        }
        return text.toString();
    }

    /** The table's columns as the metastore keeps them: data columns in order, then the partition columns. */
    private static StructType entrySchema(SleeperTable table) {
        StructType schema = CatalogV2Util.v2ColumnsToStructType(table.columns());
        List<StructField> fields = dataFields(table);
        for (String partition : table.partitionColumns()) {
            fields.add(schema.apply(partition));
        }
        return new StructType(fields.toArray(new StructField[0]));
    }

    /** The table's columns that are not partition columns, in order. */
    private static List<StructField> dataFields(SleeperTable table) {
        List<String> partitions = List.of(table.partitionColumns());
        List<StructField> fields = new ArrayList<>();
        for (StructField field : CatalogV2Util.v2ColumnsToStructType(table.columns()).fields()) {
            if (!partitions.contains(field.name())) {
                fields.add(field);
            }
        }
        return fields;
    }

}
