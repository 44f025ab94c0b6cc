package sleeper.spark;

import org.apache.spark.sql.SparkSessionExtensions;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;
import sleeper.spark.catalog.CatalogReadRule;
import sleeper.spark.catalog.DynamicOverwriteRule;
import sleeper.spark.catalog.MergeSchemaRule;
import sleeper.spark.catalog.RowChangeRule;

/**
 * The session extension that gives a sleeper catalog's tables {@code MERGE INTO}, {@code UPDATE}
 * and {@code DELETE FROM}: {@code spark.sql.extensions=sleeper.spark.SleeperExtensions} (which
 * {@code ss.configure_spark} sets). Spark plans these statements only for tables that hand it
 * their own row-level rewrite; this extension instead hands each statement, once Spark has
 * resolved it, to the same copy-on-write builders as {@code t.merge}, {@code t.update} and
 * {@code t.delete_where}, so SQL and Python change rows one way (see {@link RowChangeRule}); and
 * dynamic partition overwrites, which Spark would otherwise refuse (see {@link DynamicOverwriteRule}); and
 * the write option {@code mergeSchema} on {@code writeTo} (see {@link MergeSchemaRule}); and reads
 * on Spark's file source scan, as {@code format("sleeper")}'s (see {@link CatalogReadRule}).
 */
public final class SleeperExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        extensions.injectResolutionRule(new AbstractFunction1<>() {
            @Override
            public RowChangeRule apply(org.apache.spark.sql.SparkSession session) {
                return new RowChangeRule();
            }
        });
        extensions.injectResolutionRule(new AbstractFunction1<>() {
            @Override
            public DynamicOverwriteRule apply(org.apache.spark.sql.SparkSession session) {
                return new DynamicOverwriteRule();
            }
        });
        extensions.injectHintResolutionRule(new AbstractFunction1<>() {
            @Override
            public MergeSchemaRule apply(org.apache.spark.sql.SparkSession session) {
                return new MergeSchemaRule(session);
            }
        });
        extensions.injectOptimizerRule(new AbstractFunction1<>() {
            @Override
            public CatalogReadRule apply(org.apache.spark.sql.SparkSession session) {
                return new CatalogReadRule(session);
            }
        });
        return BoxedUnit.UNIT;
    }
}
