package sleeper.spark;

import sleeper.spark.catalog.SessionCatalogOfTables;

/**
 * Spark's session catalog with sleeper tables in it:
 * {@code spark.sql.catalog.spark_catalog=sleeper.spark.SleeperSessionCatalog}, with a sleeper
 * catalog's options as {@code spark.sql.catalog.spark_catalog.<key>} ({@code ss.catalog_conf}
 * writes them). Tables of every other provider stay Spark's. The name users configure; the
 * catalog itself is {@link SessionCatalogOfTables}.
 */
public final class SleeperSessionCatalog extends SessionCatalogOfTables {
}
