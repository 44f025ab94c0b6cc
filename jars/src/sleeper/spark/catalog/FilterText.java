package sleeper.spark.catalog;

import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.sources.AlwaysFalse;
import org.apache.spark.sql.sources.AlwaysTrue;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.apache.spark.sql.sources.Not;
import org.apache.spark.sql.sources.Or;
import org.apache.spark.sql.sources.StringContains;
import org.apache.spark.sql.sources.StringEndsWith;
import org.apache.spark.sql.sources.StringStartsWith;

/**
 * The condition of an overwrite ({@code INSERT OVERWRITE t PARTITION (day = '2024-01-01')},
 * {@code df.writeTo(t).overwrite(cond)}) as Spark SQL, for the Python side's {@code replaceWhere}:
 * Spark hands the condition over as source filters, and each is printed with literals that read
 * back as the same value and type (a timestamp as microseconds, never through a time zone).
 */
final class FilterText {
    private FilterText() {
    }

    /** The filters joined by AND, each printed as Spark SQL. */
    static String of(Filter[] filters) {
        List<String> parts = new ArrayList<>();
        for (Filter filter : filters) {
            parts.add(text(filter));
        }
        return parts.isEmpty() ? "true" : String.join(" AND ", parts);
    }

    private static String text(Filter filter) {
        if (filter instanceof And and) {
            return "(" + text(and.left()) + " AND " + text(and.right()) + ")";
        } else if (filter instanceof Or or) {
            return "(" + text(or.left()) + " OR " + text(or.right()) + ")";
        } else if (filter instanceof Not not) {
            return "(NOT " + text(not.child()) + ")";
        } else if (filter instanceof EqualTo f) {
            return compare(f.attribute(), "=", f.value());
        } else if (filter instanceof EqualNullSafe f) {
            return compare(f.attribute(), "<=>", f.value());
        } else if (filter instanceof GreaterThan f) {
            return compare(f.attribute(), ">", f.value());
        } else if (filter instanceof GreaterThanOrEqual f) {
            return compare(f.attribute(), ">=", f.value());
        } else if (filter instanceof LessThan f) {
            return compare(f.attribute(), "<", f.value());
        } else if (filter instanceof LessThanOrEqual f) {
            return compare(f.attribute(), "<=", f.value());
        } else if (filter instanceof In in) {
            List<String> values = new ArrayList<>();
            for (Object value : in.values()) {
                values.add(literal(value));
            }
            return "(" + in.attribute() + " IN (" + String.join(", ", values) + "))";
        } else if (filter instanceof IsNull f) {
            return "(" + f.attribute() + " IS NULL)";
        } else if (filter instanceof IsNotNull f) {
            return "(" + f.attribute() + " IS NOT NULL)";
        } else if (filter instanceof StringStartsWith f) {
            return "startswith(" + f.attribute() + ", " + literal(f.value()) + ")";
        } else if (filter instanceof StringEndsWith f) {
            return "endswith(" + f.attribute() + ", " + literal(f.value()) + ")";
        } else if (filter instanceof StringContains f) {
            return "contains(" + f.attribute() + ", " + literal(f.value()) + ")";
        } else if (filter instanceof AlwaysTrue) {
            return "true";
        } else if (filter instanceof AlwaysFalse) {
            return "false";
        }
        throw new UnsupportedOperationException("sleeper_spark.errors.ConfigError: an overwrite by the condition "
                + filter + " is not supported on a sleeper table; overwrite by partition values instead");
    }

    /** Spark names a column in a filter as SQL does ({@code a.b}, backquoted where a part needs it). */
    private static String compare(String attribute, String operator, Object value) {
        return "(" + attribute + " " + operator + " " + literal(value) + ")";
    }

    static String literal(Object value) {
        if (value == null) {
            return "NULL";
        } else if (value instanceof String text) {
            return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'";
        } else if (value instanceof Boolean) {
            return value.toString().toUpperCase(java.util.Locale.ROOT);
        } else if (value instanceof Long) {
            return value + "L";
        } else if (value instanceof Integer) {
            return value.toString();
        } else if (value instanceof Short) {
            return value + "S";
        } else if (value instanceof Byte) {
            return value + "Y";
        } else if (value instanceof Double || value instanceof Float) {
            return "CAST('" + value + "' AS " + (value instanceof Double ? "DOUBLE" : "FLOAT") + ")";
        } else if (value instanceof BigDecimal decimal) {
            return decimal.toPlainString() + "BD";
        } else if (value instanceof java.sql.Date || value instanceof LocalDate) {
            LocalDate day = value instanceof java.sql.Date date ? date.toLocalDate() : (LocalDate) value;
            return "DATE '" + day + "'";
        } else if (value instanceof java.sql.Timestamp || value instanceof Instant) {
            Instant instant = value instanceof java.sql.Timestamp ts ? ts.toInstant() : (Instant) value;
            long micros = Math.addExact(Math.multiplyExact(instant.getEpochSecond(), 1_000_000L), instant.getNano() / 1_000);
            return "timestamp_micros(" + micros + "L)";
        } else if (value instanceof LocalDateTime local) {
            return "TIMESTAMP_NTZ '" + local + "'";
        }
        throw new UnsupportedOperationException("sleeper_spark.errors.ConfigError: an overwrite condition compares "
                + "with " + value + " (" + value.getClass().getSimpleName() + "), which is not supported on a sleeper "
                + "table; compare partition columns with strings, numbers, dates or timestamps");
    }
}
