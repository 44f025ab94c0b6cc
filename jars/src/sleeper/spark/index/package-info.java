/**
 * Spark's file index over one version of a table ({@link sleeper.spark.index.SleeperFileIndex}):
 * the version's files as the Python driver hands them over, and the skipping of files whose
 * statistics rule out a query's data filters.
 */
package sleeper.spark.index;
