package sleeper.spark.facts;

import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.CollectionAccumulator;

/**
 * Spark's Parquet writers, each wrapped so that it describes its file (a {@link FactsOutputWriter},
 * its bytes digested on their way where they can be, see {@link FileDigest}) into the driver's
 * accumulator. Sent to the executors.
 */
public final class FactsWriterFactory extends OutputWriterFactory {
    private static final long serialVersionUID = 1L;
    private final OutputWriterFactory parquet;
    private final CollectionAccumulator<String> facts;

    /** Wraps the writers of {@code parquet}; each file's facts go to {@code facts}, one JSON object each. */
    public FactsWriterFactory(OutputWriterFactory parquet, CollectionAccumulator<String> facts) {
        this.parquet = parquet;
        this.facts = facts;
    }

    @Override
    public String getFileExtension(TaskAttemptContext context) {
        return parquet.getFileExtension(context);
    }

    @Override
    public OutputWriter newInstance(String path, StructType dataSchema, TaskAttemptContext context) {
        FileDigest digest = FileDigest.of(path, context);
        OutputWriter writer = digest == null ? parquet.newInstance(path, dataSchema, context)
                : digest.open(parquet, path, dataSchema, context);
        return new FactsOutputWriter(writer, path, context.getConfiguration(), dataSchema, facts, digest);
    }
}
