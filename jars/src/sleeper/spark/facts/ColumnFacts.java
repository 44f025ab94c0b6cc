package sleeper.spark.facts;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * Null count, min and max of one column over the rows of one file, as the rows are written, for
 * the types {@link RowFacts} does not keep in arrays of its own: booleans, bytes, shorts,
 * decimals, binary and nested columns.
 *
 * <p>The statistics mean what the Python writer's mean: min and max over the non-null values,
 * NaN left out of floats (so a column of NaN only has none), and a null count for every column,
 * nested ones included (whose values get no min or max). Bounds are handed over as text:
 * integers, dates (days) and timestamps (microseconds) in decimal, floats as
 * {@link Double#toString} spells them, decimals in plain notation, strings as they are.
 */
abstract class ColumnFacts {
    long nulls;

    /** Takes the value at {@code ordinal} of {@code row} into account. */
    final void update(InternalRow row, int ordinal) {
        if (row.isNullAt(ordinal)) {
            nulls++;
        } else {
            value(row, ordinal);
        }
    }

    abstract void value(InternalRow row, int ordinal);

    /** The smallest value seen, as text; null if there was none. */
    abstract String min();

    abstract String max();

    static ColumnFacts of(DataType type) {
        if (type instanceof BooleanType) {
            return new Integral(Integral.Kind.BOOLEAN);
        } else if (type instanceof ByteType) {
            return new Integral(Integral.Kind.BYTE);
        } else if (type instanceof ShortType) {
            return new Integral(Integral.Kind.SHORT);
        } else if (type instanceof IntegerType || type instanceof DateType || type instanceof LongType
                || type instanceof TimestampType || type instanceof TimestampNTZType || type instanceof FloatType
                || type instanceof DoubleType || type instanceof StringType) {
            throw new IllegalArgumentException(type + " columns are kept by RowFacts");
        } else if (type instanceof DecimalType decimal) {
            return new Decimals(decimal.precision(), decimal.scale());
        }
        return new NullsOnly();
    }

    /** Booleans, bytes and shorts, compared as longs. */
    static final class Integral extends ColumnFacts {
        enum Kind { BOOLEAN, BYTE, SHORT }

        private final Kind kind;
        private boolean any;
        private long low;
        private long high;

        Integral(Kind kind) {
            this.kind = kind;
        }

        @Override
        void value(InternalRow row, int ordinal) {
            long v = switch (kind) {
                case BOOLEAN -> row.getBoolean(ordinal) ? 1 : 0;
                case BYTE -> row.getByte(ordinal);
                case SHORT -> row.getShort(ordinal);
            };
            if (!any) {
                any = true;
                low = v;
                high = v;
            } else if (v < low) {
                low = v;
            } else if (v > high) {
                high = v;
            }
        }

        @Override
        String min() {
            return any ? text(low) : null;
        }

        @Override
        String max() {
            return any ? text(high) : null;
        }

        private String text(long v) {
            return kind == Kind.BOOLEAN ? Boolean.toString(v != 0) : Long.toString(v);
        }
    }

    /** Values of a type with its own order, copied when kept (a row's value may be reused). */
    abstract static class Comparables<T> extends ColumnFacts {
        private T low;
        private T high;

        abstract T read(InternalRow row, int ordinal);

        /** Negative, zero or positive as {@code a} is below, equal to or above {@code b}. */
        abstract int compare(T a, T b);

        abstract T copy(T value);

        abstract String text(T value);

        @Override
        final void value(InternalRow row, int ordinal) {
            T v = read(row, ordinal);
            if (low == null) {
                low = copy(v);
                high = low;
                return;
            }
            int toLow = compare(v, low);
            if (toLow < 0) {
                low = copy(v);
            } else if (toLow > 0 && compare(v, high) > 0) { // equal to the low (a partition column's value): done
                high = copy(v);
            }
        }

        @Override
        final String min() {
            return low == null ? null : text(low);
        }

        @Override
        final String max() {
            return high == null ? null : text(high);
        }
    }

    /** Decimals of one precision and scale, handed over in plain notation at that scale. */
    static final class Decimals extends Comparables<Decimal> {
        private final int precision;
        private final int scale;

        Decimals(int precision, int scale) {
            this.precision = precision;
            this.scale = scale;
        }

        @Override
        Decimal read(InternalRow row, int ordinal) {
            return row.getDecimal(ordinal, precision, scale);
        }

        @Override
        int compare(Decimal a, Decimal b) {
            return a.compare(b);
        }

        @Override
        Decimal copy(Decimal value) {
            return value.clone();
        }

        @Override
        String text(Decimal value) {
            return value.toJavaBigDecimal().setScale(scale).toPlainString();
        }
    }

    /** Binary and nested columns: their null count only, as the Python writer keeps. */
    static final class NullsOnly extends ColumnFacts {
        @Override
        void value(InternalRow row, int ordinal) {
        }

        @Override
        String min() {
            return null;
        }

        @Override
        String max() {
            return null;
        }
    }
}
