package sleeper.spark.catalog;

import java.util.Iterator;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.read.Scan;

/**
 * One {@code MERGE INTO}, {@code UPDATE} or {@code DELETE FROM} of a sleeper table, run by the
 * driver's Python side when Spark executes it (as it executes a procedure): the request says what
 * to change (see {@link RowChangeRule}), the source plan is a merge's {@code USING} relation. The
 * answer is one row of counts, as Delta's statements answer.
 */
final class RowChangeCommand implements BoundProcedure {
    private final CatalogOfTables catalog;
    private final ObjectNode request;
    private final LogicalPlan source; // null: an update or a delete

    RowChangeCommand(CatalogOfTables catalog, ObjectNode request, LogicalPlan source) {
        this.catalog = catalog;
        this.request = request;
        this.source = source;
    }

    @Override
    public String name() {
        return request.get("op").asText();
    }

    @Override
    public String description() {
        return request.get("op").asText() + " of " + request.get("table").asText();
    }

    @Override
    public ProcedureParameter[] parameters() {
        return new ProcedureParameter[0];
    }

    @Override
    public boolean isDeterministic() {
        return false;
    }

    @Override
    public Iterator<Scan> call(InternalRow input) {
        SparkSession spark = SparkSession.active();
        Dataset<Row> rows = source == null ? null : Dataset.ofRows(spark, source);
        JsonNode answer = catalog.changeRows(request, rows);
        return List.<Scan>of(MetadataTable.rowsOf(answer)).iterator();
    }
}
