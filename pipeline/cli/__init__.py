"""The pieces of ``python -m pipeline`` that grew past one function: ``compare``/``--list`` (``compare``) and the
operator commands ``partitions`` and ``docs`` (``operator``). The argument parser stays in ``pipeline/__main__.py``."""
