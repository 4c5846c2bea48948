"""``GET /metrics``: the Prometheus text format of this process's series
(``observability.metrics``; what each means: ``docs/operations.md``).

Open like ``/healthz`` unless ``CONSENTRY_METRICS_TOKEN`` is set; then the scraper sends it as a
bearer token. The series carry no tenant, user or thread, only bounded labels."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client.exposition import choose_encoder

from consentry.api.http.deps import MetricsDep, SettingsDep
from consentry.errors import UnauthorizedError
from consentry.schemas.errors import ErrorBody

__all__ = ["router"]

router = APIRouter(tags=["operations"])
_scraper = HTTPBearer(
    auto_error=False,
    scheme_name="MetricsToken",
    description="CONSENTRY_METRICS_TOKEN, when set.",
)


@router.get(
    "/metrics",
    response_class=Response,
    # The token is wanted only when CONSENTRY_METRICS_TOKEN is set: no security is a choice too.
    openapi_extra={"security": [{}]},  # FastAPI adds MetricsToken: either will do
    responses={
        200: {
            "description": "Prometheus text format, or OpenMetrics if `Accept` asks for it.",
            "content": {
                "text/plain": {"schema": {"type": "string"}},
                "application/openmetrics-text": {"schema": {"type": "string"}},
            },
        },
        401: {"model": ErrorBody, "description": "CONSENTRY_METRICS_TOKEN is set and not sent."},
    },
)
async def metrics(
    settings: SettingsDep,
    collected: MetricsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_scraper)],
    accept: Annotated[str, Header(include_in_schema=False)] = "",
) -> Response:
    """The text format (0.0.4), or OpenMetrics when the scraper's `Accept` asks for it."""
    token = settings.metrics_token
    if token is not None and not (
        credentials is not None
        and hmac.compare_digest(credentials.credentials.encode(), token.get_secret_value().encode())
    ):
        raise UnauthorizedError("Send `Authorization: Bearer <CONSENTRY_METRICS_TOKEN>`.")
    encode, content_type = choose_encoder(accept)
    return Response(encode(collected.registry), headers={"Content-Type": content_type})
