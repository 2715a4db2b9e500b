"""binmetric-sweep orchestration: sweep files → configurations → shards → fits → Parquet."""

__version__ = "0.1.0"
