"""The batch reader and writer of the ``sleeper`` Python data source; they run in Spark's Python workers.

Imports ``common`` and ``conditions``.
"""
