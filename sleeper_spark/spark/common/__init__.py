"""What every room of ``sleeper_spark.spark`` shares: options, error messages, the jar and the session,
and the conversions between Spark and Arrow. Lowest room: it imports no other.

This ``__init__`` stays empty: ``import sleeper_spark`` reaches it without importing pyspark.
"""
