package sleeper.spark.catalog;

/**
 * A session catalog's metastore that cannot be reached (down, a wrong {@code hive.metastore.uris},
 * a network in the way), told apart from Spark's other catalog errors and said as sleeper_spark's
 * {@code StorageError} with what to check; any other failure passes through as it was.
 */
final class MetastoreFailures {
    // What the Hive metastore client's failures to connect carry, anywhere along the causes.
    private static final String[] MARKS = {"TTransportException", "java.net.ConnectException",
        "SessionHiveMetaStoreClient", "Could not connect to meta store"};

    private MetastoreFailures() {
    }

    /** {@code failure} as Spark's callers should see it: a StorageError where the metastore is unreachable. */
    static RuntimeException said(Exception failure, String what) {
        if (unreachable(failure)) {
            return new IllegalStateException("sleeper_spark.errors.StorageError: Spark's session catalog could not "
                    + "reach its metastore while it " + what + " (" + firstLine(failure) + "); nothing was written. "
                    + "Check that the metastore is up and that hive.metastore.uris (spark.hadoop.hive.metastore.uris"
                    + ") names it, then run the statement again", failure);
        }
        return MetastoreFailures.<RuntimeException>unchanged(failure);
    }

    static boolean unreachable(Throwable failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            String text = cause.getClass().getName() + ": " + cause.getMessage();
            for (String mark : MARKS) {
                if (text.contains(mark)) {
                    return true;
                }
            }
            if (cause.getCause() == cause) {
                break;
            }
        }
        return false;
    }

    private static String firstLine(Throwable failure) {
        String message = String.valueOf(failure.getMessage());
        int end = message.indexOf('\n');
        return end < 0 ? message : message.substring(0, end);
    }

    // Spark's AnalysisException is checked in Java's eyes only: it passes on unwrapped.
    @SuppressWarnings("unchecked")
    private static <E extends Exception> RuntimeException unchanged(Exception failure) throws E {
        throw (E) failure;
    }
}
