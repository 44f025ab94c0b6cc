package sleeper.spark.facts;

import java.io.IOException;
import java.io.InputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.CollectionAccumulator;

/**
 * Spark's Parquet writer for one file, describing the file as it goes: row count and per-column
 * statistics from the rows it writes, size and SHA-256 from the file's bytes as the writer emits
 * them (see {@link FileDigest}). The facts reach the driver through an accumulator, whose updates
 * Spark applies once per successful task: a failed, retried or losing speculative attempt adds
 * nothing.
 *
 * <p>Where the bytes could not be digested on their way (the file system could not be wrapped),
 * the file is read back by this task right after it is closed; where it cannot be read back
 * either (a committer that publishes files only when the job commits), size and checksum are
 * left out and the driver reads that file instead.
 */
final class FactsOutputWriter extends OutputWriter {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int BUFFER_BYTES = 1 << 20;
    /** The hidden partition columns' names start so (sleeper_spark.layout.SPARK_PARTITION_COLUMN). */
    private static final String HIDDEN_COLUMN = "__sleeper_partition";

    private final OutputWriter parquet;
    private final String path;
    private final Configuration conf;
    private final CollectionAccumulator<String> facts;
    private final StructType schema;
    private final RowFacts columns;
    private final FileDigest digest;
    private long rows;

    FactsOutputWriter(OutputWriter parquet, String path, Configuration conf, StructType schema,
                      CollectionAccumulator<String> facts, FileDigest digest) {
        this.parquet = parquet;
        this.digest = digest;
        this.path = path;
        this.conf = conf;
        this.schema = schema;
        this.facts = facts;
        this.columns = new RowFacts(schema);
    }

    @Override
    public void write(InternalRow row) {
        parquet.write(row);
        rows++;
        columns.update(row);
    }

    @Override
    public void close() {
        parquet.close();
        facts.add(describe());
    }

    @Override
    public String path() {
        return parquet.path();
    }

    private String describe() {
        Path file = new Path(path);
        ObjectNode node = JSON.createObjectNode();
        node.put("name", file.getName());
        node.put("dir", partitionFolders(file.getParent()));
        node.put("rows", rows);
        if (digest != null && digest.done()) {
            node.put("size", digest.size());
            node.put("sha256", digest.sha256());
        } else {
            readBack(file, node);
        }
        ObjectNode stats = node.putObject("columns");
        StructField[] fields = schema.fields();
        for (int i = 0; i < fields.length; i++) {
            ObjectNode column = stats.putObject(fields[i].name());
            column.put("nulls", columns.nulls(i));
            column.put("min", columns.min(i));
            column.put("max", columns.max(i));
        }
        return node.toString();
    }

    /**
     * The folders of the file's partition below the write's folder, one a partition column
     * ("<hidden column>=<value>/<hidden column>_1=<value>"), or "" for a write without partitions.
     * Only the hidden columns' folders count: whatever holds them (a task attempt's folder, the
     * table's location) may have any name.
     */
    static String partitionFolders(Path folder) {
        String folders = "";
        for (Path at = folder; at != null && at.getName().startsWith(HIDDEN_COLUMN) && at.getName().contains("=");
             at = at.getParent()) {
            folders = folders.isEmpty() ? at.getName() : at.getName() + "/" + folders;
        }
        return folders;
    }

    /** Size and SHA-256 of the closed file; left out where it cannot be read back yet. */
    private void readBack(Path file, ObjectNode node) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            long size = 0;
            FileSystem fs = file.getFileSystem(conf);
            byte[] buffer = new byte[BUFFER_BYTES];
            try (InputStream in = fs.open(file)) {
                for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                    digest.update(buffer, 0, n);
                    size += n;
                }
            }
            node.put("size", size);
            node.put("sha256", HexFormat.of().formatHex(digest.digest()));
        } catch (IOException | NoSuchAlgorithmException error) {
            node.putNull("size");
            node.putNull("sha256");
        }
    }
}
