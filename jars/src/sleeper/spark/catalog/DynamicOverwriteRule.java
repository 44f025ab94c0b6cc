package sleeper.spark.catalog;

import java.util.HashMap;
import java.util.Map;

import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
import org.apache.spark.sql.catalyst.plans.logical.OverwritePartitionsDynamic;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark runs a dynamic partition overwrite ({@code df.writeTo(t).overwritePartitions()},
 * {@code INSERT OVERWRITE} with {@code spark.sql.sources.partitionOverwriteMode=dynamic}) only
 * through a V2 {@code BatchWrite}, while a sleeper table's writes take Spark's V1 fallback (the
 * driver's Python side commits them). This rule states such a write on a sleeper table as what it
 * is to the Python side: an overwrite of the whole table with the write option
 * {@code partitionOverwriteMode=dynamic}, which replaces only the partitions the rows fall in.
 */
public final class DynamicOverwriteRule extends Rule<LogicalPlan> {
    static final String MODE_OPTION = "partitionOverwriteMode";

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        return plan.transformDown(Rewrite.of(DynamicOverwriteRule::onSleeperTable, DynamicOverwriteRule::restated));
    }

    private static boolean onSleeperTable(LogicalPlan node) {
        return node instanceof OverwritePartitionsDynamic overwrite
                && overwrite.table() instanceof DataSourceV2Relation relation
                && relation.table() instanceof SleeperTable;
    }

    /** The dynamic overwrite as an overwrite of the whole table with {@code partitionOverwriteMode=dynamic}. */
    private static LogicalPlan restated(LogicalPlan node) {
        OverwritePartitionsDynamic overwrite = (OverwritePartitionsDynamic) node;
        Map<String, String> options = new HashMap<>(CollectionConverters.asJava(overwrite.writeOptions()));
        options.put(MODE_OPTION, "dynamic");
        return new OverwriteByExpression(overwrite.table(), Literal.TrueLiteral(), overwrite.query(),
                scala.collection.immutable.Map.from(CollectionConverters.asScala(options)), overwrite.isByName(),
                overwrite.withSchemaEvolution(), Option.empty(), Option.empty());
    }
}
