/**
 * The driver's Python side as the JVM calls it: the {@link sleeper.spark.bridge.FormatBridge}
 * interface that the Python driver implements, {@link sleeper.spark.bridge.DriverSide}, through
 * which every JVM class reaches the connected bridge and reads its answers, and {@link
 * sleeper.spark.bridge.PythonSide}, which starts a Python process where no Python driver is.
 */
package sleeper.spark.bridge;
