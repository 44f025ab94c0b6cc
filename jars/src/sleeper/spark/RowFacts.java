package sleeper.spark;

import java.util.Arrays;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * Null count, min and max of every column of one file, as its rows are written: what
 * {@link ColumnFacts} keeps for a column, with the columns of the common types (longs and
 * timestamps, ints and dates, doubles, floats) kept in arrays by type and updated in one loop per
 * type. A file's writer sees every value of every row: a virtual call per value through
 * {@link ColumnFacts} cost about a tenth of a write of numeric columns, these loops a third of
 * that. Other types (strings, decimals, booleans, nested columns) go through {@link ColumnFacts}.
 *
 * <p>Bounds start beyond every value (a long's at the ends of its range, a double's at the
 * infinities): a column has a min and max once its low is at most its high. The comparisons are
 * {@link ColumnFacts}'s ({@code <} and {@code >}), so NaN never becomes a bound and the first of
 * equal values (0.0 and -0.0) stays one.
 */
final class RowFacts {
    private static final byte LONG = 0;
    private static final byte INT = 1;
    private static final byte DOUBLE = 2;
    private static final byte FLOAT = 3;
    private static final byte OTHER = 4;

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
    private final int[] others;
    private final ColumnFacts[] otherFacts;

    RowFacts(StructType schema) {
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
        others = new int[sizes[OTHER]];
        otherFacts = new ColumnFacts[sizes[OTHER]];
        for (int i = 0; i < count; i++) {
            int at = slot[i];
            switch (kind[i]) {
                case LONG -> longs[at] = i;
                case INT -> ints[at] = i;
                case DOUBLE -> doubles[at] = i;
                case FLOAT -> floats[at] = i;
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
        }
        return OTHER;
    }

    /** Takes every value of {@code row} into account. */
    void update(InternalRow row) {
        for (int k = 0; k < longs.length; k++) {
            int i = longs[k];
            if (row.isNullAt(i)) {
                nulls[i]++;
            } else {
                long v = row.getLong(i);
                longLow[k] = Math.min(longLow[k], v);
                longHigh[k] = Math.max(longHigh[k], v);
            }
        }
        for (int k = 0; k < ints.length; k++) {
            int i = ints[k];
            if (row.isNullAt(i)) {
                nulls[i]++;
            } else {
                long v = row.getInt(i);
                intLow[k] = Math.min(intLow[k], v);
                intHigh[k] = Math.max(intHigh[k], v);
            }
        }
        for (int k = 0; k < doubles.length; k++) {
            int i = doubles[k];
            if (row.isNullAt(i)) {
                nulls[i]++;
            } else {
                double v = row.getDouble(i);
                if (v < doubleLow[k]) {
                    doubleLow[k] = v;
                }
                if (v > doubleHigh[k]) {
                    doubleHigh[k] = v;
                }
            }
        }
        for (int k = 0; k < floats.length; k++) {
            int i = floats[k];
            if (row.isNullAt(i)) {
                nulls[i]++;
            } else {
                double v = row.getFloat(i);
                if (v < floatLow[k]) {
                    floatLow[k] = v;
                }
                if (v > floatHigh[k]) {
                    floatHigh[k] = v;
                }
            }
        }
        for (int k = 0; k < others.length; k++) {
            otherFacts[k].update(row, others[k]);
        }
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
            default -> low ? otherFacts[k].min() : otherFacts[k].max();
        };
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
