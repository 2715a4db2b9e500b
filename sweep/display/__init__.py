"""How a sweep is shown: tables of a surface (``tables``), figures (``plots``) and
the fits' progress bar (``progress``).
"""
