package sleeper.spark;

import sleeper.spark.catalog.CatalogOfTables;

/**
 * A sleeper_spark catalog as a Spark SQL catalog: {@code spark.sql.catalog.lake=sleeper.spark.SleeperCatalog},
 * with the catalog's options as {@code spark.sql.catalog.lake.<key>} ({@code ss.catalog_conf} writes
 * them). The name users configure; the catalog itself is {@link CatalogOfTables}.
 */
public final class SleeperCatalog extends CatalogOfTables {
}
