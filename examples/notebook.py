# %% [markdown]
# # sleeper_spark in a notebook
#
# Cells for Jupyter / VS Code (`# %%`). Run top to bottom; the warehouse is a temporary folder.
# Also runs as a script: `bash scripts/examples.sh notebook`.

# %%
import os
import sys
import tempfile

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import sleeper_spark as ss

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need sleeper_spark too
# configure_spark adds the jar: format("sleeper") and SQL on sleeper tables, on Spark's own Parquet reader
spark = (ss.configure_spark(SparkSession.builder.master("local[2]")).config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())  # a local session: 2 cores, small data
spark.sparkContext.setLogLevel("ERROR")
catalog = ss.Catalog.local(tempfile.mkdtemp(prefix="sleeper-notebook-"))

# %% Write a DataFrame: the first write creates the table.
orders = spark.range(0, 1_000).select(
    F.col("id").alias("order_id"),
    F.element_at(F.array(F.lit("eu"), F.lit("us"), F.lit("apac")), (F.col("id") % 3 + 1).cast("int")).alias("region"),
    (F.col("id") * 1.5).alias("amount"),
)
v2 = catalog.write(orders, "orders", partition_by=["region"], metadata={"source": "notebook"})
print(v2)

# %% Append, then read: a filter on the partition column skips the other regions' files.
catalog.write(orders.limit(10).withColumn("order_id", F.col("order_id") + 10_000), "orders")
df = catalog.read(spark, "orders")
df.filter("region = 'eu'").agg(F.count("*").alias("eu_orders"), F.sum("amount").alias("eu_amount")).show()

# %% Time travel: the table as the first write left it.
print(catalog.read(spark, "orders", version=v2.version).count())

# %% The history, one snapshot per write.
for snapshot in catalog.table("orders").history():
    print(snapshot.version, snapshot.operation, snapshot.rows_added, snapshot.metadata)

# %%
spark.stop()
