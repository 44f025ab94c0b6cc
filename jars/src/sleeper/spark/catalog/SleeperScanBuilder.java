package sleeper.spark.catalog;

import java.util.Arrays;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScanBuilder;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.jdk.javaapi.CollectionConverters;
import sleeper.spark.SleeperParquetFormat;

/**
 * Spark's Parquet scan builder, handing parquet-mr only the filters it evaluates exactly (see
 * {@link SleeperParquetFormat}): the same reader a {@code format("sleeper")} read gets.
 */
final class SleeperScanBuilder extends ParquetScanBuilder {
    private static final long serialVersionUID = 1L;

    SleeperScanBuilder(SparkSession spark, PartitioningAwareFileIndex index, StructType schema, StructType dataSchema,
                       CaseInsensitiveStringMap options) {
        super(spark, index, schema, dataSchema, options);
    }

    @Override
    public Filter[] pushDataFilters(Filter[] filters) {
        scala.collection.immutable.Seq<Filter> exact = SleeperParquetFormat.exactFilters(
                CollectionConverters.asScala(Arrays.asList(filters)).toSeq());
        return super.pushDataFilters(CollectionConverters.asJava(exact).toArray(new Filter[0]));
    }
}
