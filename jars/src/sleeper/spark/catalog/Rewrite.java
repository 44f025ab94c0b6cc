package sleeper.spark.catalog;

import java.util.function.Predicate;
import java.util.function.UnaryOperator;

import scala.Function1;
import scala.runtime.AbstractPartialFunction;

/**
 * A Catalyst rewrite ({@code transformDown}, {@code transformUp}) as the Scala partial function
 * those take: nodes {@code applies} holds for become {@code rewrite} of themselves, others stay.
 */
final class Rewrite<T> extends AbstractPartialFunction<T, T> {
    private final Predicate<T> applies;
    private final UnaryOperator<T> rewrite;

    private Rewrite(Predicate<T> applies, UnaryOperator<T> rewrite) {
        this.applies = applies;
        this.rewrite = rewrite;
    }

    static <T> Rewrite<T> of(Predicate<T> applies, UnaryOperator<T> rewrite) {
        return new Rewrite<>(applies, rewrite);
    }

    @Override
    public boolean isDefinedAt(T node) {
        return applies.test(node);
    }

    @Override
    public <A1 extends T, B1> B1 applyOrElse(A1 node, Function1<A1, B1> otherwise) {
        if (!applies.test(node)) {
            return otherwise.apply(node);
        }
        @SuppressWarnings("unchecked")
        B1 rewritten = (B1) rewrite.apply(node);
        return rewritten;
    }
}
