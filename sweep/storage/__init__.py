"""Where a sweep lands: the column registry every table's schema comes from
(``columns``), the shards' Parquet files and manifest (``store``), and the benchmark
scripts' JSON records (``records``).
"""
