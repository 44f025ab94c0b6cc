package sleeper.spark.index;

import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BinaryComparison;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.InSet;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Decides from a file's min/max/null counts whether it can hold a row matching Spark's data
 * filters. It may only answer "no" when that is certain: anything it does not understand
 * (functions, casts, NOT, a literal of another type, missing statistics) keeps the file. Spark
 * re-checks data filters on every row it reads, so keeping a file is always correct.
 */
final class FileSkipping {
    private final Map<String, FileManifest.ColumnStats> stats;
    private final long[] rows;

    FileSkipping(Map<String, FileManifest.ColumnStats> stats, long[] rows) {
        this.stats = stats;
        this.rows = rows;
    }

    /** Whether file {@code file} may hold a row for which every filter is true. */
    boolean mayMatch(List<Expression> filters, int file) {
        for (Expression filter : filters) {
            if (!mayMatch(filter, file)) {
                return false;
            }
        }
        return true;
    }

    private boolean mayMatch(Expression e, int file) {
        if (e instanceof And and) {
            return mayMatch(and.left(), file) && mayMatch(and.right(), file);
        } else if (e instanceof Or or) {
            return mayMatch(or.left(), file) || mayMatch(or.right(), file);
        } else if (e instanceof IsNull isNull && isNull.child() instanceof AttributeReference a) {
            Long nulls = nulls(a, file);
            return nulls == null || nulls > 0;
        } else if (e instanceof IsNotNull notNull && notNull.child() instanceof AttributeReference a) {
            Long nulls = nulls(a, file);
            return nulls == null || nulls < rows[file];
        } else if (e instanceof In in && in.value() instanceof AttributeReference a) {
            for (Expression item : CollectionConverters.asJava(in.list())) {
                if (!(item instanceof Literal literal) || !literal.dataType().sameType(a.dataType())
                        || mayEqual(a, literal.value(), file)) {
                    return true;
                }
            }
            return false;
        } else if (e instanceof InSet inSet && inSet.child() instanceof AttributeReference a) {
            for (Object value : CollectionConverters.asJava(inSet.hset())) {
                if (mayEqual(a, value, file)) {
                    return true;
                }
            }
            return false;
        } else if (e instanceof BinaryComparison comparison && !(e instanceof EqualNullSafe)) {
            return mayMatchComparison(comparison, file);
        }
        return true;
    }

    private boolean mayMatchComparison(BinaryComparison comparison, int file) {
        AttributeReference column;
        Literal literal;
        boolean flipped; // literal on the left: "5 < x" is "x > 5"
        if (comparison.left() instanceof AttributeReference a && comparison.right() instanceof Literal l) {
            column = a;
            literal = l;
            flipped = false;
        } else if (comparison.right() instanceof AttributeReference a && comparison.left() instanceof Literal l) {
            column = a;
            literal = l;
            flipped = true;
        } else {
            return true;
        }
        if (!literal.dataType().sameType(column.dataType())) {
            return true;
        }
        Object value = literal.value();
        if (value == null) {
            return false; // a comparison with null is never true
        }
        if (comparison instanceof EqualTo) {
            return mayEqual(column, value, file);
        }
        boolean less = comparison instanceof LessThan || comparison instanceof LessThanOrEqual;
        boolean orEqual = comparison instanceof LessThanOrEqual || comparison instanceof GreaterThanOrEqual;
        if (!less && !(comparison instanceof GreaterThan || comparison instanceof GreaterThanOrEqual)) {
            return true;
        }
        boolean columnBelow = less != flipped; // the filter asks for column values below the literal
        return columnBelow ? mayBeBelow(column, value, orEqual, file) : mayBeAbove(column, value, orEqual, file);
    }

    private boolean mayEqual(AttributeReference column, Object value, int file) {
        if (value == null) {
            return false; // x = null and x IN (null) match no row
        }
        if (isFloating(column) && isNaN(value)) {
            return true; // NaN is kept out of the statistics
        }
        Object min = bound(column, true, file);
        Object max = bound(column, false, file);
        if (allNull(column, file)) {
            return false;
        }
        return (min == null || compare(min, value) <= 0) && (max == null || compare(value, max) <= 0);
    }

    private boolean mayBeBelow(AttributeReference column, Object value, boolean orEqual, int file) {
        if (allNull(column, file)) {
            return false;
        }
        Object min = bound(column, true, file);
        if (min == null) {
            return true;
        }
        int order = compare(min, value);
        return orEqual ? order <= 0 : order < 0;
    }

    private boolean mayBeAbove(AttributeReference column, Object value, boolean orEqual, int file) {
        if (allNull(column, file)) {
            return false;
        }
        if (isFloating(column)) {
            return true; // NaN, which Spark orders above every number, is kept out of the statistics
        }
        Object max = bound(column, false, file);
        if (max == null) {
            return true;
        }
        int order = compare(max, value);
        return orEqual ? order >= 0 : order > 0;
    }

    private Object bound(AttributeReference column, boolean min, int file) {
        FileManifest.ColumnStats columnStats = stats.get(column.name());
        Bounds values = columnStats == null ? null : (min ? columnStats.min : columnStats.max);
        return values == null ? null : values.get(file);
    }

    private Long nulls(AttributeReference column, int file) {
        FileManifest.ColumnStats columnStats = stats.get(column.name());
        if (columnStats == null || columnStats.nulls == null || columnStats.nulls[file] == FileManifest.UNKNOWN) {
            return null;
        }
        return columnStats.nulls[file];
    }

    private boolean allNull(AttributeReference column, int file) {
        Long nulls = nulls(column, file);
        return nulls != null && nulls == rows[file];
    }

    private static boolean isFloating(AttributeReference column) {
        return column.dataType() instanceof DoubleType || column.dataType() instanceof FloatType;
    }

    private static boolean isNaN(Object value) {
        return (value instanceof Double d && d.isNaN()) || (value instanceof Float f && f.isNaN());
    }

    /** Spark's order for two values of one type; -0.0 equals 0.0, as in Spark's comparisons. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private static int compare(Object a, Object b) {
        if (a instanceof Number x && b instanceof Number y && (a instanceof Double || a instanceof Float)) {
            return Double.compare(x.doubleValue() + 0.0, y.doubleValue() + 0.0);
        }
        return ((Comparable) a).compareTo(b);
    }
}
