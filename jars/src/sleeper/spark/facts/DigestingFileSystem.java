package sleeper.spark.facts;

import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Abortable;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FilterFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.hadoop.fs.Syncable;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.fs.statistics.IOStatistics;
import org.apache.hadoop.fs.statistics.IOStatisticsSource;
import org.apache.hadoop.util.Progressable;

/**
 * The task's own file system for a scheme, whose stream for one file (the one of its
 * {@link FileDigest}) digests the bytes on their way to the real stream. Named in the task's
 * configuration by {@link FileDigest} while a writer opens its file; every other call, and every
 * other file, goes to the real file system as is.
 *
 * <p>The digest is the SHA-256 of the file as stored: Hadoop's output streams only append (they
 * cannot seek back), so the bytes passed to the stream, in order, are the file.
 */
public final class DigestingFileSystem extends FilterFileSystem {
    private FileDigest digest;

    @Override
    public void initialize(URI name, Configuration conf) throws IOException {
        digest = FileDigest.opening();
        if (digest != null) {
            fs = digest.target;
        } else {
            // Created by another thread while a writer is being created: the real file system
            // serves, and nothing is digested.
            String realImpl = conf.get(FileDigest.REAL_IMPL);
            if (realImpl == null) {
                throw new IOException(DigestingFileSystem.class.getName() + " serves only the writers of sleeper_spark");
            }
            Configuration real = new Configuration(conf);
            String impl = "fs." + name.getScheme() + ".impl";
            real.set(impl, realImpl);
            real.set(impl + ".disable.cache", conf.get(FileDigest.REAL_CACHE));
            fs = FileSystem.get(name, real);
        }
        super.initialize(name, conf);
    }

    @Override
    public String getScheme() {
        return fs.getScheme();
    }

    @Override
    public FSDataOutputStream create(Path f, boolean overwrite, int bufferSize, short replication, long blockSize)
            throws IOException {
        return digesting(f, fs.create(f, overwrite, bufferSize, replication, blockSize));
    }

    @Override
    public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
                                     short replication, long blockSize, Progressable progress) throws IOException {
        return digesting(f, fs.create(f, permission, overwrite, bufferSize, replication, blockSize, progress));
    }

    /** The real file system is the task's, shared: not this one's to close. */
    @Override
    public void close() {
    }

    private FSDataOutputStream digesting(Path f, FSDataOutputStream out) throws IOException {
        if (digest == null || !digest.file.equals(makeQualified(f))) {
            return out;
        }
        MessageDigest sha256;
        try {
            sha256 = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException error) {
            return out; // the file is then read back
        }
        return new FSDataOutputStream(new Stream(out, sha256, digest), null);
    }

    /**
     * Passes bytes on, digesting them; hands size and digest over once the real stream closed. What
     * else a caller may ask of a Hadoop stream goes to the real one.
     */
    static final class Stream extends OutputStream
            implements Syncable, StreamCapabilities, IOStatisticsSource, Abortable {
        private final FSDataOutputStream out;
        private final MessageDigest sha256;
        private final FileDigest digest;
        private long size;
        private boolean closed;

        Stream(FSDataOutputStream out, MessageDigest sha256, FileDigest digest) {
            this.out = out;
            this.sha256 = sha256;
            this.digest = digest;
        }

        @Override
        public void write(int b) throws IOException {
            out.write(b);
            sha256.update((byte) b);
            size++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            sha256.update(b, off, len);
            size += len;
        }

        @Override
        public void flush() throws IOException {
            out.flush();
        }

        @Override
        public void hflush() throws IOException {
            out.hflush();
        }

        @Override
        public void hsync() throws IOException {
            out.hsync();
        }

        @Override
        public boolean hasCapability(String capability) {
            return out.hasCapability(capability);
        }

        @Override
        public IOStatistics getIOStatistics() {
            return out.getIOStatistics();
        }

        /** A file given up is not stored: it gets no digest. */
        @Override
        public AbortableResult abort() {
            closed = true;
            return out.abort();
        }

        @Override
        public void close() throws IOException {
            if (closed) {
                return;
            }
            closed = true;
            out.close(); // the file is whole only once this returns
            digest.written(size, HexFormat.of().formatHex(sha256.digest()));
        }
    }
}
