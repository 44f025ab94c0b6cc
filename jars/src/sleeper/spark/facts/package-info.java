/**
 * What a write learns of each file it writes, without listing or reading anything back: rows and
 * per-column statistics from the rows written, size and SHA-256 from the bytes on their way to the
 * file system. {@link sleeper.spark.facts.FactsWriterFactory} wraps Spark's Parquet writers;
 * Hadoop names {@link sleeper.spark.facts.DigestingFileSystem} while a writer opens its file.
 */
package sleeper.spark.facts;
