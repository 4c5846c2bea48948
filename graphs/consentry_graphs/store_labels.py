"""A person's id as one label of a Store namespace, for graphs that keep items per person
(the tutor's memories, the bench's ``memory_flow``).

A label cannot hold a ``.`` and has at most 256 characters (the Store's limits, docs/memory.md):
the id is written with ``%`` as ``%25`` and ``.`` as ``%2E``, and an id longer than a label may
be becomes its SHA-256.
"""

from __future__ import annotations

import hashlib

__all__ = ["LABEL_CHARS", "person_label"]

LABEL_CHARS = 256
"""The longest namespace label the Store takes."""


def person_label(user: str) -> str:
    """``user`` (``<tenant>/<user>`` when Consentry serves the graph) as one namespace label."""
    label = user.replace("%", "%25").replace(".", "%2E")
    if len(label) > LABEL_CHARS:
        label = "sha256-" + hashlib.sha256(user.encode()).hexdigest()
    return label
