package sleeper.spark.facts;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection$;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.bitset.BitSetMethods;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Null count, min and max of every column of one file, as its rows are written, meaning what
 * {@link ColumnFacts} says they mean, with the columns of the common types (longs and
 * timestamps, ints and dates, doubles, floats, strings) kept in arrays by type and updated in one
 * loop per type. Other types (decimals, booleans, nested columns) go through {@link ColumnFacts}.
 *
 * <p>A file's writer sees every value of every row, so the loops are what a write pays for its
 * statistics. Spark hands the writer {@link UnsafeRow}s, whose null bits and fixed-width slots
 * these loops read in place: through {@link InternalRow}'s getters, and with a {@link UTF8String}
 * made and compared per string value, the same work took three and a half times as long (87
 * against 24 ns a row of 22 numeric and string columns; Spark's write of such rows costs about 2,300
 * ns of CPU a row). A row of another kind is copied into an {@link UnsafeRow} first.
 *
 * <p>Bounds start beyond every value (a long's at the ends of its range, a double's at the
 * infinities): a column has a min and max once its low is at most its high. A value replaces a
 * bound only if it is strictly beyond it ({@code <}, {@code >}), so NaN never becomes a bound and
 * the first of equal values (0.0 and -0.0) stays one. Strings compare by their UTF-8 bytes, unsigned, which is
 * code point order, as {@link UTF8String#binaryCompare} does.
 */
final class RowFacts {
    private static final byte LONG = 0;
    private static final byte INT = 1;
    private static final byte DOUBLE = 2;
    private static final byte FLOAT = 3;
    private static final byte STRING = 4;
    private static final byte OTHER = 5;

    private final byte[] kind;
    /** Each column's place among the columns of its kind. */
    private final int[] slot;
    private final long[] nulls;
    private final int[] longs;
    private final long[] longLow;
    private final long[] longHigh;
    private final int[] ints;
    private final long[] intLow;
    private final long[] intHigh;
    private final int[] doubles;
    private final double[] doubleLow;
    private final double[] doubleHigh;
    private final int[] floats;
    private final double[] floatLow;
    private final double[] floatHigh;
    private final int[] strings;
    /** Copies of the bytes of each string column's bounds; null until it has a value. */
    private final byte[][] stringLow;
    private final byte[][] stringHigh;
    private final int[] others;
    private final ColumnFacts[] otherFacts;
    private final StructType schema;
    private UnsafeProjection toUnsafe; // made for the first row that is not an UnsafeRow

    RowFacts(StructType schema) {
        this.schema = schema;
        int count = schema.fields().length;
        kind = new byte[count];
        slot = new int[count];
        nulls = new long[count];
        int[] sizes = new int[OTHER + 1];
        for (int i = 0; i < count; i++) {
            kind[i] = kindOf(schema.fields()[i].dataType());
            slot[i] = sizes[kind[i]]++;
        }
        longs = new int[sizes[LONG]];
        ints = new int[sizes[INT]];
        doubles = new int[sizes[DOUBLE]];
        floats = new int[sizes[FLOAT]];
        strings = new int[sizes[STRING]];
        others = new int[sizes[OTHER]];
        otherFacts = new ColumnFacts[sizes[OTHER]];
        for (int i = 0; i < count; i++) {
            int at = slot[i];
            switch (kind[i]) {
                case LONG -> longs[at] = i;
                case INT -> ints[at] = i;
                case DOUBLE -> doubles[at] = i;
                case FLOAT -> floats[at] = i;
                case STRING -> strings[at] = i;
                default -> {
                    others[at] = i;
                    otherFacts[at] = ColumnFacts.of(schema.fields()[i].dataType());
                }
            }
        }
        longLow = filled(longs.length, Long.MAX_VALUE);
        longHigh = filled(longs.length, Long.MIN_VALUE);
        intLow = filled(ints.length, Long.MAX_VALUE);
        intHigh = filled(ints.length, Long.MIN_VALUE);
        doubleLow = filled(doubles.length, Double.POSITIVE_INFINITY);
        doubleHigh = filled(doubles.length, Double.NEGATIVE_INFINITY);
        floatLow = filled(floats.length, Double.POSITIVE_INFINITY);
        floatHigh = filled(floats.length, Double.NEGATIVE_INFINITY);
        stringLow = new byte[strings.length][];
        stringHigh = new byte[strings.length][];
    }

    private static byte kindOf(DataType type) {
        if (type instanceof LongType || type instanceof TimestampType || type instanceof TimestampNTZType) {
            return LONG;
        } else if (type instanceof IntegerType || type instanceof DateType) {
            return INT;
        } else if (type instanceof DoubleType) {
            return DOUBLE;
        } else if (type instanceof FloatType) {
            return FLOAT;
        } else if (type instanceof StringType) {
            return STRING;
        }
        return OTHER;
    }

    /** Takes every value of {@code row} into account. */
    void update(InternalRow row) {
        updateInPlace(row instanceof UnsafeRow unsafe ? unsafe : unsafe(row));
        for (int k = 0; k < others.length; k++) {
            otherFacts[k].update(row, others[k]);
        }
    }

    /** {@code row} as an {@link UnsafeRow}: Spark's writers are handed those, other rows are copied. */
    private UnsafeRow unsafe(InternalRow row) {
        if (toUnsafe == null) {
            toUnsafe = UnsafeProjection$.MODULE$.create(schema);
        }
        return toUnsafe.apply(row);
    }

    /** As {@link UnsafeRow}'s getters read: a null bit per field, then an 8-byte slot per field. */
    private void updateInPlace(UnsafeRow row) {
        Object base = row.getBaseObject();
        long offset = row.getBaseOffset();
        long values = offset + UnsafeRow.calculateBitSetWidthInBytes(row.numFields());
        // Most rows have no null: their loops then test no null bit (a third of the loops' time).
        boolean anyNull = row.anyNull();
        // One small method per kind: each compiles to a tight loop of its own.
        integersInPlace(longs, false, longLow, longHigh, nulls, anyNull, base, offset, values);
        integersInPlace(ints, true, intLow, intHigh, nulls, anyNull, base, offset, values);
        floatingInPlace(doubles, false, doubleLow, doubleHigh, nulls, anyNull, base, offset, values);
        floatingInPlace(floats, true, floatLow, floatHigh, nulls, anyNull, base, offset, values);
        for (int k = 0; k < strings.length; k++) {
            int i = strings[k];
            if (anyNull && BitSetMethods.isSet(base, offset, i)) {
                nulls[i]++;
            } else {
                // A variable-length value's slot holds its offset from the row's start and its size.
                long place = Platform.getLong(base, values + 8L * i);
                string(k, base, offset + (place >>> 32), (int) place);
            }
        }
    }

    /** Longs and timestamps, or ({@code ints}) ints and dates, which fill the first 4 bytes of their slot. */
    private static void integersInPlace(int[] columns, boolean ints, long[] low, long[] high, long[] nulls,
                                        boolean anyNull, Object base, long offset, long values) {
        for (int k = 0; k < columns.length; k++) {
            int i = columns[k];
            if (anyNull && BitSetMethods.isSet(base, offset, i)) {
                nulls[i]++;
            } else {
                long at = values + 8L * i;
                long v = ints ? Platform.getInt(base, at) : Platform.getLong(base, at);
                low[k] = Math.min(low[k], v);
                high[k] = Math.max(high[k], v);
            }
        }
    }

    /** Doubles, or ({@code floats}) floats, which fill the first 4 bytes of their slot. */
    private static void floatingInPlace(int[] columns, boolean floats, double[] low, double[] high, long[] nulls,
                                        boolean anyNull, Object base, long offset, long values) {
        for (int k = 0; k < columns.length; k++) {
            int i = columns[k];
            if (anyNull && BitSetMethods.isSet(base, offset, i)) {
                nulls[i]++;
            } else {
                long at = values + 8L * i;
                double v = floats ? Platform.getFloat(base, at) : Platform.getDouble(base, at);
                if (v < low[k]) {
                    low[k] = v;
                }
                if (v > high[k]) {
                    high[k] = v;
                }
            }
        }
    }

    /** Takes the string of {@code size} bytes at {@code address} of {@code base} into string column {@code k}. */
    private void string(int k, Object base, long address, int size) {
        byte[] low = stringLow[k];
        if (low == null) {
            stringLow[k] = copy(base, address, size);
            stringHigh[k] = stringLow[k];
            return;
        }
        int toLow = compare(base, address, size, low);
        if (toLow < 0) {
            stringLow[k] = copy(base, address, size);
        } else if (toLow > 0 && compare(base, address, size, stringHigh[k]) > 0) {
            // equal to the low (a partition column's value): done
            stringHigh[k] = copy(base, address, size);
        }
    }

    /** The unsigned byte order of the {@code size} bytes at {@code address} against {@code bound}. */
    private static int compare(Object base, long address, int size, byte[] bound) {
        int common = Math.min(size, bound.length);
        for (int j = 0; j < common; j++) {
            int a = Platform.getByte(base, address + j) & 0xff;
            int b = bound[j] & 0xff;
            if (a != b) {
                return a - b;
            }
        }
        return size - bound.length;
    }

    private static byte[] copy(Object base, long address, int size) {
        byte[] bytes = new byte[size];
        Platform.copyMemory(base, address, bytes, Platform.BYTE_ARRAY_OFFSET, size);
        return bytes;
    }

    long nulls(int column) {
        return kind[column] == OTHER ? otherFacts[slot[column]].nulls : nulls[column];
    }

    /** The smallest value of {@code column}, as {@link ColumnFacts} hands it over; null if there was none. */
    String min(int column) {
        return bound(column, true);
    }

    String max(int column) {
        return bound(column, false);
    }

    private String bound(int column, boolean low) {
        int k = slot[column];
        return switch (kind[column]) {
            case LONG -> longLow[k] <= longHigh[k] ? Long.toString(low ? longLow[k] : longHigh[k]) : null;
            case INT -> intLow[k] <= intHigh[k] ? Long.toString(low ? intLow[k] : intHigh[k]) : null;
            case DOUBLE -> doubleLow[k] <= doubleHigh[k] ? Double.toString(low ? doubleLow[k] : doubleHigh[k]) : null;
            case FLOAT -> floatLow[k] <= floatHigh[k] ? Double.toString(low ? floatLow[k] : floatHigh[k]) : null;
            case STRING -> text(low ? stringLow[k] : stringHigh[k]);
            default -> low ? otherFacts[k].min() : otherFacts[k].max();
        };
    }

    /** As {@link UTF8String#toString} spells the bytes; null for none. */
    private static String text(byte[] bytes) {
        return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
    }

    private static long[] filled(int length, long value) {
        long[] values = new long[length];
        Arrays.fill(values, value);
        return values;
    }

    private static double[] filled(int length, double value) {
        double[] values = new double[length];
        Arrays.fill(values, value);
        return values;
    }
}
