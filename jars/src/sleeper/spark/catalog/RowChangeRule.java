package sleeper.spark.catalog;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.catalyst.analysis.EliminateSubqueryAliases;
import org.apache.spark.sql.catalyst.analysis.ResolvedProcedure;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.Assignment;
import org.apache.spark.sql.catalyst.plans.logical.Call;
import org.apache.spark.sql.catalyst.plans.logical.DeleteAction;
import org.apache.spark.sql.catalyst.plans.logical.DeleteFromTable;
import org.apache.spark.sql.catalyst.plans.logical.InsertAction;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.MergeAction;
import org.apache.spark.sql.catalyst.plans.logical.MergeIntoTable;
import org.apache.spark.sql.catalyst.plans.logical.UpdateAction;
import org.apache.spark.sql.catalyst.plans.logical.UpdateTable;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Turns {@code MERGE INTO}, {@code UPDATE} and {@code DELETE FROM} on a sleeper catalog's table,
 * once Spark has resolved them, into a call of the driver's Python side (a {@link RowChangeCommand}
 * that Spark runs as it runs a {@code CALL}).
 *
 * <p>What crosses over is the statement's meaning, not its text: each condition and value as
 * Spark resolved it (its casts and functions), printed back as Spark SQL over the aliases
 * {@code target} and {@code source} (see {@link ConditionText}), and the source as the resolved
 * plan it is. The Python builders then prune files, check what they read at commit and count
 * what they did exactly as {@code t.merge}, {@code t.update} and {@code t.delete_where} do.
 */
public final class RowChangeRule extends Rule<LogicalPlan> {
    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        return plan.transformDown(Rewrite.of(node -> node.resolved() && target(node) != null,
                node -> rewrite(node, target(node))));
    }

    /** The sleeper table a row change targets, or null for any other plan. */
    private static DataSourceV2Relation target(LogicalPlan node) {
        LogicalPlan table;
        if (node instanceof MergeIntoTable merge) {
            table = merge.targetTable();
        } else if (node instanceof UpdateTable update) {
            table = update.table();
        } else if (node instanceof DeleteFromTable delete) {
            table = delete.table();
        } else {
            return null;
        }
        LogicalPlan relation = EliminateSubqueryAliases.apply(table);
        if (relation instanceof DataSourceV2Relation v2 && v2.table() instanceof SleeperTable) {
            return v2;
        }
        return null;
    }

    private static LogicalPlan rewrite(LogicalPlan node, DataSourceV2Relation relation) {
        SleeperTable table = (SleeperTable) relation.table();
        table.checkWritable(node.nodeName());
        CatalogOfTables catalog = table.catalog();
        ObjectNode request = catalog.json().createObjectNode();
        request.put("table", table.tableName());
        LogicalPlan source = null;
        if (node instanceof MergeIntoTable merge) {
            // MERGE WITH SCHEMA EVOLUTION: Spark has added the source's new columns (ALTER TABLE) before this.
            source = merge.sourceTable();
            Map<ExprId, String> sides = sides(relation.output(), "target");
            sides.putAll(sides(source.output(), "source"));
            request.put("op", "merge");
            request.put("condition", ConditionText.of(merge.mergeCondition(), sides));
            request.set("matched", clauses(catalog, merge.matchedActions(), sides));
            request.set("notMatched", clauses(catalog, merge.notMatchedActions(), sides));
            request.set("notMatchedBySource", clauses(catalog, merge.notMatchedBySourceActions(), sides));
        } else if (node instanceof UpdateTable update) {
            Map<ExprId, String> sides = sides(relation.output(), "");
            request.put("op", "update");
            request.set("values", values(catalog, update.assignments(), sides));
            putCondition(request, update.condition(), sides);
        } else {
            DeleteFromTable delete = (DeleteFromTable) node;
            request.put("op", "delete");
            putCondition(request, Option.apply(delete.condition()), sides(relation.output(), ""));
        }
        RowChangeCommand command = new RowChangeCommand(catalog, request, source);
        Identifier ident = Identifier.of(new String[] {"system"}, request.get("op").asText());
        return new Call(new ResolvedProcedure(catalog, ident, command), emptySeq(), true);
    }

    private static Map<ExprId, String> sides(Seq<? extends Attribute> output, String side) {
        Map<ExprId, String> sides = new HashMap<>();
        for (Attribute attribute : CollectionConverters.asJava(output)) {
            sides.put(attribute.exprId(), side);
        }
        return sides;
    }

    private static ArrayNode clauses(CatalogOfTables catalog, Seq<MergeAction> actions, Map<ExprId, String> sides) {
        ArrayNode clauses = catalog.json().createArrayNode();
        for (MergeAction action : CollectionConverters.asJava(actions)) {
            ObjectNode clause = clauses.addObject();
            if (action instanceof UpdateAction update) {
                clause.put("kind", "update");
                clause.set("values", values(catalog, update.assignments(), sides));
            } else if (action instanceof InsertAction insert) {
                clause.put("kind", "insert");
                clause.set("values", values(catalog, insert.assignments(), sides));
            } else if (action instanceof DeleteAction) {
                clause.put("kind", "delete");
            } else {
                throw new UnsupportedOperationException("sleeper_spark.errors.ConfigError: a MERGE clause "
                        + action.sql() + " is not supported on a sleeper table");
            }
            putCondition(clause, action.condition(), sides);
        }
        return clauses;
    }

    private static ObjectNode values(CatalogOfTables catalog, Seq<Assignment> assignments, Map<ExprId, String> sides) {
        ObjectNode values = catalog.json().createObjectNode();
        for (Assignment assignment : CollectionConverters.asJava(assignments)) {
            if (!(assignment.key() instanceof AttributeReference column)) {
                throw new UnsupportedOperationException("sleeper_spark.errors.ConfigError: " + assignment.key().sql()
                        + " is a field inside a column; set the whole column (e.g. with named_struct(...))");
            }
            values.put(column.name(), ConditionText.of(assignment.value(), sides));
        }
        return values;
    }

    private static void putCondition(ObjectNode node, Option<Expression> condition, Map<ExprId, String> sides) {
        if (condition.isDefined()) {
            node.put("condition", ConditionText.of(condition.get(), sides));
        } else {
            node.putNull("condition");
        }
    }

    private static Seq<Expression> emptySeq() {
        List<Expression> none = new ArrayList<>();
        return CollectionConverters.asScala(none).toSeq();
    }
}
