"""spark_integration: hzfast placement on PySpark (being written)."""
