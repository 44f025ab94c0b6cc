"""Where Spark calls in: the ``sleeper`` data source class and its registration, the bridge the jar
calls, and the Python process a JVM starts for itself.

The top room: it may import every other; none imports it but the package's front door.
"""
