"""Where a sleeper_spark jar older than this package starts its Python side: it says so and exits.

Jars up to the one that moved this entry point start ``python -m sleeper_spark.spark.jvm_started``;
this package's jar starts :mod:`sleeper_spark.spark.bridge.jvm_started`. A cluster that mixes an
older jar with this package gets this message in the jar's error (which quotes the process's
output), instead of an import error.
"""

from __future__ import annotations

import sys

from sleeper_spark.version import __version__

MESSAGE = (
    "the sleeper_spark jar on this JVM's class path is older than the sleeper_spark package {version} "
    "installed for {python}: put the jar this package ships on the class path instead "
    "(python -c 'import sleeper_spark; print(sleeper_spark.jar_path())' prints its path; "
    "ss.configure_spark adds it), or install the package version the jar came with"
)


def main() -> int:
    print("sleeper_spark python side: ERROR " + MESSAGE.format(version=__version__, python=sys.executable),
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
