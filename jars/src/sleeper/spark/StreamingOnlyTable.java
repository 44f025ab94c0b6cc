package sleeper.spark;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The Python data source's table without its batch capabilities.
 *
 * <p>Spark asks a {@code TableProvider} for its table before it reads or writes, and falls back
 * to the source's V1 side ({@link SleeperSource#createRelation}) when the table cannot do a batch
 * read or write: that is how batch reads and writes reach Spark's own Parquet reader and writer,
 * while streaming reads and writes still go to the Python source, which the table delegates to.
 */
final class StreamingOnlyTable implements Table, SupportsRead, SupportsWrite {
    private static final Set<TableCapability> BATCH = EnumSet.of(TableCapability.BATCH_READ,
            TableCapability.BATCH_WRITE, TableCapability.V1_BATCH_WRITE, TableCapability.TRUNCATE,
            TableCapability.OVERWRITE_BY_FILTER, TableCapability.OVERWRITE_DYNAMIC);

    private final Table python;

    StreamingOnlyTable(Table python) {
        this.python = python;
    }

    @Override
    public String name() {
        return python.name();
    }

    @Override
    @SuppressWarnings("deprecation")
    public StructType schema() {
        return python.schema();
    }

    @Override
    public Column[] columns() {
        return python.columns();
    }

    @Override
    public Transform[] partitioning() {
        return python.partitioning();
    }

    @Override
    public Map<String, String> properties() {
        return python.properties();
    }

    @Override
    public Set<TableCapability> capabilities() {
        Set<TableCapability> capabilities = EnumSet.noneOf(TableCapability.class);
        capabilities.addAll(python.capabilities());
        capabilities.removeAll(BATCH);
        return capabilities;
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        return ((SupportsRead) python).newScanBuilder(options);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        return ((SupportsWrite) python).newWriteBuilder(info);
    }
}
