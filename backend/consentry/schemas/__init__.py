"""Pydantic wire models: the protocol's single source. ``docs/protocol.schema.json`` is generated
from them (``consentry schema``) and a test fails when it drifts."""
