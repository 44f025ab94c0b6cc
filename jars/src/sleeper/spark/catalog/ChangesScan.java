package sleeper.spark.catalog;

import java.util.Map;
import java.util.function.Supplier;

import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.V1Scan;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.TableScan;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import sleeper.spark.SleeperSource;

/**
 * The scan of a {@link SleeperChangelog}: the rows of a DataFrame the driver's Python side plans
 * over Spark's own Parquet reader, handed to Spark as a relation of internal rows (no conversion
 * per row). The DataFrame is asked for when Spark plans the scan's execution.
 */
final class ChangesScan implements V1Scan {
    private final String description;
    private final StructType schema;
    private final Supplier<Dataset<Row>> rows;
    private final Supplier<Map<String, String>> streamOptions;

    ChangesScan(String description, StructType schema, Supplier<Dataset<Row>> rows,
                Supplier<Map<String, String>> streamOptions) {
        this.description = description;
        this.schema = schema;
        this.rows = rows;
        this.streamOptions = streamOptions;
    }

    /**
     * {@code readStream.changes(...)}: the streaming source of the sleeper Python data source in its
     * changes mode ({@code readChanges=true}), whose offsets are versions and whose checkpoints
     * follow the streaming source's rules (see {@code sleeper_spark.spark.streaming.stream_changes}).
     */
    @Override
    public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
        Map<String, String> options = streamOptions.get();
        Table python = new SleeperSource().getTable(schema, new Transform[0], options);
        return ((SupportsRead) python).newScanBuilder(new CaseInsensitiveStringMap(options)).build()
                .toMicroBatchStream(checkpointLocation);
    }

    @Override
    public StructType readSchema() {
        return schema;
    }

    @Override
    public String description() {
        return description;
    }

    @Override
    @SuppressWarnings("unchecked") // Spark's signature asks for a type that is both; ChangesRelation is
    public <T extends BaseRelation & TableScan> T toV1TableScan(SQLContext context) {
        return (T) new ChangesRelation(context, schema, rows);
    }

    /** The relation Spark reads: {@code needConversion} false, so the rows go through as Spark's internal rows. */
    private static final class ChangesRelation extends BaseRelation implements TableScan {
        private final SQLContext context;
        private final StructType schema;
        private final Supplier<Dataset<Row>> rows;

        ChangesRelation(SQLContext context, StructType schema, Supplier<Dataset<Row>> rows) {
            this.context = context;
            this.schema = schema;
            this.rows = rows;
        }

        @Override
        public SQLContext sqlContext() {
            return context;
        }

        @Override
        public StructType schema() {
            return schema;
        }

        @Override
        public boolean needConversion() {
            return false;
        }

        @Override
        @SuppressWarnings("unchecked") // with needConversion false, Spark reads these rows as InternalRow
        public RDD<Row> buildScan() {
            Dataset<Row> data = rows.get();
            RDD<InternalRow> internal = data.queryExecution().toRdd();
            return (RDD<Row>) (RDD<?>) internal;
        }
    }
}
