package sleeper.spark.catalog;

import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.plans.logical.AppendData;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
import org.apache.spark.sql.catalyst.plans.logical.OverwritePartitionsDynamic;
import org.apache.spark.sql.catalyst.plans.logical.V2WriteCommand;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.catalog.CatalogManager;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The write option {@code mergeSchema=true} on a sleeper catalog's table
 * ({@code df.writeTo("lake.db.t").option("mergeSchema", "true").append()}) as Spark's own schema
 * evolution: the write is marked {@code WITH SCHEMA EVOLUTION}, so Spark adds the columns the
 * rows bring (through {@code ALTER TABLE ... ADD COLUMNS}) before it checks them against the
 * table. The mark must be set before Spark resolves the table and checks the columns, so this
 * runs among the hint rules, when the table is still a name: a name in a catalog of sleeper
 * tables is a sleeper table.
 */
public final class MergeSchemaRule extends Rule<LogicalPlan> {
    private final org.apache.spark.sql.SparkSession session;

    public MergeSchemaRule(org.apache.spark.sql.SparkSession session) {
        this.session = session;
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        return plan.transformDown(Rewrite.of(this::marksToMerge, MergeSchemaRule::withSchemaEvolution));
    }

    private boolean marksToMerge(LogicalPlan node) {
        return node instanceof V2WriteCommand write && !write.withSchemaEvolution() && asksToMerge(node)
                && write.table() instanceof UnresolvedRelation relation && inSleeperCatalog(relation);
    }

    private static boolean asksToMerge(LogicalPlan node) {
        scala.collection.immutable.Map<String, String> options;
        if (node instanceof AppendData append) {
            options = append.writeOptions();
        } else if (node instanceof OverwriteByExpression overwrite) {
            options = overwrite.writeOptions();
        } else if (node instanceof OverwritePartitionsDynamic overwrite) {
            options = overwrite.writeOptions();
        } else {
            return false;
        }
        for (Map.Entry<String, String> option : CollectionConverters.asJava(options).entrySet()) {
            if (option.getKey().equalsIgnoreCase("mergeSchema") && option.getValue().equalsIgnoreCase("true")) {
                return true;
            }
        }
        return false;
    }

    private boolean inSleeperCatalog(UnresolvedRelation relation) {
        List<String> parts = CollectionConverters.asJava(relation.multipartIdentifier());
        CatalogManager catalogs = ((SparkSession) session).sessionState().catalogManager();
        if (parts.size() > 1 && catalogs.isCatalogRegistered(parts.get(0))) {
            return catalogs.catalog(parts.get(0)) instanceof CatalogOfTables;
        }
        return catalogs.currentCatalog() instanceof CatalogOfTables;
    }

    private static LogicalPlan withSchemaEvolution(LogicalPlan node) {
        if (node instanceof AppendData a) {
            return new AppendData(a.table(), a.query(), a.writeOptions(), a.isByName(), true, a.write(),
                    a.analyzedQuery());
        } else if (node instanceof OverwriteByExpression o) {
            return new OverwriteByExpression(o.table(), o.deleteExpr(), o.query(), o.writeOptions(), o.isByName(),
                    true, o.write(), o.analyzedQuery());
        }
        OverwritePartitionsDynamic d = (OverwritePartitionsDynamic) node;
        return new OverwritePartitionsDynamic(d.table(), d.query(), d.writeOptions(), d.isByName(), true, d.write());
    }
}
