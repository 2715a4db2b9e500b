"""What a sweep is: the sweep file (``config``), its grid of configurations
(``grid``), what is rated and how (``rating_model``) and each lane's design, key and
counts (``lanes``).
"""
