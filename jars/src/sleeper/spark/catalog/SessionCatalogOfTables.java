package sleeper.spark.catalog;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.catalog.Changelog;
import org.apache.spark.sql.connector.catalog.ChangelogContext;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.DelegatingCatalogExtension;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.StagingTableCatalog;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.TableInfo;
import org.apache.spark.sql.connector.catalog.V1Table;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Spark's own session catalog ({@code spark_catalog}) with sleeper tables in it, configured under
 * the name of its public class {@link sleeper.spark.SleeperSessionCatalog}:
 * {@code spark.sql.catalog.spark_catalog=sleeper.spark.SleeperSessionCatalog}, with a sleeper
 * catalog's options as {@code spark.sql.catalog.spark_catalog.<key>}.
 *
 * <p>Everything is Spark's session catalog (the Hive metastore, Glue, or the in-memory catalog),
 * which this class wraps as Delta's and Iceberg's session catalogs do; a table whose provider is
 * {@code sleeper} is served by the sleeper catalog of the options instead, as the {@code lake}
 * catalog serves it (reads, writes, time travel, changes, metadata tables, ALTER, procedures). The
 * session table {@code db.t} is the sleeper table {@code db.t}. Its metastore entry (provider
 * {@code sleeper}, the table's root as location, its columns and partitioning) makes it visible to
 * other Spark applications and the metastore's own clients; the log stays the truth for its
 * schema and rows, so a stale entry never changes what a read returns.
 */
public class SessionCatalogOfTables extends DelegatingCatalogExtension implements StagingTableCatalog,
        ProcedureCatalog {
    private final CatalogOfTables tables = new CatalogOfTables();
    private final SessionEntries entries = new SessionEntries(this);

    @Override
    public void initialize(String catalogName, CaseInsensitiveStringMap catalogOptions) {
        super.initialize(catalogName, catalogOptions);
        tables.initialize(catalogName, catalogOptions);
    }

    // -- loading ------------------------------------------------------------------------------

    @Override
    public Table loadTable(Identifier ident) throws NoSuchTableException {
        return load(ident, null, null);
    }

    @Override
    public Table loadTable(Identifier ident, String version) throws NoSuchTableException {
        return load(ident, version, null);
    }

    @Override
    public Table loadTable(Identifier ident, long timestampMicros) throws NoSuchTableException {
        return load(ident, null, timestampMicros);
    }

    private Table load(Identifier ident, String version, Long timestampMicros) throws NoSuchTableException {
        Identifier owner = metadataOwner(ident);
        if (owner != null && sleeperEntry(owner) != null) {
            // db.t.history: the metadata table of the sleeper table db.t (as Iceberg resolves them)
            return tables.load(Identifier.of(new String[] {owner.namespace()[0], owner.name()}, ident.name()), version,
                    timestampMicros);
        }
        Table entry = entryOf(ident);
        if (!isSleeper(entry)) {
            if (version != null) {
                return super.loadTable(ident, version);
            }
            return timestampMicros == null ? entry : super.loadTable(ident, timestampMicros);
        }
        try {
            Table table = tables.load(ident, version, timestampMicros);
            if (version == null && timestampMicros == null && table instanceof SleeperTable current) {
                entries.refreshIfStale(ident, entry, current); // a schema changed through the Python API
            }
            return table;
        } catch (NoSuchTableException missing) {
            throw new IllegalArgumentException("sleeper_spark.errors.TableNotFoundError: the metastore's entry "
                    + ident + " is a sleeper table at " + entry.properties().get(TableCatalog.PROP_LOCATION)
                    + ", but the sleeper catalog of spark.sql.catalog.spark_catalog.* has no table " + TableNames.of(ident)
                    + ". Check that those settings name the warehouse the table was created in, or DROP TABLE "
                    + ident + " to remove the stale entry (which deletes no files)", missing);
        }
    }

    /**
     * The table whose metadata table {@code ident} may name: {@code db.t.history} is {@code db.t}'s,
     * and {@code t.history} that of {@code t} in the current database, where no table has that name.
     */
    private Identifier metadataOwner(Identifier ident) {
        if (!MetadataTable.KINDS.contains(ident.name())) {
            return null;
        }
        String[] namespace = ident.namespace();
        if (namespace.length == 2) {
            return Identifier.of(new String[] {namespace[0]}, namespace[1]);
        }
        if (namespace.length == 1 && !isTable(ident)) {
            String[] current = SparkSession.active().sessionState().catalogManager().currentNamespace();
            return current.length == 1 ? Identifier.of(current, namespace[0]) : null;
        }
        return null;
    }

    private boolean isTable(Identifier ident) {
        try {
            return super.loadTable(ident) != null;
        } catch (Exception missing) { // Spark's AnalysisException is checked in Java's eyes only
            return false;
        }
    }

    /** The metastore's entry for {@code ident} if it is a sleeper table; null otherwise or where there is none. */
    private Table sleeperEntry(Identifier ident) {
        if (ident.namespace().length != 1) {
            return null; // a temporary view, or a name the session catalog cannot hold
        }
        try {
            Table entry = super.loadTable(ident);
            return isSleeper(entry) ? entry : null;
        } catch (Exception missing) { // Spark's AnalysisException is checked in Java's eyes only
            if (MetastoreFailures.unreachable(missing)) {
                throw MetastoreFailures.said(missing, "looked up " + ident);
            }
            return null;
        }
    }

    /** The metastore's entry, where a metastore that cannot be reached is a StorageError saying what to check. */
    private Table entryOf(Identifier ident) throws NoSuchTableException {
        try {
            return super.loadTable(ident);
        } catch (NoSuchTableException missing) {
            throw missing;
        } catch (Exception failed) {
            throw MetastoreFailures.said(failed, "looked up " + ident);
        }
    }

    static boolean isSleeper(Table entry) {
        if (entry instanceof V1Table v1) {
            return v1.v1Table().provider().isDefined() && isSleeper(v1.v1Table().provider().get());
        }
        return entry != null && isSleeper(entry.properties().get(TableCatalog.PROP_PROVIDER));
    }

    static boolean isSleeper(String provider) {
        return provider != null && provider.equalsIgnoreCase(SessionEntries.PROVIDER);
    }

    @Override
    public Changelog loadChangelog(Identifier ident, ChangelogContext context, CaseInsensitiveStringMap options)
            throws NoSuchTableException {
        if (sleeperEntry(ident) == null) {
            return super.loadChangelog(ident, context, options);
        }
        return tables.loadChangelog(ident, context, options);
    }

    @Override
    public void invalidateTable(Identifier ident) {
        super.invalidateTable(ident);
    }

    // -- creating -----------------------------------------------------------------------------

    @Override
    public Table createTable(Identifier ident, Column[] columns, Transform[] partitions, Map<String, String> properties)
            throws TableAlreadyExistsException, NoSuchNamespaceException {
        if (!isSleeper(properties.get(TableCatalog.PROP_PROVIDER))) {
            return super.createTable(ident, columns, partitions, properties);
        }
        entries.checkAbsent(ident);
        TableInfo info = new TableInfo.Builder().withColumns(columns).withPartitions(partitions)
                .withProperties(properties).build();
        String location = properties.get(TableCatalog.PROP_LOCATION);
        boolean made = false;
        Table table;
        if (location != null) {
            table = adopt(ident, location); // LOCATION: an existing table, registered with its history
        } else if (columns.length == 0) {
            table = adopt(ident, null); // no columns: the sleeper table of that name, registered
        } else {
            try {
                table = tables.createTable(ident, info);
            } catch (TableAlreadyExistsException exists) {
                throw new IllegalArgumentException("sleeper_spark.errors.TableAlreadyExistsError: the sleeper catalog "
                        + "already has a table " + TableNames.of(ident) + " that the metastore does not list: "
                        + "CREATE TABLE " + ident + " USING sleeper (no columns) registers it as it is", exists);
            }
            made = true;
        }
        entries.register(ident, (SleeperTable) table, properties, made ? () -> drop(ident, false) : null);
        return table;
    }

    @Override
    public Table createTable(Identifier ident, TableInfo info) throws TableAlreadyExistsException,
            NoSuchNamespaceException {
        return createTable(ident, info.columns(), info.partitions(), info.properties());
    }

    private Table adopt(Identifier ident, String location) {
        ObjectNode request = tables.request("adopt");
        request.put("table", TableNames.of(ident));
        if (location != null) {
            request.put("location", location);
        }
        JsonNode answer = tables.call(request);
        return SleeperTable.of(tables, ident, TableNames.of(ident), answer);
    }

    @Override
    public StagedTable stageCreate(Identifier ident, TableInfo info) throws TableAlreadyExistsException,
            NoSuchNamespaceException {
        checkStagedProvider(ident, info);
        entries.checkAbsent(ident);
        return new StagedSessionTable(entries, ident, (StagedSleeperTable) tables.stageCreate(ident, info), info,
                tables);
    }

    @Override
    public StagedTable stageReplace(Identifier ident, TableInfo info) throws NoSuchNamespaceException,
            NoSuchTableException {
        checkStagedProvider(ident, info);
        entries.checkReplaceable(ident);
        return new StagedSessionTable(entries, ident, (StagedSleeperTable) tables.stageReplace(ident, info), info,
                tables);
    }

    /**
     * {@code saveAsTable} in overwrite mode, {@code CREATE OR REPLACE TABLE}: a replacement that names
     * no partitioning keeps the table's (as {@code saveAsTable} without {@code partitionBy} keeps a
     * Delta table's), since a sleeper table's partitioning cannot change in place.
     */
    @Override
    public StagedTable stageCreateOrReplace(Identifier ident, TableInfo info) throws NoSuchNamespaceException {
        checkStagedProvider(ident, info);
        entries.checkReplaceable(ident);
        boolean namesPartitions = false;
        boolean namesClustering = false;
        for (Transform transform : info.partitions()) {
            namesClustering |= SleeperTable.isClusterBy(transform);
            namesPartitions |= !SleeperTable.isClusterBy(transform);
        }
        if (!namesPartitions && tables.tableExists(ident)) {
            try {
                // The table's partitions, and its clustering unless the statement names one (CLUSTER BY).
                List<Transform> kept = new ArrayList<>();
                for (Transform transform : tables.loadTable(ident).partitioning()) {
                    if (!(namesClustering && SleeperTable.isClusterBy(transform))) {
                        kept.add(transform);
                    }
                }
                for (Transform transform : info.partitions()) {
                    kept.add(transform); // the statement's CLUSTER BY, if any
                }
                info = new TableInfo.Builder().withColumns(info.columns()).withPartitions(kept.toArray(new Transform[0]))
                        .withProperties(info.properties()).build();
            } catch (NoSuchTableException dropped) {
                // dropped meanwhile: made anew as stated
            }
        }
        return new StagedSessionTable(entries, ident, (StagedSleeperTable) tables.stageCreateOrReplace(ident, info),
                info, tables);
    }

    /** Spark stages CREATE ... AS SELECT of table providers only; a sleeper session catalog stages its own tables. */
    private static void checkStagedProvider(Identifier ident, TableInfo info) {
        String provider = info.properties().get(TableCatalog.PROP_PROVIDER);
        if (!isSleeper(provider)) {
            throw new UnsupportedOperationException("sleeper_spark.errors.ConfigError: " + ident + ": the sleeper "
                    + "session catalog makes tables of USING sleeper from a query (CREATE TABLE ... AS SELECT, "
                    + "REPLACE TABLE, saveAsTable) and those of Spark's file formats (parquet, orc, ...); "
                    + provider + " is neither. Create the table first, then INSERT INTO it");
        }
    }

    // -- changing and dropping ------------------------------------------------------------------

    @Override
    public Table alterTable(Identifier ident, TableChange... changes) throws NoSuchTableException {
        if (sleeperEntry(ident) == null) {
            return super.alterTable(ident, changes);
        }
        Table table = tables.alterTable(ident, changes);
        entries.refresh(ident, (SleeperTable) table);
        return table;
    }

    @Override
    public boolean dropTable(Identifier ident) {
        return sleeperEntry(ident) == null ? super.dropTable(ident) : drop(ident, false);
    }

    @Override
    public boolean purgeTable(Identifier ident) {
        return sleeperEntry(ident) == null ? super.purgeTable(ident) : drop(ident, true);
    }

    /** Drops the sleeper table (its files too with {@code purge}), then its entry: a failure between leaves an entry to drop again. */
    private boolean drop(Identifier ident, boolean purge) {
        if (purge) {
            tables.purgeTable(ident);
        } else {
            tables.dropTable(ident);
        }
        return super.dropTable(ident); // an external entry: the metastore deletes no files
    }

    @Override
    public void renameTable(Identifier from, Identifier to) throws NoSuchTableException, TableAlreadyExistsException {
        if (sleeperEntry(from) != null) {
            tables.renameTable(from, to); // refused, with what to do instead
        }
        super.renameTable(from, to);
    }

    @Override
    public boolean dropNamespace(String[] namespace, boolean cascade) throws NoSuchNamespaceException,
            NonEmptyNamespaceException {
        if (cascade && namespace.length == 1) {
            for (Identifier ident : listTables(namespace)) {
                if (sleeperEntry(ident) != null) {
                    drop(ident, false); // the sleeper table goes with its entry, as DROP TABLE drops it
                }
            }
        }
        return super.dropNamespace(namespace, cascade);
    }

    // -- procedures -----------------------------------------------------------------------------

    @Override
    public UnboundProcedure loadProcedure(Identifier ident) {
        return tables.loadProcedure(ident);
    }

    @Override
    public Identifier[] listProcedures(String[] namespace) {
        return tables.listProcedures(namespace);
    }

    /** The wrapped session catalog's own calls, for {@link SessionEntries}. */
    Table delegateLoad(Identifier ident) throws NoSuchTableException {
        return super.loadTable(ident);
    }

    void delegateCreate(Identifier ident, Column[] columns, Transform[] partitions, Map<String, String> properties)
            throws TableAlreadyExistsException, NoSuchNamespaceException {
        super.createTable(ident, columns, partitions, new HashMap<>(properties));
    }

    void delegateAlter(Identifier ident, TableChange... changes) throws NoSuchTableException {
        super.alterTable(ident, changes);
    }

    boolean delegateDrop(Identifier ident) {
        return super.dropTable(ident);
    }
}
