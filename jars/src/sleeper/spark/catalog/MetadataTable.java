package sleeper.spark.catalog;

import java.time.Instant;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.CatalogV2Util;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Function1;

/**
 * A table's {@code history} or {@code files}: a few rows the driver's Python side computes from
 * the log (see {@code sleeper_spark.spark.sql.metadata_tables}), read as a local scan.
 */
final class MetadataTable implements SupportsRead {
    static final Set<String> KINDS = Set.of("history", "files");

    private final String name;
    private final StructType schema;
    private final InternalRow[] rows;

    private MetadataTable(String name, StructType schema, InternalRow[] rows) {
        this.name = name;
        this.schema = schema;
        this.rows = rows;
    }

    /** The table of the Python side's answer: {@code {"schema": <Spark schema JSON>, "rows": [[value, ...], ...]}}. */
    static MetadataTable of(String name, JsonNode answer) {
        Rows rows = rowsOf(answer);
        return new MetadataTable(name, rows.readSchema(), rows.rows());
    }

    /** The Python side's rows (see {@link #of}) as a local scan: also what a procedure answers. */
    static Rows rowsOf(JsonNode answer) {
        StructType schema = (StructType) DataType.fromJson(answer.get("schema").asText());
        Function1<Object, Object> toCatalyst = CatalystTypeConverters.createToCatalystConverter(schema);
        JsonNode list = answer.get("rows");
        InternalRow[] rows = new InternalRow[list.size()];
        for (int i = 0; i < rows.length; i++) {
            rows[i] = (InternalRow) toCatalyst.apply(row(schema, list.get(i)));
        }
        return new Rows(schema, rows);
    }

    private static Row row(StructType schema, JsonNode values) {
        StructField[] fields = schema.fields();
        Object[] row = new Object[fields.length];
        for (int i = 0; i < fields.length; i++) {
            row[i] = value(fields[i].dataType(), values.get(i));
        }
        return RowFactory.create(row);
    }

    private static Object value(DataType type, JsonNode node) {
        if (node == null || node.isNull()) {
            return null;
        }
        if (type.equals(DataTypes.LongType)) {
            return node.asLong();
        }
        if (type.equals(DataTypes.BooleanType)) {
            return node.asBoolean();
        }
        if (type.equals(DataTypes.TimestampType)) {
            long micros = node.asLong();
            return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1000L);
        }
        if (type instanceof MapType map) {
            Map<String, Object> entries = new HashMap<>();
            for (Map.Entry<String, JsonNode> entry : node.properties()) {
                entries.put(entry.getKey(), value(map.valueType(), entry.getValue()));
            }
            return entries;
        }
        if (type instanceof StructType struct) {
            return row(struct, node);
        }
        return node.asText();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Column[] columns() {
        return CatalogV2Util.structTypeToV2Columns(schema, false);
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        return () -> new Rows(schema, rows);
    }

    record Rows(StructType readSchema, InternalRow[] rows) implements LocalScan {
        @Override
        public StructType readSchema() {
            return readSchema;
        }

        @Override
        public InternalRow[] rows() {
            return rows;
        }

        @Override
        public Scan.ColumnarSupportMode columnarSupportMode() {
            return Scan.ColumnarSupportMode.UNSUPPORTED;
        }
    }
}
