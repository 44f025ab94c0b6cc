package sleeper.spark.catalog;

import java.util.Arrays;

import org.apache.spark.sql.connector.catalog.Identifier;

/**
 * How Spark's names map to sleeper_spark's: a namespace is a prefix of the table's name, so
 * {@code Identifier([sales], orders)} is the table {@code sales.orders}, and a nested namespace
 * adds a part for each level ({@code [a, b], t} is {@code a.b.t}).
 */
final class TableNames {
    private TableNames() {
    }

    static String of(Identifier ident) {
        if (ident.namespace().length == 0) {
            return ident.name();
        }
        return String.join(".", ident.namespace()) + "." + ident.name();
    }

    static Identifier identifier(String table) {
        String[] parts = table.split("\\.", -1);
        return Identifier.of(Arrays.copyOf(parts, parts.length - 1), parts[parts.length - 1]);
    }
}
