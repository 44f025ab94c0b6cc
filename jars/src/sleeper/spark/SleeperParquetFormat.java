package sleeper.spark;

import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Job;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.apache.spark.sql.sources.Not;
import org.apache.spark.sql.sources.Or;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.AccumulatorContext;
import org.apache.spark.util.AccumulatorV2;
import org.apache.spark.util.CollectionAccumulator;
import scala.Function1;
import scala.Option;
import scala.collection.Iterator;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import sleeper.spark.facts.FactsWriterFactory;

/**
 * Spark's Parquet format, as sleeper_spark reads and writes it.
 *
 * <p>Writing: given the option {@value #FACTS_OPTION} (the id of a driver's
 * {@code CollectionAccumulator<String>}), each file is written by Spark's Parquet writer wrapped
 * by a {@link FactsWriterFactory}, which describes the file into that accumulator (size and
 * checksum taken from the bytes as Spark's writer emits them), so that the driver learns every
 * committed file's facts without listing or reading anything. Without the option it writes as
 * Spark does.
 *
 * <p>Reading: it hands parquet-mr only the pushed filters that parquet-mr evaluates correctly.
 *
 * <p>Spark pushes a date or timestamp literal down as a {@code java.sql.Date} or {@code Timestamp}
 * (the hybrid Julian calendar) and parquet-mr's filters turn it back into days or microseconds.
 * The round trip moves a value in the calendars' gap (1582-10-05 to 1582-10-14 become
 * 1582-10-15) and may move older values by the calendars' and the old time zones' differences,
 * so parquet-mr would skip row groups that hold matching rows. Filters with such a literal, one
 * before 1900, are kept from parquet-mr; the rest of a conjunction still goes. Every data filter
 * is evaluated again on each row Spark reads, so handing parquet-mr less only skips less.
 */
public final class SleeperParquetFormat extends ParquetFileFormat {
    /** The write option naming the accumulator (its id) that collects the facts of each file. */
    public static final String FACTS_OPTION = "sleeper.facts.accumulator";
    private static final long serialVersionUID = 1L;
    /** 1900-01-01T00:00:00Z less a day, in milliseconds since the epoch: a margin for time zones. */
    private static final long OLDEST_EXACT_MILLIS = -2_209_075_200_000L;
    private static final LocalDate OLDEST_EXACT_DATE = LocalDate.of(1900, 1, 2);

    @Override
    public Function1<PartitionedFile, Iterator<InternalRow>> buildReaderWithPartitionValues(
            SparkSession sparkSession, StructType dataSchema, StructType partitionSchema, StructType requiredSchema,
            Seq<Filter> filters, Map<String, String> options, Configuration hadoopConf) {
        return super.buildReaderWithPartitionValues(sparkSession, dataSchema, partitionSchema, requiredSchema,
                exactFilters(filters), options, hadoopConf);
    }

    @Override
    public OutputWriterFactory prepareWrite(SparkSession sparkSession, Job job, Map<String, String> options,
                                            StructType dataSchema) {
        OutputWriterFactory parquet = super.prepareWrite(sparkSession, job, options, dataSchema);
        Option<String> id = options.get(FACTS_OPTION);
        if (id.isEmpty()) {
            return parquet;
        }
        Option<AccumulatorV2<?, ?>> found = AccumulatorContext.get(Long.parseLong(id.get()));
        if (found.isEmpty() || !(found.get() instanceof CollectionAccumulator<?>)) {
            throw new IllegalArgumentException("no collection accumulator with id " + id.get() + " on the driver");
        }
        @SuppressWarnings("unchecked")
        CollectionAccumulator<String> facts = (CollectionAccumulator<String>) found.get();
        return new FactsWriterFactory(parquet, facts);
    }

    /** The filters, or the parts of them, whose literals reach parquet-mr unchanged. */
    public static Seq<Filter> exactFilters(Seq<Filter> filters) {
        List<Filter> kept = new ArrayList<>();
        for (Filter filter : CollectionConverters.asJava(filters)) {
            Filter exact = exactPart(filter);
            if (exact != null) {
                kept.add(exact);
            }
        }
        return CollectionConverters.asScala(kept).toSeq();
    }

    /** What of {@code filter} parquet-mr may use: a weaker filter (half of an AND), itself, or null. */
    private static Filter exactPart(Filter filter) {
        if (filter instanceof And and) {
            Filter left = exactPart(and.left());
            Filter right = exactPart(and.right());
            if (left == null || right == null) {
                return left == null ? right : left;
            }
            return left == and.left() && right == and.right() ? filter : new And(left, right);
        }
        return hasInexactLiteral(filter) ? null : filter;
    }

    private static boolean hasInexactLiteral(Filter filter) {
        if (filter instanceof And and) {
            return hasInexactLiteral(and.left()) || hasInexactLiteral(and.right());
        } else if (filter instanceof Or or) {
            return hasInexactLiteral(or.left()) || hasInexactLiteral(or.right());
        } else if (filter instanceof Not not) {
            return hasInexactLiteral(not.child());
        } else if (filter instanceof In in) {
            for (Object value : in.values()) {
                if (isInexact(value)) {
                    return true;
                }
            }
            return false;
        }
        return isInexact(literal(filter));
    }

    private static Object literal(Filter filter) {
        if (filter instanceof EqualTo f) {
            return f.value();
        } else if (filter instanceof EqualNullSafe f) {
            return f.value();
        } else if (filter instanceof GreaterThan f) {
            return f.value();
        } else if (filter instanceof GreaterThanOrEqual f) {
            return f.value();
        } else if (filter instanceof LessThan f) {
            return f.value();
        } else if (filter instanceof LessThanOrEqual f) {
            return f.value();
        }
        return null;
    }

    private static boolean isInexact(Object value) {
        if (value instanceof java.util.Date date) { // java.sql.Date and java.sql.Timestamp
            return date.getTime() < OLDEST_EXACT_MILLIS;
        } else if (value instanceof LocalDate date) {
            return date.isBefore(OLDEST_EXACT_DATE);
        } else if (value instanceof Instant instant) {
            return instant.toEpochMilli() < OLDEST_EXACT_MILLIS;
        }
        return false;
    }
}
