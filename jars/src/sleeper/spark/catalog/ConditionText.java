package sleeper.spark.catalog;

import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A resolved condition or value as Spark SQL text over the names the Python builders use:
 * {@code target.<column>} and {@code source.<column>} in a merge, bare column names in an update
 * or delete. Spark prints a resolved expression with the casts its analysis added, so the text
 * means what the statement meant; printing goes through {@link Expression#sql()}, whose output
 * Spark's parser reads back.
 */
final class ConditionText {
    private ConditionText() {
    }

    /** {@code expression} printed with each column named by its side ({@code ""}: unqualified). */
    static String of(Expression expression, Map<ExprId, String> sides) {
        if (SubqueryExpression.hasSubquery(expression)) {
            throw new UnsupportedOperationException("sleeper_spark.errors.ConfigError: a subquery in a MERGE, UPDATE "
                    + "or DELETE condition is not supported on a sleeper table: join what it reads into the source "
                    + "(MERGE INTO ... USING (SELECT ...)) instead; in " + expression.sql());
        }
        Expression named = expression.transformUp(Rewrite.of(node -> node instanceof AttributeReference,
                node -> named((AttributeReference) node, sides)));
        return named.sql();
    }

    private static Expression named(AttributeReference column, Map<ExprId, String> sides) {
        String side = sides.get(column.exprId());
        if (side == null) {
            throw new UnsupportedOperationException("sleeper_spark.errors.ConfigError: " + column.sql()
                    + " is neither a column of the table nor of the source");
        }
        List<String> qualifier = side.isEmpty() ? List.of() : List.of(side);
        return column.withQualifier(CollectionConverters.asScala(qualifier).toSeq());
    }
}
