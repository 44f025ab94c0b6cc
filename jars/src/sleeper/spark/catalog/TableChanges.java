package sleeper.spark.catalog;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.expressions.NamedReference;

/**
 * {@code ALTER TABLE}'s changes as the Python side takes them: one JSON object each, with a
 * {@code kind}; a kind sleeper tables do not support goes by its class name, and the Python side
 * refuses the whole statement before anything is committed.
 */
final class TableChanges {
    private TableChanges() {
    }

    static ArrayNode json(ObjectMapper json, TableChange... changes) {
        ArrayNode list = json.createArrayNode();
        for (TableChange change : changes) {
            ObjectNode node = list.addObject();
            if (change instanceof TableChange.AddColumn add) {
                column(node, "addColumn", add.fieldNames());
                node.put("type", add.dataType().json());
                node.put("nullable", add.isNullable());
                node.put("positioned", add.position() != null);
                node.put("hasDefault", add.defaultValue() != null);
            } else if (change instanceof TableChange.UpdateColumnType widen) {
                column(node, "widenColumn", widen.fieldNames());
                node.put("type", widen.newDataType().json());
            } else if (change instanceof TableChange.DeleteColumn drop) {
                column(node, "dropColumn", drop.fieldNames());
                node.put("ifExists", Boolean.TRUE.equals(drop.ifExists()));
            } else if (change instanceof TableChange.SetProperty set) {
                node.put("kind", "setProperty");
                node.put("key", set.property());
                node.put("value", set.value());
            } else if (change instanceof TableChange.RemoveProperty remove) {
                node.put("kind", "removeProperty");
                node.put("key", remove.property());
            } else if (change instanceof TableChange.ClusterBy clusterBy) { // CLUSTER BY (...) / CLUSTER BY NONE
                node.put("kind", "clusterBy");
                ArrayNode columns = node.putArray("columns");
                for (NamedReference column : clusterBy.clusteringColumns()) {
                    columns.add(String.join(".", column.fieldNames()));
                }
            } else {
                node.put("kind", change.getClass().getSimpleName());
            }
        }
        return list;
    }

    private static void column(ObjectNode node, String kind, String[] fieldNames) {
        node.put("kind", kind);
        node.put("name", String.join(".", fieldNames));
        node.put("nested", fieldNames.length > 1);
    }
}
