package sleeper.spark.catalog;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusCache;
import org.apache.spark.sql.execution.datasources.NoopCache$;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.execution.datasources.PartitionPath;
import org.apache.spark.sql.execution.datasources.PartitionSpec;
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.collection.immutable.Seq;

/**
 * The version's file index in the shape Spark's Parquet scan (the DataSource V2 one) takes.
 *
 * <p>Spark's V2 file scan asks only for the partition schema and for {@code listFiles} with the
 * query's partition and data filters; both go to the table's own index, which lists nothing and
 * prunes by partition values and statistics. The directory views a listing index would keep
 * ({@code leafFiles}, {@code partitionSpec}'s paths) are never built: a sleeper table's files
 * come from its log.
 */
final class CatalogFileIndex extends PartitioningAwareFileIndex {
    private final FileIndex index;

    CatalogFileIndex(SparkSession spark, FileIndex index) {
        super(spark, scala.collection.immutable.Map$.MODULE$.empty(), Option.empty(),
                (FileStatusCache) NoopCache$.MODULE$);
        this.index = index;
    }

    @Override
    public PartitionSpec partitionSpec() {
        @SuppressWarnings("unchecked")
        Seq<PartitionPath> none = (Seq<PartitionPath>) (Object) scala.collection.immutable.Nil$.MODULE$;
        return new PartitionSpec(index.partitionSchema(), none);
    }

    @Override
    public scala.collection.mutable.LinkedHashMap<Path, FileStatus> leafFiles() {
        throw new UnsupportedOperationException("a sleeper table's files come from its log, not from a listing");
    }

    @Override
    public scala.collection.immutable.Map<Path, FileStatus[]> leafDirToChildrenFiles() {
        throw new UnsupportedOperationException("a sleeper table's files come from its log, not from a listing");
    }

    @Override
    public Seq<PartitionDirectory> listFiles(Seq<Expression> partitionFilters, Seq<Expression> dataFilters) {
        return index.listFiles(partitionFilters, dataFilters);
    }

    @Override
    public StructType partitionSchema() {
        return index.partitionSchema();
    }

    @Override
    public Seq<Path> rootPaths() {
        return index.rootPaths();
    }

    @Override
    public String[] inputFiles() {
        return index.inputFiles();
    }

    @Override
    public long sizeInBytes() {
        return index.sizeInBytes();
    }

    @Override
    public void refresh() {
        // A version's files never change.
    }

    @Override
    public String toString() {
        return index.toString();
    }
}
