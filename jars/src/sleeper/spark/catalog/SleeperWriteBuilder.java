package sleeper.spark.catalog;

import java.util.Map;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.connector.write.SupportsOverwrite;
import org.apache.spark.sql.connector.write.V1Write;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.InsertableRelation;
import sleeper.spark.bridge.DriverSide;
import sleeper.spark.bridge.FormatBridge;

/**
 * A write into a catalog table ({@code INSERT INTO}, {@code df.writeTo(...).append()}, and the
 * overwrites: {@code INSERT OVERWRITE} of the whole table, of static partitions
 * ({@code PARTITION (day = '2024-01-01')}, {@code writeTo(...).overwrite(cond)}: the option
 * {@code replaceWhere}) or of the partitions the rows fall in ({@code overwritePartitions()}, and
 * {@code INSERT OVERWRITE} with {@code spark.sql.sources.partitionOverwriteMode=dynamic}: the option
 * {@code partitionOverwriteMode=dynamic}, see {@link DynamicOverwriteRule}). Spark hands the rows over as a DataFrame (its V1
 * fallback), and the driver's Python side writes them with Spark's own Parquet writer and commits
 * one snapshot, as {@code format("sleeper")} does.
 */
final class SleeperWriteBuilder implements SupportsOverwrite {
    private final String table;
    private final Map<String, String> options;
    private final Runnable afterWrite;
    private boolean overwrite;

    /** Marks a write as the catalog's: where Spark's writer cannot reach the table, the Python data source writes it. */
    static final String CATALOG_WRITE = "__sleeper_catalog_write";

    SleeperWriteBuilder(String table, Map<String, String> options) {
        this(table, options, () -> { });
    }

    /** {@code afterWrite} runs once the rows are committed (a staged table learns that it was written). */
    SleeperWriteBuilder(String table, Map<String, String> options, Runnable afterWrite) {
        this.table = table;
        this.options = new java.util.HashMap<>(options);
        this.options.put(CATALOG_WRITE, "true");
        this.afterWrite = afterWrite;
    }

    @Override
    public WriteBuilder truncate() {
        overwrite = true;
        return this;
    }

    @Override
    public WriteBuilder overwrite(Filter[] filters) {
        overwrite = true;
        String condition = FilterText.of(filters);
        if (!condition.equals("true")) {
            options.put("replaceWhere", condition);
        }
        return this;
    }


    @Override
    public Write build() {
        String mode = overwrite ? "Overwrite" : "Append";
        String description = (overwrite ? "an overwrite of " : "a write into ") + table;
        return new V1Write() {
            @Override
            public InsertableRelation toInsertableRelation() {
                // Spark passes overwrite=false here whatever the statement: the builder knows the mode.
                return (Dataset<Row> data, boolean ignored) -> write(description, mode, data);
            }
        };
    }

    private void write(String description, String mode, Dataset<Row> data) {
        org.apache.spark.sql.classic.Dataset<Row> rows = (org.apache.spark.sql.classic.Dataset<Row>) data;
        org.apache.spark.sql.classic.SparkSession spark = rows.sparkSession();
        FormatBridge driverSide = DriverSide.bridge(description);
        DriverSide.answer(driverSide.write(spark, rows, mode, DriverSide.json(options), DriverSide.sessionConf(spark)));
        afterWrite.run();
    }
}
