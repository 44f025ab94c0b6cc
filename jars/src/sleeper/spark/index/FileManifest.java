package sleeper.spark.index;

import java.io.FileInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;

/**
 * The live files of one table version, as handed over by the Python driver: an Arrow IPC stream
 * of at most one record batch, one row per file.
 *
 * <p>Columns: {@code path} (relative to the table root), {@code size}, {@code mtime} (ms),
 * {@code rows}, then per partition column {@code part:<name>} (the value as a string, null for
 * null), and per column with statistics {@code min:<name>} / {@code max:<name>} (typed: timestamps
 * in microseconds) and {@code nulls:<name>}. A null statistic is unknown; unknown columns are
 * ignored, so the Python side may send more than this version needs. Everything is copied onto
 * the heap and the Arrow memory released at once: an index lives as long as its DataFrame, which
 * nobody closes.
 */
final class FileManifest {
    static final long UNKNOWN = -1;

    /** Min, max and null count of one column; a missing part is unknown for every file. */
    static final class ColumnStats {
        Bounds min;
        Bounds max;
        long[] nulls; // UNKNOWN where unknown
    }

    String[] paths = new String[0];
    long[] sizes = new long[0];
    long[] mtimes = new long[0];
    long[] rows = new long[0];
    final Map<String, String[]> partitions = new HashMap<>();
    final Map<String, ColumnStats> stats = new HashMap<>();

    static FileManifest read(String file) throws IOException {
        FileManifest manifest = new FileManifest();
        try (BufferAllocator allocator = new RootAllocator();
             FileInputStream in = new FileInputStream(file);
             ArrowStreamReader reader = new ArrowStreamReader(in, allocator)) {
            if (reader.loadNextBatch()) {
                manifest.load(reader.getVectorSchemaRoot());
            }
            if (reader.loadNextBatch()) {
                throw new IOException("the file list " + file + " holds more than one record batch");
            }
        }
        return manifest;
    }

    int size() {
        return paths.length;
    }

    private void load(VectorSchemaRoot root) {
        for (FieldVector vector : root.getFieldVectors()) {
            String name = vector.getName();
            switch (name) {
                case "path" -> paths = strings((VarCharVector) vector);
                case "size" -> sizes = longs((BigIntVector) vector, 0);
                case "mtime" -> mtimes = longs((BigIntVector) vector, 0);
                case "rows" -> rows = longs((BigIntVector) vector, 0);
                default -> loadColumn(name, vector);
            }
        }
    }

    private void loadColumn(String name, FieldVector vector) {
        int colon = name.indexOf(':');
        if (colon < 0) {
            return;
        }
        String kind = name.substring(0, colon);
        String column = name.substring(colon + 1);
        switch (kind) {
            case "part" -> partitions.put(column, strings((VarCharVector) vector));
            case "min" -> stats.computeIfAbsent(column, k -> new ColumnStats()).min = Bounds.of(vector);
            case "max" -> stats.computeIfAbsent(column, k -> new ColumnStats()).max = Bounds.of(vector);
            case "nulls" -> stats.computeIfAbsent(column, k -> new ColumnStats()).nulls =
                    longs((BigIntVector) vector, UNKNOWN);
            default -> {
                // a statistic this version does not use
            }
        }
    }

    private static String[] strings(VarCharVector vector) {
        String[] values = new String[vector.getValueCount()];
        for (int i = 0; i < values.length; i++) {
            values[i] = vector.isNull(i) ? null : new String(vector.get(i), StandardCharsets.UTF_8);
        }
        return values;
    }

    private static long[] longs(BigIntVector vector, long whenNull) {
        long[] values = new long[vector.getValueCount()];
        for (int i = 0; i < values.length; i++) {
            values[i] = vector.isNull(i) ? whenNull : vector.get(i);
        }
        return values;
    }
}
