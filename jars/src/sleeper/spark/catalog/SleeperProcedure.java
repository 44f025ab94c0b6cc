package sleeper.spark.catalog;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.procedures.BoundProcedure;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * One of the catalog's procedures ({@code CALL lake.system.compact(table => 'db.t')}): its
 * parameters come from the driver's Python side, which also runs it (see
 * {@code sleeper_spark.spark.sql.procedures}); a parameter other than {@code table} may be left out.
 */
final class SleeperProcedure implements UnboundProcedure, BoundProcedure {
    private final CatalogOfTables catalog;
    private final String name;
    private final String description;
    private final ProcedureParameter[] parameters;
    private final String[] types;

    private SleeperProcedure(CatalogOfTables catalog, String name, String description, ProcedureParameter[] parameters,
                             String[] types) {
        this.catalog = catalog;
        this.name = name;
        this.description = description;
        this.parameters = parameters;
        this.types = types;
    }

    /** The procedure the Python side described: {@code {"parameters": [{"name", "type", "required"}], "description"}}. */
    static SleeperProcedure of(CatalogOfTables catalog, String name, JsonNode spec) {
        List<ProcedureParameter> parameters = new ArrayList<>();
        List<String> types = new ArrayList<>();
        for (JsonNode parameter : spec.get("parameters")) {
            String type = parameter.get("type").asText();
            ProcedureParameter.Builder builder = ProcedureParameter.in(parameter.get("name").asText(), sparkType(type));
            if (!parameter.get("required").asBoolean()) {
                builder = builder.defaultValue("NULL"); // left out: the Python API's default
            }
            parameters.add(builder.build());
            types.add(type);
        }
        return new SleeperProcedure(catalog, name, spec.path("description").asText(""),
                parameters.toArray(new ProcedureParameter[0]), types.toArray(new String[0]));
    }

    private static DataType sparkType(String type) {
        return switch (type) {
            case "long" -> DataTypes.LongType;
            case "boolean" -> DataTypes.BooleanType;
            default -> DataTypes.StringType;
        };
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String description() {
        return description;
    }

    @Override
    public BoundProcedure bind(StructType inputType) {
        return this;
    }

    @Override
    public ProcedureParameter[] parameters() {
        return parameters;
    }

    @Override
    public boolean isDeterministic() {
        return false;
    }

    @Override
    public Iterator<Scan> call(InternalRow input) {
        ObjectNode arguments = catalog.json().createObjectNode();
        for (int i = 0; i < parameters.length; i++) {
            String parameter = parameters[i].name();
            if (input.isNullAt(i)) {
                arguments.putNull(parameter);
            } else if (types[i].equals("long")) {
                arguments.put(parameter, input.getLong(i));
            } else if (types[i].equals("boolean")) {
                arguments.put(parameter, input.getBoolean(i));
            } else {
                arguments.put(parameter, input.getUTF8String(i).toString());
            }
        }
        JsonNode answer = catalog.call(catalog.procedureCall(name, arguments));
        return List.<Scan>of(MetadataTable.rowsOf(answer)).iterator();
    }

}
