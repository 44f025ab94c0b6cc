package sleeper.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark's file index for one version of a sleeper_spark table: the files come from the table's
 * log (handed over as a {@link FileManifest}), so nothing is ever listed.
 *
 * <p>Spark trusts {@code listFiles} to apply the partition filters and does not check them again,
 * so they are evaluated exactly here, once per partition value. Data filters only skip files
 * whose statistics rule them out; Spark re-checks them on every row.
 */
public final class SleeperFileIndex implements FileIndex {
    private final String description;
    private final Path root;
    private final StructType partitionSchema;
    private final List<Partition> partitions = new ArrayList<>();
    private final FileSkipping skipping;
    private final String[] inputFiles;
    private final long sizeInBytes;
    private volatile int lastListedFiles = -1;

    /** The files of one partition value: their positions in the manifest and their statuses. */
    private record Partition(InternalRow values, List<Integer> files, List<FileStatus> statuses) {
    }

    SleeperFileIndex(String description, String rootUri, StructType partitionSchema, FileManifest manifest,
                     String timeZone) {
        this.description = description;
        this.root = new Path(rootUri);
        this.partitionSchema = partitionSchema;
        this.skipping = new FileSkipping(manifest.stats, manifest.rows);
        this.inputFiles = new String[manifest.size()];
        long total = 0;
        Map<List<String>, Partition> byValue = new LinkedHashMap<>();
        List<Map<String, Object>> castCache = new ArrayList<>();
        for (int c = 0; c < partitionSchema.fields().length; c++) {
            castCache.add(new HashMap<>());
        }
        for (int i = 0; i < manifest.size(); i++) {
            List<String> key = new ArrayList<>(partitionSchema.fields().length);
            for (StructField field : partitionSchema.fields()) {
                key.add(manifest.partitions.get(field.name()).get(i));
            }
            Partition partition = byValue.computeIfAbsent(key, k -> new Partition(
                    partitionRow(k, castCache, timeZone), new ArrayList<>(), new ArrayList<>()));
            long size = manifest.sizes.get(i);
            total += size;
            partition.files().add(i);
            // Paths in the log are relative to the table root and never escaped: Hadoop's Path
            // quotes every character itself, so "a%2Fb" stays a file name and is not decoded.
            inputFiles[i] = rootUri + "/" + manifest.paths.get(i);
            partition.statuses().add(new FileStatus(size, false, 1, 128L << 20, manifest.mtimes.get(i),
                    new Path(inputFiles[i])));
        }
        this.partitions.addAll(byValue.values());
        this.sizeInBytes = total;
    }

    /** The partition values as Spark's types: the log keeps them as strings, Spark's Cast reads them. */
    private InternalRow partitionRow(List<String> values, List<Map<String, Object>> castCache, String timeZone) {
        StructField[] fields = partitionSchema.fields();
        Object[] row = new Object[fields.length];
        for (int c = 0; c < fields.length; c++) {
            String value = values.get(c);
            DataType type = fields[c].dataType();
            row[c] = value == null ? null : castCache.get(c).computeIfAbsent(value, v -> new Cast(
                    Literal.create(UTF8String.fromString(v), DataTypes.StringType), type,
                    Option.apply(timeZone)).eval(null));
        }
        return new GenericInternalRow(row);
    }

    @Override
    public Seq<Path> rootPaths() {
        return CollectionConverters.asScala(List.of(root)).toSeq();
    }

    @Override
    public Seq<PartitionDirectory> listFiles(Seq<Expression> partitionFilters, Seq<Expression> dataFilters) {
        List<Expression> onPartitions = new ArrayList<>();
        for (Expression filter : CollectionConverters.asJava(partitionFilters)) {
            onPartitions.add(bind(filter));
        }
        List<Expression> onData = CollectionConverters.asJava(dataFilters);
        List<PartitionDirectory> listed = new ArrayList<>();
        int count = 0;
        for (Partition partition : partitions) {
            if (!matches(onPartitions, partition.values())) {
                continue;
            }
            List<FileStatus> kept = new ArrayList<>();
            for (int j = 0; j < partition.files().size(); j++) {
                if (onData.isEmpty() || skipping.mayMatch(onData, partition.files().get(j))) {
                    kept.add(partition.statuses().get(j));
                }
            }
            if (!kept.isEmpty()) {
                count += kept.size();
                listed.add(PartitionDirectory.apply(partition.values(), kept.toArray(new FileStatus[0])));
            }
        }
        lastListedFiles = count;
        return CollectionConverters.asScala(listed).toSeq();
    }

    private static boolean matches(List<Expression> filters, InternalRow values) {
        for (Expression filter : filters) {
            Object result = filter.eval(values);
            if (!(result instanceof Boolean b) || !b) {
                return false; // null counts as false, as in a WHERE clause
            }
        }
        return true;
    }

    /** The filter with each partition column replaced by its position in the partition row. */
    private Expression bind(Expression expression) {
        if (expression instanceof AttributeReference attribute) {
            int index = partitionIndex(attribute.name());
            return new BoundReference(index, partitionSchema.fields()[index].dataType(), true);
        }
        return expression.mapChildren(this::bind);
    }

    private int partitionIndex(String name) {
        StructField[] fields = partitionSchema.fields();
        for (int i = 0; i < fields.length; i++) {
            if (fields[i].name().equals(name)) {
                return i;
            }
        }
        for (int i = 0; i < fields.length; i++) {
            if (fields[i].name().equalsIgnoreCase(name)) {
                return i;
            }
        }
        throw new IllegalArgumentException("partition filter names an unknown column " + name);
    }

    /** How many files the last {@code listFiles} returned (-1 before the first): for tests and benchmarks. */
    public int lastListedFiles() {
        return lastListedFiles;
    }

    @Override
    public String[] inputFiles() {
        return inputFiles.clone();
    }

    @Override
    public void refresh() {
        // A version of the table never changes: there is nothing to refresh.
    }

    @Override
    public long sizeInBytes() {
        return sizeInBytes;
    }

    @Override
    public StructType partitionSchema() {
        return partitionSchema;
    }

    @Override
    public String toString() {
        return description;
    }
}
