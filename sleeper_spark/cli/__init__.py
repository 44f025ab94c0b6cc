"""The ``sleeper-spark`` command line (see :mod:`sleeper_spark.cli.main`)."""
