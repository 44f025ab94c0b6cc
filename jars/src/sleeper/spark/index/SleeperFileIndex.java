package sleeper.spark.index;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
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
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private final String rootUri;
    private final String quotedRoot; // the root as Hadoop quotes it in a URI
    private final Path root;
    private final StructType partitionSchema;
    private final List<Partition> partitions = new ArrayList<>();
    private final FileSkipping skipping;
    private final String[] paths;
    private final long[] sizes;
    private final long[] mtimes;
    // Made when first listed: a Hadoop Path costs microseconds, and a selective query lists few files.
    private final FileStatus[] statuses;
    private final long sizeInBytes;
    private volatile int lastListedFiles = -1;

    /** The files of one partition value, as positions in the manifest. */
    private record Partition(InternalRow values, List<Integer> files) {
    }

    /**
     * The index over the files listed in {@code manifestFile} (see {@link FileManifest}), whose
     * partition values are read as Spark's types in the session time zone {@code timeZone}.
     */
    public static SleeperFileIndex read(String description, String rootUri, StructType partitionSchema,
                                        String manifestFile, String timeZone) throws IOException {
        return new SleeperFileIndex(description, rootUri, partitionSchema, FileManifest.read(manifestFile), timeZone);
    }

    private SleeperFileIndex(String description, String rootUri, StructType partitionSchema, FileManifest manifest,
                             String timeZone) {
        this.description = description;
        this.rootUri = rootUri;
        this.root = new Path(rootUri);
        this.quotedRoot = root.toUri().toString();
        this.partitionSchema = partitionSchema;
        this.skipping = new FileSkipping(manifest.stats, manifest.rows);
        this.paths = manifest.paths;
        this.sizes = manifest.sizes;
        this.mtimes = manifest.mtimes;
        this.statuses = new FileStatus[paths.length];
        long total = 0;
        StructField[] fields = partitionSchema.fields();
        String[][] values = new String[fields.length][];
        List<Map<String, Object>> castCache = new ArrayList<>();
        for (int c = 0; c < fields.length; c++) {
            values[c] = manifest.partitions.get(fields[c].name());
            castCache.add(new HashMap<>());
        }
        Map<List<String>, Partition> byValue = new LinkedHashMap<>();
        for (int i = 0; i < paths.length; i++) {
            List<String> key = new ArrayList<>(fields.length);
            for (String[] column : values) {
                key.add(column[i]);
            }
            byValue.computeIfAbsent(key, k -> new Partition(partitionRow(k, castCache, timeZone), new ArrayList<>()))
                    .files().add(i);
            total += sizes[i];
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
            for (int file : partition.files()) {
                if (onData.isEmpty() || skipping.mayMatch(onData, file)) {
                    kept.add(status(file));
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

    private FileStatus status(int file) {
        FileStatus status = statuses[file];
        if (status == null) {
            // Paths in the log are relative to the table root and never escaped ("a%2Fb" is a file
            // name, not "a/b"). Quoting them here and handing Hadoop a URI is five times quicker
            // than new Path(String), which quotes the same way and parses the result again.
            Path path = new Path(URI.create(quotedRoot + "/" + quote(paths[file])));
            status = new FileStatus(sizes[file], false, 1, 128L << 20, mtimes[file], path);
            statuses[file] = status; // a race only makes an equal status twice
        }
        return status;
    }

    /** {@code path} with every byte outside a few characters that are safe in a URI path percent-encoded. */
    static String quote(String path) {
        for (int i = 0; i < path.length(); i++) {
            if (!safe(path.charAt(i))) {
                return quoteFrom(path, i);
            }
        }
        return path; // the common case: nothing to quote
    }

    private static String quoteFrom(String path, int start) {
        StringBuilder quoted = new StringBuilder(path.length() + 16).append(path, 0, start);
        for (byte b : path.substring(start).getBytes(StandardCharsets.UTF_8)) {
            char c = (char) (b & 0xff);
            if (b >= 0 && safe(c)) {
                quoted.append(c);
            } else {
                quoted.append('%').append(HEX[(b >> 4) & 0xf]).append(HEX[b & 0xf]);
            }
        }
        return quoted.toString();
    }

    private static boolean safe(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' || c == '-'
                || c == '_' || c == '.' || c == '~' || c == '=';
    }

    private String absolute(int file) {
        return rootUri + "/" + paths[file];
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
        String[] files = new String[paths.length];
        for (int i = 0; i < files.length; i++) {
            files[i] = absolute(i);
        }
        return files;
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
