"""Consentry's development tools: the benchmark (``bench``) and the kill trials (``chaos``).

Not part of the product: the ``consentry-tools`` package (``tools/pyproject.toml``) is installed
by ``make test``, never by ``make run``, and the product's wheel does not carry it. Its commands
join the ``consentry`` command through the ``consentry.commands`` entry points. It reaches the
product through public interfaces only: the HTTP API of a real ``consentry serve`` process,
``consentry_graphs``, and, for the stored data it checks and damages on purpose,
``consentry.stored`` (``.importlinter`` holds it to that).
"""
