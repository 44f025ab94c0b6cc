package sleeper.spark.catalog;

import java.util.HashMap;
import java.util.Map;

import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
import org.apache.spark.sql.catalyst.plans.logical.OverwritePartitionsDynamic;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import scala.Function1;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;

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
        return plan.transformDown(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
            @Override
            public boolean isDefinedAt(LogicalPlan node) {
                return node instanceof OverwritePartitionsDynamic overwrite
                        && overwrite.table() instanceof DataSourceV2Relation relation
                        && relation.table() instanceof SleeperTable;
            }

            @Override
            public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 node, Function1<A1, B1> otherwise) {
                if (!isDefinedAt(node)) {
                    return otherwise.apply(node);
                }
                OverwritePartitionsDynamic overwrite = (OverwritePartitionsDynamic) node;
                Map<String, String> options = new HashMap<>(CollectionConverters.asJava(overwrite.writeOptions()));
                options.put(MODE_OPTION, "dynamic");
                @SuppressWarnings("unchecked")
                B1 rewritten = (B1) new OverwriteByExpression(overwrite.table(), Literal.TrueLiteral(),
                        overwrite.query(), scala.collection.immutable.Map.from(CollectionConverters.asScala(options)),
                        overwrite.isByName(), overwrite.withSchemaEvolution(), Option.empty(), Option.empty());
                return rewritten;
            }
        });
    }
}
