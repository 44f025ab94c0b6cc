/**
 * The classes named from outside the jar: in a session's configuration ({@link
 * sleeper.spark.SleeperCatalog}, {@link sleeper.spark.SleeperExtensions}), by Spark's data source
 * lookup ({@link sleeper.spark.SleeperSource}, {@code format("sleeper")}), and by the Python side
 * ({@link sleeper.spark.NativeTables}, its py4j entry point, and {@link
 * sleeper.spark.SleeperParquetFormat}, the format its writes name).
 *
 * <p>Behind them: {@code bridge}, the driver's Python side as the JVM calls it; {@code index},
 * Spark's file index over a table version and the skipping of files by their statistics;
 * {@code facts}, what a write learns of each file it writes; {@code catalog}, the Spark SQL
 * catalog's tables and statements.
 */
package sleeper.spark;
