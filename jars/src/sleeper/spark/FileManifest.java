package sleeper.spark;

import java.io.FileInputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The live files of one table version, as handed over by the Python driver: an Arrow IPC stream
 * with one row per file.
 *
 * <p>Columns: {@code path} (absolute, as Hadoop reads it), {@code size}, {@code mtime} (ms),
 * {@code rows}, then per partition column {@code part:<name>} (the value as a string, null for
 * null), and per column with statistics {@code min:<name>} / {@code max:<name>} (typed: timestamps
 * in microseconds, decimals with the column's scale) and {@code nulls:<name>}. A statistic that is
 * null is unknown. Everything is copied onto the heap as Spark's internal values and the Arrow
 * memory is released at once: an index lives as long as its DataFrame, which nobody closes.
 */
final class FileManifest {
    static final String PARTITION_PREFIX = "part:";
    static final String MIN_PREFIX = "min:";
    static final String MAX_PREFIX = "max:";
    static final String NULLS_PREFIX = "nulls:";

    /** Min, max and null count of one column, one entry per file; null means unknown. */
    static final class ColumnStats {
        Object[] min;
        Object[] max;
        Long[] nulls;
    }

    final List<String> paths = new ArrayList<>();
    final List<Long> sizes = new ArrayList<>();
    final List<Long> mtimes = new ArrayList<>();
    final List<Long> rows = new ArrayList<>();
    final Map<String, List<String>> partitions = new HashMap<>();
    final Map<String, ColumnStats> stats = new HashMap<>();

    static FileManifest read(String file) throws IOException {
        FileManifest manifest = new FileManifest();
        try (BufferAllocator allocator = new RootAllocator();
             FileInputStream in = new FileInputStream(file);
             ArrowStreamReader reader = new ArrowStreamReader(in, allocator)) {
            VectorSchemaRoot root = reader.getVectorSchemaRoot();
            while (reader.loadNextBatch()) {
                manifest.append(root);
            }
        }
        return manifest;
    }

    int size() {
        return paths.size();
    }

    private void append(VectorSchemaRoot root) {
        int count = root.getRowCount();
        int offset = paths.size();
        for (FieldVector vector : root.getFieldVectors()) {
            String name = vector.getName();
            if (name.equals("path")) {
                VarCharVector v = (VarCharVector) vector;
                for (int i = 0; i < count; i++) {
                    paths.add(new String(v.get(i), java.nio.charset.StandardCharsets.UTF_8));
                }
            } else if (name.equals("size")) {
                appendLongs(sizes, (BigIntVector) vector, count);
            } else if (name.equals("mtime")) {
                appendLongs(mtimes, (BigIntVector) vector, count);
            } else if (name.equals("rows")) {
                appendLongs(rows, (BigIntVector) vector, count);
            } else if (name.startsWith(PARTITION_PREFIX)) {
                List<String> values = partitions.computeIfAbsent(name.substring(PARTITION_PREFIX.length()),
                        k -> new ArrayList<>());
                VarCharVector v = (VarCharVector) vector;
                for (int i = 0; i < count; i++) {
                    values.add(v.isNull(i) ? null : new String(v.get(i), java.nio.charset.StandardCharsets.UTF_8));
                }
            } else {
                appendStats(name, vector, offset, count);
            }
        }
    }

    private static void appendLongs(List<Long> into, BigIntVector vector, int count) {
        for (int i = 0; i < count; i++) {
            into.add(vector.isNull(i) ? 0L : vector.get(i));
        }
    }

    private void appendStats(String name, FieldVector vector, int offset, int count) {
        String column;
        int kind;
        if (name.startsWith(MIN_PREFIX)) {
            column = name.substring(MIN_PREFIX.length());
            kind = 0;
        } else if (name.startsWith(MAX_PREFIX)) {
            column = name.substring(MAX_PREFIX.length());
            kind = 1;
        } else if (name.startsWith(NULLS_PREFIX)) {
            column = name.substring(NULLS_PREFIX.length());
            kind = 2;
        } else {
            return; // a column added by a later version of the Python side: not needed here
        }
        ColumnStats columnStats = stats.computeIfAbsent(column, k -> new ColumnStats());
        if (kind == 2) {
            columnStats.nulls = grow(columnStats.nulls, new Long[0], offset + count);
            for (int i = 0; i < count; i++) {
                columnStats.nulls[offset + i] = vector.isNull(i) ? null : ((BigIntVector) vector).get(i);
            }
            return;
        }
        Object[] values = grow(kind == 0 ? columnStats.min : columnStats.max, new Object[0], offset + count);
        for (int i = 0; i < count; i++) {
            values[offset + i] = vector.isNull(i) ? null : internal(vector, i);
        }
        if (kind == 0) {
            columnStats.min = values;
        } else {
            columnStats.max = values;
        }
    }

    private static <T> T[] grow(T[] current, T[] empty, int length) {
        if (current == null) {
            return java.util.Arrays.copyOf(empty, length);
        }
        return current.length >= length ? current : java.util.Arrays.copyOf(current, length);
    }

    /** One Arrow value as the object Spark keeps in an InternalRow for that type. */
    private static Object internal(FieldVector vector, int i) {
        if (vector instanceof BitVector v) {
            return v.get(i) != 0;
        } else if (vector instanceof TinyIntVector v) {
            return v.get(i);
        } else if (vector instanceof SmallIntVector v) {
            return v.get(i);
        } else if (vector instanceof IntVector v) {
            return v.get(i);
        } else if (vector instanceof BigIntVector v) {
            return v.get(i);
        } else if (vector instanceof Float4Vector v) {
            return v.get(i);
        } else if (vector instanceof Float8Vector v) {
            return v.get(i);
        } else if (vector instanceof DateDayVector v) {
            return v.get(i); // days since the epoch, as Spark's DateType
        } else if (vector instanceof TimeStampVector v) {
            return v.get(i); // microseconds (the Python side converts), as Spark's timestamps
        } else if (vector instanceof VarCharVector v) {
            return UTF8String.fromBytes(v.get(i));
        } else if (vector instanceof DecimalVector v) {
            return Decimal.apply(v.getObject(i), v.getPrecision(), v.getScale());
        }
        return null; // a type without an order Spark and Arrow agree on: the statistic is unknown
    }
}
