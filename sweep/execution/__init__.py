"""How a sweep runs: the device's fixed call shapes (``schedule``), the calls
(``calls``), the quadrature cascade (``cascade``), the compiled programs (``programs``,
``compile_cache``), the posterior's fits (``fits``), the other estimators (``estimates``),
one shard from configurations to tables (``shards``) and the runners that compute shards
in-process or on Ray (``runners``, ``ray_runner``).
"""
