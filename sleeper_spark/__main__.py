"""``python -m sleeper_spark``: the same command line as ``sleeper-spark``."""

from sleeper_spark.cli.main import main

raise SystemExit(main())
