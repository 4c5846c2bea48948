"""The limits every request and run is held to (sizes, HTTP timeouts, rates, open streams,
active runs): a part of :class:`consentry.settings.Settings`, read with it (``CONSENTRY_``)."""

from __future__ import annotations

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings

__all__ = ["Limits"]


class Limits(BaseSettings):
    """What one request, connection, principal or tenant may ask (docs/operations.md)."""

    max_message_chars: int = Field(
        default=20_000, gt=0, description="Longest chat message, in characters (docs/limits.md)."
    )
    # Request limits and abuse limits: docs/limits.md says what each refusal looks like.
    max_body_bytes: int = Field(
        default=1_048_576,
        ge=1024,
        le=64 * 1_048_576,
        description="Largest request body, in bytes; a larger one gets 413 before it is parsed.",
    )
    max_json_depth: int = Field(
        default=32,
        ge=2,
        le=200,
        description="Deepest nesting of objects and arrays in a JSON body (the body itself is 1).",
    )
    max_list_items: int = Field(
        default=1000, ge=1, le=1_000_000, description="Most items of any array in a JSON body."
    )
    max_note_chars: int = Field(
        default=200_000, gt=0, description="Longest note content a client may write, in characters."
    )
    max_edit_chars: int = Field(
        default=200_000,
        gt=0,
        description="Longest text in a decision's `edited` value (an edited note's content).",
    )
    max_page_size: int = Field(
        default=200,
        ge=1,
        le=10_000,
        description="Largest `limit` of a listing (threads, approvals).",
    )
    max_search_results: int = Field(
        default=50, ge=1, le=1000, description="Largest `limit` of a note search."
    )
    # HTTP limits of `consentry serve`, enforced below the app (backend/consentry/http_protocol.py).
    max_header_bytes: int = Field(
        default=65_536,
        ge=4096,
        le=1_048_576,
        description="Largest request head (request line and headers), in bytes; past it 431.",
    )
    max_header_count: int = Field(
        default=100, ge=16, le=1000, description="Most headers of one request; past it 431."
    )
    http_header_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=120,
        description="Time a request's head may take to arrive, from its first byte (from the "
        "connection's opening for the first request); past it 408, or a silent close when "
        "nothing came.",
    )
    http_body_idle_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=600,
        description="Time a request body may go without a byte; past it 408.",
    )
    http_body_timeout_seconds: float = Field(
        default=120.0,
        gt=0,
        le=3600,
        description="Time a whole request body may take to arrive; past it 408.",
    )
    http_keepalive_timeout_seconds: int = Field(
        default=5,
        ge=1,
        le=600,
        description="Time an idle keep-alive connection stays open after a response.",
    )
    max_requests_per_connection: int = Field(
        default=1000,
        ge=1,
        le=1_000_000,
        description="Requests one keep-alive connection may carry; the last is answered with "
        "`Connection: close`.",
    )
    rate_limit_messages_per_minute: int = Field(
        default=60,
        ge=0,
        description="Runs one principal may start per minute and replica (messages, retries); "
        "0: no limit.",
    )
    rate_limit_messages_burst: int = Field(
        default=30,
        ge=1,
        description="Runs one principal may start at once before the rate applies.",
    )
    rate_limit_decisions_per_minute: int = Field(
        default=120,
        ge=0,
        description="Decisions one principal may send per minute and replica; 0: no limit.",
    )
    rate_limit_decisions_burst: int = Field(
        default=60, ge=1, description="Decisions one principal may send at once."
    )
    max_streams_per_principal: int = Field(
        default=100,
        ge=0,
        description="Event streams one principal may hold open at once, per replica; 0: no limit.",
    )
    max_active_runs_per_tenant: int = Field(
        default=100,
        ge=0,
        description="Runs of one tenant that may be active (running or queued) at once, across "
        "every replica; 0: no limit.",
    )

    @model_validator(mode="after")
    def _body_idle_timeout_within_the_body_timeout(self) -> Limits:
        if self.http_body_idle_timeout_seconds > self.http_body_timeout_seconds:
            raise ValueError(
                "CONSENTRY_HTTP_BODY_IDLE_TIMEOUT_SECONDS must not exceed "
                "CONSENTRY_HTTP_BODY_TIMEOUT_SECONDS (the time the whole body may take)"
            )
        return self
