"""Every setting but the limits (``_limits``); the face is ``consentry.settings``."""

from __future__ import annotations

import ipaddress
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from consentry.principal import Principal
from consentry.setting_lists import (
    parse_api_keys,
    parse_cors_origins,
    parse_graphs,
    parse_webhook_hosts,
)
from consentry.settings._limits import Limits
from consentry_graphs.models.retrying import RetryPolicy
from consentry_graphs.window import DEFAULT_CONVERSATION_WINDOW

__all__ = ["Settings"]

DEFAULT_DATABASE_URL = f"sqlite:///{Path('data') / 'consentry.db'}"
MIN_WEBHOOK_SECRET_CHARS = 16


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Settings(Limits):
    """Every setting Consentry reads (the limits: :class:`Limits`). See the configuration table in
    README.md."""

    model_config = SettingsConfigDict(env_prefix="CONSENTRY_", extra="ignore")

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="Where state lives: `sqlite:///path/to/file.db` (default under data/), or "
        "`postgresql://user:password@host:5432/db` for several replicas.",
    )
    role: Literal["all", "api", "worker"] = Field(
        default="all",
        description="What this process does: `api` serves requests and streams (runs are queued "
        "for workers), `worker` executes runs, `all` both. `api`/`worker` need PostgreSQL.",
    )
    run_migrations: bool = Field(
        default=True,
        description="Migrate the database at start-up (off: run `consentry db upgrade` yourself).",
    )
    sample_notes: bool = Field(
        default=True,
        description="Put the sample notes of `data/samples/` into each owner's default project "
        "when it is created (an owner's first request); off: it starts empty.",
    )
    database_pool_size: int = Field(
        default=10,
        ge=1,
        le=200,
        description="PostgreSQL connections of each process (app tables and checkpoints): "
        "up to three times this many, opened as the load needs them and kept once opened.",
    )
    host: str = Field(default="127.0.0.1", description="Address `consentry serve` binds to.")
    port: int = Field(default=8000, ge=0, le=65535)
    api_keys: Annotated[dict[str, Principal], NoDecode] = Field(
        default_factory=dict,
        description="Bearer tokens as `token=tenant:user,token2=tenant:user2`, each owner with "
        "an optional display name (`token=tenant:user:Ada Lovelace`). Unset: one local user, "
        "loopback only.",
    )
    graphs: Annotated[dict[str, str], NoDecode] = Field(
        default_factory=dict,
        description="Graphs served besides the built-in `tutor`, as "
        "`name=package.module:attr,name2=path/to/file.py:attr`; each attr a compiled graph, a "
        "StateGraph, a GraphSpec or a function returning one (docs/graphs.md).",
    )
    llm_base_url: str | None = Field(default=None, description="OpenAI-compatible server URL.")
    llm_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("CONSENTRY_LLM_API_KEY", "OPENAI_API_KEY")
    )
    llm_model: str = Field(default="gpt-4o-mini")
    llm_timeout_seconds: float = Field(
        default=60.0,
        gt=0,
        description="How long one model request may wait for the server (to connect, or for "
        "its next bytes); a hang past it is a retryable failure.",
    )
    llm_max_attempts: int = Field(
        default=3,
        ge=1,
        le=10,
        description="Attempts per model call in total, the first included (the only retry "
        "layer: the client and the graph nodes do not retry).",
    )
    llm_retry_base_seconds: float = Field(
        default=0.5, ge=0, le=60, description="Backoff after the first failed attempt; doubles."
    )
    llm_retry_max_seconds: float = Field(
        default=8.0, ge=0, le=300, description="Longest backoff between two attempts."
    )
    llm_retry_after_cap_seconds: float = Field(
        default=30.0,
        ge=0,
        le=600,
        description="Longest wait a provider's `Retry-After` can impose before the next attempt.",
    )
    llm_json_mode: bool = Field(
        default=True,
        description='Ask for `response_format={"type": "json_object"}` where the graphs need '
        "JSON; turn off for servers that reject it.",
    )
    llm_max_retries: int | None = Field(
        default=None, description="Replaced by CONSENTRY_LLM_MAX_ATTEMPTS.", exclude=True
    )
    embeddings_model: str | None = Field(
        default=None,
        description="Embeddings model of the OpenAI-compatible server (CONSENTRY_LLM_BASE_URL, "
        "CONSENTRY_LLM_API_KEY) for the Store's semantic search, e.g. `text-embedding-3-small`; "
        "unset: the offline embedding, whatever the chat model (docs/memory.md).",
    )
    store_index_fields: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["$"],
        description="The fields of a Store item embedded for semantic search, comma-separated "
        "(`$`: the whole value; `text`, `notes[*].body`...); `none`: no semantic search.",
    )
    store_ttl_minutes: float | None = Field(
        default=None,
        gt=0,
        le=100 * 366 * 24 * 60,
        description="Time to live of a Store item put without one (unset: none); a read "
        "refreshes it unless it asks `refresh_ttl=False`.",
    )
    consent_ttl_seconds: int = Field(
        default=86_400,
        gt=0,
        description="How long a consent kit's request stays open (a kind may set its own).",
    )
    interrupt_ttl_seconds: int | None = Field(
        default=None,
        gt=0,
        description="How long a raw `interrupt()` waits for an answer; unset: until answered. "
        "An expired one is never answered for the graph (docs/graphs.md).",
    )
    max_steps_per_run: int = Field(
        default=50, gt=0, le=10_000, description="Graph steps (supersteps) one run may take."
    )
    run_timeout_seconds: float = Field(
        default=300.0, gt=0, description="Wall-clock time one run may take."
    )
    conversation_window: int = Field(
        default=DEFAULT_CONVERSATION_WINDOW,
        ge=2,
        le=10_000,
        description="Messages a graph keeps in its state and sends to the model; the full "
        "transcript is kept apart (`GET /v1/threads/{id}/messages`).",
    )
    checkpoint_retention: Literal["latest", "turns", "all"] = Field(
        default="turns",
        description="`turns`: keep the thread's newest checkpoint and the one each run started "
        "from (a turn's state: what time travel forks from; a thread's first run starts from "
        "its own input's); each step's write replaces the "
        "run's own before it, in its transaction. `latest`: keep only the newest (what a "
        "resume, a retry and a takeover read). `all`: keep every checkpoint of every step.",
    )
    event_retention_hours: float = Field(
        default=168.0,
        ge=24.0,
        description="How long stored events stay replayable (and settled webhook posts are kept).",
    )
    resumable_stream_seconds: float = Field(
        default=600.0,
        gt=0,
        description="How long a run streamed with the LangGraph SDK's `stream_resumable` keeps "
        "its graph outputs (`values`, `messages`... of the modes its stream asked) for a join "
        "to replay; after it a join replays the run's stored events alone (they are swept with "
        "the expired consents, at least once an hour).",
    )
    thread_token_budget: int | None = Field(
        default=None, gt=0, description="Model tokens one thread may use (unset: no limit)."
    )
    tenant_token_budget: int | None = Field(
        default=None, gt=0, description="Model tokens one tenant may use (unset: no limit)."
    )
    lease_seconds: float = Field(
        default=30.0,
        ge=1.0,
        le=600.0,
        description="How long a run's lease lasts without a heartbeat (renewed every third); a "
        "run whose process died is taken over once its lease expired.",
    )
    keepalive_seconds: float = Field(default=15.0, gt=0, le=15.0)
    log_format: Literal["auto", "json", "text"] = Field(
        default="auto",
        description="`json`: one JSON object per line with request, principal, thread and run "
        "ids (docs/operations.md); `text`: plain lines for a terminal; `auto`: `text` when "
        "stderr is a terminal, else `json`.",
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Origins whose web pages may call the API (a frontend on its own dev "
        "server), exact and comma-separated: `http://localhost:5173,https://app.example.org`; "
        "`*` for any, only with API keys. Unset: none (docs/frontend.md).",
    )
    otel_exporter_otlp_endpoint: str | None = Field(
        default=None,
        validation_alias=AliasChoices(
            "CONSENTRY_OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"
        ),
        description="Send OpenTelemetry traces over OTLP/HTTP to this collector (e.g. "
        "`http://collector:4318`); needs `pip install 'consentry[otel]'`. Unset: no tracing, "
        "at no cost.",
    )
    otel_service_name: str = Field(
        default="consentry",
        validation_alias=AliasChoices("CONSENTRY_OTEL_SERVICE_NAME", "OTEL_SERVICE_NAME"),
        description="The `service.name` of the traces.",
    )
    metrics_token: SecretStr | None = Field(
        default=None,
        description="When set, `GET /metrics` wants it as a bearer token (unset: open, like "
        "`/healthz`).",
    )

    webhook_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["localhost", "127.0.0.1", "::1"],
        description="The hosts a run's `webhook` may name, comma-separated: names "
        "(`hooks.example.com`), `*.example.com` for subdomains, addresses or networks "
        "(`10.0.0.0/24`). A name must resolve to public addresses or listed ones. Default: "
        "loopback only (docs/webhooks.md).",
    )
    webhook_secret: SecretStr | None = Field(
        default=None,
        description="When set (16 characters at least), each webhook post carries "
        "`X-Consentry-Signature: sha256=<HMAC of timestamp.delivery_id.body>` "
        "(docs/webhooks.md); unset: unsigned.",
    )
    webhook_retry_seconds: float = Field(
        default=3600.0,
        ge=0,
        le=7 * 86_400,
        description="How long after a run's end its webhook post is retried (backoff from 1 s, "
        "doubling, at most 10 min apart); then it is given up (`failed`).",
    )
    webhook_timeout_seconds: float = Field(
        default=10.0, gt=0, le=120, description="How long one webhook post may take."
    )

    @field_validator("webhook_secret")
    @classmethod
    def _refuse_a_short_webhook_secret(cls, secret: SecretStr | None) -> SecretStr | None:
        if secret is not None and len(secret.get_secret_value()) < MIN_WEBHOOK_SECRET_CHARS:
            raise ValueError(
                f"CONSENTRY_WEBHOOK_SECRET must be {MIN_WEBHOOK_SECRET_CHARS} characters at "
                "least (a signature keyed by a short or empty secret proves nothing): set a "
                "long random one (`python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
                ", or unset it to send posts unsigned"
            )
        return secret

    @field_validator("webhook_hosts", mode="before")
    @classmethod
    def _parse_webhook_hosts(cls, raw: object) -> object:
        return parse_webhook_hosts(raw)

    @field_validator("api_keys", mode="before")
    @classmethod
    def _parse_api_keys(cls, raw: object) -> object:
        return parse_api_keys(raw)

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _parse_cors_origins(cls, raw: object) -> object:
        return parse_cors_origins(raw)

    @field_validator("store_index_fields", mode="before")
    @classmethod
    def _parse_index_fields(cls, raw: object) -> object:
        if not isinstance(raw, str):
            return raw
        fields = [field.strip() for field in raw.split(",") if field.strip()]
        return [] if fields == ["none"] else fields

    @field_validator("graphs", mode="before")
    @classmethod
    def _parse_graphs(cls, raw: object) -> object:
        return parse_graphs(raw)

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, url: str) -> str:
        if url.startswith("sqlite:///") and len(url) > len("sqlite:///"):
            return url
        if url.split("://", 1)[0] in ("postgresql", "postgres", "postgresql+psycopg"):
            return url
        raise ValueError(
            "database_url must be `sqlite:///<path>` or `postgresql://user:password@host/db`"
        )

    @model_validator(mode="after")
    def _refuse_replaced_settings(self) -> Settings:
        if self.llm_max_retries is not None:
            raise ValueError(
                "CONSENTRY_LLM_MAX_RETRIES was replaced by CONSENTRY_LLM_MAX_ATTEMPTS (attempts "
                f"in total, the first included): set CONSENTRY_LLM_MAX_ATTEMPTS="
                f"{self.llm_max_retries + 1} instead"
            )
        return self

    @property
    def llm_retry_policy(self) -> RetryPolicy:
        return RetryPolicy(
            max_attempts=self.llm_max_attempts,
            base_delay_seconds=self.llm_retry_base_seconds,
            max_delay_seconds=self.llm_retry_max_seconds,
            retry_after_cap_seconds=self.llm_retry_after_cap_seconds,
        )

    @model_validator(mode="after")
    def _roles_need_a_shared_database(self) -> Settings:
        if self.role != "all" and not self.uses_postgres:
            raise ValueError(
                f"role {self.role!r} needs PostgreSQL (CONSENTRY_DATABASE_URL=postgresql://…): "
                "on SQLite one process does everything (role `all`)"
            )
        return self

    @model_validator(mode="after")
    def _refuse_open_bind_without_keys(self) -> Settings:
        if not self.api_keys and not _is_loopback(self.host):
            raise ValueError(
                f"refusing to bind to {self.host} without CONSENTRY_API_KEYS (keyless mode "
                "serves one local user, on loopback only): set CONSENTRY_API_KEYS="
                "token=tenant:user, or serve on 127.0.0.1"
            )
        return self

    @model_validator(mode="after")
    def _refuse_any_origin_without_keys(self) -> Settings:
        if "*" in self.cors_origins and not self.api_keys:
            raise ValueError(
                "refusing CONSENTRY_CORS_ORIGINS=* without CONSENTRY_API_KEYS: any web page "
                "could act as the local user; list your frontend's origins (like "
                "`http://localhost:5173`) or set CONSENTRY_API_KEYS"
            )
        return self

    @property
    def uses_postgres(self) -> bool:
        return not self.database_url.startswith("sqlite:///")

    @cached_property
    def sqlite_path(self) -> Path | None:
        """The SQLite file, or None on PostgreSQL."""
        if self.uses_postgres:
            return None
        return Path(self.database_url.removeprefix("sqlite:///"))

    @property
    def uses_offline_model(self) -> bool:
        return self.llm_base_url is None and self.llm_api_key is None
