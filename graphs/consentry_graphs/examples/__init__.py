"""Example graphs built with the consent kit; load one with ``CONSENTRY_GRAPHS``."""
