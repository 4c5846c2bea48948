"""Embeddings for the Store's semantic search: the offline embedding by default, or an
OpenAI-compatible server's model (configured like the chat model).

The offline embedding is a real, deterministic embedding that needs no weights and no network:
each text's words (lower-cased, accents and punctuation aside) and their two-word phrases are
hashed into a fixed number of dimensions (BLAKE2b, so every process and every machine gives the
same vector), counted with a sublinear weight and normalised to unit length. Texts that share
words are close; it knows no synonyms. It is what a fresh machine with no keys searches with.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
import unicodedata

from langchain_core.embeddings import Embeddings
from pydantic import SecretStr

__all__ = ["OFFLINE_EMBEDDING_DIMS", "OfflineEmbeddings", "build_embeddings"]

OFFLINE_EMBEDDING_DIMS = 256
_WORD = re.compile(r"\w+")


class OfflineEmbeddings(Embeddings):
    """The offline embedding (module docstring): ``dims`` dimensions, unit length."""

    def __init__(self, dims: int = OFFLINE_EMBEDDING_DIMS) -> None:
        self.dims = dims

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)  # pure and fast: no thread needed

    async def aembed_query(self, text: str) -> list[float]:
        return self._embed(text)

    def _embed(self, text: str) -> list[float]:
        plain = unicodedata.normalize("NFKD", text.casefold())
        words = _WORD.findall("".join(c for c in plain if not unicodedata.combining(c)))
        features = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
        counts = [0.0] * self.dims
        for feature in features:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            slot = int.from_bytes(digest[:4], "big") % self.dims
            sign = 1.0 if digest[4] & 1 else -1.0
            counts[slot] += sign
        vector = [math.copysign(math.log1p(abs(c)), c) for c in counts]
        norm = math.sqrt(sum(v * v for v in vector))
        return [v / norm for v in vector] if norm else vector


def build_embeddings(
    *, base_url: str | None, api_key: SecretStr | None, model: str, timeout_seconds: float
) -> Embeddings:
    """An OpenAI-compatible server's embeddings when a server or key is configured (as for the
    chat model), else the offline embedding."""
    if base_url is None and api_key is None:
        return OfflineEmbeddings()
    import httpx
    from langchain_openai import OpenAIEmbeddings

    return OpenAIEmbeddings(
        model=model,
        openai_api_base=base_url,
        openai_api_key=api_key or SecretStr("not-needed"),
        request_timeout=httpx.Timeout(timeout_seconds),
        # Send the texts as text: a server other than OpenAI's may not take tiktoken's ids.
        check_embedding_ctx_length=False,
    )
