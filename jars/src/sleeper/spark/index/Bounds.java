package sleeper.spark.index;

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
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * One statistic (min or max) of one column for every file, copied off Arrow into plain arrays.
 *
 * <p>Values stay unboxed until a filter asks for them: a table of 100,000 files with 20 columns
 * holds 4 million of them, and a query looks at the few columns it filters on. {@link #get}
 * returns Spark's internal value for the column's type (Long, Integer, UTF8String, Decimal, ...)
 * or null where the statistic is unknown.
 */
abstract class Bounds {
    abstract Object get(int file);

    static Bounds of(FieldVector vector) {
        int count = vector.getValueCount();
        boolean[] known = new boolean[count];
        for (int i = 0; i < count; i++) {
            known[i] = !vector.isNull(i);
        }
        if (vector instanceof VarCharVector v) {
            return new Utf8(v, known);
        } else if (vector instanceof Float4Vector || vector instanceof Float8Vector) {
            double[] values = new double[count];
            for (int i = 0; i < count; i++) {
                if (known[i]) {
                    values[i] = vector instanceof Float8Vector v ? v.get(i) : ((Float4Vector) vector).get(i);
                }
            }
            return new Floating(values, known, vector instanceof Float4Vector);
        } else if (vector instanceof DecimalVector v) {
            Object[] values = new Object[count];
            for (int i = 0; i < count; i++) {
                values[i] = known[i] ? Decimal.apply(v.getObject(i), v.getPrecision(), v.getScale()) : null;
            }
            return new Boxed(values);
        }
        Integral.Kind kind = Integral.kind(vector);
        if (kind == null) {
            return new Boxed(new Object[count]); // a type without an order both sides agree on: unknown
        }
        long[] values = new long[count];
        for (int i = 0; i < count; i++) {
            values[i] = known[i] ? Integral.value(vector, i) : 0;
        }
        return new Integral(values, known, kind);
    }

    /** Booleans, integers, dates (days) and timestamps (microseconds), kept as longs. */
    static final class Integral extends Bounds {
        enum Kind { BOOLEAN, BYTE, SHORT, INT, LONG }

        private final long[] values;
        private final boolean[] known;
        private final Kind kind;

        Integral(long[] values, boolean[] known, Kind kind) {
            this.values = values;
            this.known = known;
            this.kind = kind;
        }

        static Kind kind(FieldVector vector) {
            if (vector instanceof BitVector) {
                return Kind.BOOLEAN;
            } else if (vector instanceof TinyIntVector) {
                return Kind.BYTE;
            } else if (vector instanceof SmallIntVector) {
                return Kind.SHORT;
            } else if (vector instanceof IntVector || vector instanceof DateDayVector) {
                return Kind.INT; // Spark keeps a date as an int of days since the epoch
            } else if (vector instanceof BigIntVector || vector instanceof TimeStampVector) {
                return Kind.LONG; // and a timestamp as a long of microseconds
            }
            return null;
        }

        static long value(FieldVector vector, int i) {
            if (vector instanceof BitVector v) {
                return v.get(i);
            } else if (vector instanceof TinyIntVector v) {
                return v.get(i);
            } else if (vector instanceof SmallIntVector v) {
                return v.get(i);
            } else if (vector instanceof IntVector v) {
                return v.get(i);
            } else if (vector instanceof DateDayVector v) {
                return v.get(i);
            } else if (vector instanceof TimeStampVector v) {
                return v.get(i);
            }
            return ((BigIntVector) vector).get(i);
        }

        @Override
        Object get(int file) {
            if (!known[file]) {
                return null;
            }
            long v = values[file];
            return switch (kind) {
                case BOOLEAN -> v != 0;
                case BYTE -> (byte) v;
                case SHORT -> (short) v;
                case INT -> (int) v;
                case LONG -> v;
            };
        }
    }

    /** Floats and doubles. */
    static final class Floating extends Bounds {
        private final double[] values;
        private final boolean[] known;
        private final boolean isFloat;

        Floating(double[] values, boolean[] known, boolean isFloat) {
            this.values = values;
            this.known = known;
            this.isFloat = isFloat;
        }

        @Override
        Object get(int file) {
            if (!known[file]) {
                return null;
            }
            return isFloat ? (Object) (float) values[file] : (Object) values[file];
        }
    }

    /** Strings: Arrow's offsets and bytes, copied in bulk; a UTF8String is made only when asked for. */
    static final class Utf8 extends Bounds {
        private final int[] offsets;
        private final byte[] data;
        private final boolean[] known;

        Utf8(VarCharVector vector, boolean[] known) {
            int count = vector.getValueCount();
            this.known = known;
            this.offsets = new int[count + 1];
            for (int i = 0; i <= count; i++) {
                offsets[i] = vector.getOffsetBuffer().getInt((long) i * VarCharVector.OFFSET_WIDTH);
            }
            this.data = new byte[offsets[count] - offsets[0]];
            vector.getDataBuffer().getBytes(offsets[0], data);
            int first = offsets[0];
            for (int i = 0; i <= count; i++) {
                offsets[i] -= first;
            }
        }

        @Override
        Object get(int file) {
            if (!known[file]) {
                return null;
            }
            return UTF8String.fromBytes(data, offsets[file], offsets[file + 1] - offsets[file]);
        }
    }

    /** Values already in Spark's form (decimals), null where unknown. */
    static final class Boxed extends Bounds {
        private final Object[] values;

        Boxed(Object[] values) {
            this.values = values;
        }

        @Override
        Object get(int file) {
            return values[file];
        }
    }
}
