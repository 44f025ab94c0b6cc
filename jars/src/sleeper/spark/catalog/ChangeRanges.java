package sleeper.spark.catalog;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.connector.catalog.ChangelogRange;

/**
 * A changes read's range as the Python side takes it: {@code {"kind": "version" | "timestamp" |
 * "unbounded", "start", "end", "startInclusive", "endInclusive"}}; versions as Spark gives them
 * (text), timestamps in microseconds since the epoch, a missing end as null.
 */
final class ChangeRanges {
    private ChangeRanges() {
    }

    static ObjectNode json(ObjectMapper json, ChangelogRange range) {
        ObjectNode node = json.createObjectNode();
        node.put("startInclusive", range.startingBoundInclusive());
        node.put("endInclusive", range.endingBoundInclusive());
        if (range instanceof ChangelogRange.VersionRange versions) {
            node.put("kind", "version");
            node.put("start", versions.startingVersion());
            node.put("end", versions.endingVersion().orElse(null));
        } else if (range instanceof ChangelogRange.TimestampRange times) {
            node.put("kind", "timestamp");
            node.put("start", times.startingTimestamp());
            node.put("end", times.endingTimestamp().orElse(null));
        } else {
            node.put("kind", "unbounded");
        }
        return node;
    }
}
