package sleeper.spark.facts;

import java.io.IOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.types.StructType;

/**
 * The size and SHA-256 of one file, taken from its bytes as its writer hands them to the file
 * system, so that nothing is read back.
 *
 * <p>Parquet's writer opens its file through {@code path.getFileSystem(conf)} and offers no other
 * place to see its bytes. So while Spark's writer for the file is being created (it opens the
 * file then), the task's configuration names {@link DigestingFileSystem}, uncached, for the file's
 * scheme: the task's own file system for that scheme (the same instance, so URI, block size and
 * committer behave as they would), whose stream for this file digests what passes through.
 * Everything else the writer reads from the configuration (compression, row group and page
 * sizes, dictionary, timestamps, field ids) is the task's. The configuration is restored as soon
 * as the writer exists: the committer, and the writer's later calls, see the task's own.
 *
 * <p>This changes the configuration in place, which is safe because Spark gives each task
 * attempt a configuration of its own (its TaskAttemptContext copies the job's), used by the
 * task's thread; copying it instead costs as much as a small file's writer.
 */
final class FileDigest {
    static final String REAL_IMPL = "sleeper.digest.impl";
    static final String REAL_CACHE = "sleeper.digest.disable.cache";
    private static final ThreadLocal<FileDigest> OPENING = new ThreadLocal<>();

    /** The file system the file is written to, as Spark's writer would get it. */
    final FileSystem target;
    /** The file, qualified as its file system qualifies it. */
    final Path file;
    private final String scheme;
    private final String realImpl;
    private long size = -1;
    private String sha256;

    private FileDigest(FileSystem target, Path file, String scheme, String realImpl) {
        this.target = target;
        this.file = target.makeQualified(file);
        this.scheme = scheme;
        this.realImpl = realImpl;
    }

    /** The digest of the file at {@code path} that {@code task} writes; null where none can be taken. */
    static FileDigest of(String path, TaskAttemptContext task) {
        Configuration conf = task.getConfiguration();
        // Hadoop finds the class through the configuration's class loader, which may not see this jar.
        if (conf.getClassByNameOrNull(DigestingFileSystem.class.getName()) != DigestingFileSystem.class) {
            return null;
        }
        try {
            Path file = new Path(path);
            String scheme = file.toUri().getScheme();
            if (scheme == null) {
                scheme = FileSystem.getDefaultUri(conf).getScheme();
            }
            return new FileDigest(file.getFileSystem(conf), file, scheme,
                    FileSystem.getFileSystemClass(scheme, conf).getName());
        } catch (IOException | RuntimeException error) {
            return null;
        }
    }

    /** The digest of the file whose writer this thread is creating; null if none. */
    static FileDigest opening() {
        return OPENING.get();
    }

    /** Spark's writer of the file, which opens the file through a digesting stream. */
    OutputWriter open(OutputWriterFactory parquet, String path, StructType schema, TaskAttemptContext task) {
        Configuration conf = task.getConfiguration();
        String impl = "fs." + scheme + ".impl";
        String[] keys = {impl, impl + ".disable.cache", REAL_IMPL, REAL_CACHE};
        String[] saved = new String[keys.length];
        for (int i = 0; i < keys.length; i++) {
            saved[i] = conf.getRaw(keys[i]);
        }
        try {
            conf.set(REAL_IMPL, realImpl);
            conf.set(REAL_CACHE, saved[1] == null ? "false" : saved[1]);
            conf.set(keys[0], DigestingFileSystem.class.getName());
            // Hadoop caches file systems by scheme and authority only: a cached one would be the task's.
            conf.setBoolean(keys[1], true);
            OPENING.set(this);
            return parquet.newInstance(path, schema, task);
        } finally {
            OPENING.remove();
            for (int i = 0; i < keys.length; i++) {
                if (saved[i] == null) {
                    conf.unset(keys[i]);
                } else {
                    conf.set(keys[i], saved[i]);
                }
            }
        }
    }

    synchronized void written(long bytes, String hex) {
        size = bytes;
        sha256 = hex;
    }

    /** Whether the file was written, and closed, through a digesting stream. */
    synchronized boolean done() {
        return sha256 != null;
    }

    synchronized long size() {
        return size;
    }

    synchronized String sha256() {
        return sha256;
    }
}
