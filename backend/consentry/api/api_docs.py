"""The OpenAPI page, served offline: Swagger UI at ``/docs``.

FastAPI's own pages load Swagger UI (``/docs``) and ReDoc (``/redoc``) from a CDN, so they stay
blank on a machine without internet. This one loads Swagger UI 5 (it reads OpenAPI 3.1) from the
``fastapi-offline`` package's ``static/``, mounted at ``/docs/assets``. The page has no inline
script (Swagger UI starts from ``/docs/swagger-initializer.js``), and a Content Security Policy
of its own: the web app's (``api.web``) plus inline styles, which Swagger UI sets. There is no
``/redoc``: ReDoc always loads its logo from its vendor's CDN.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

__all__ = ["ASSETS_PATH", "DocsAssets", "router"]

ASSETS_PATH = "/docs/assets"
OPENAPI_URL = "/openapi.json"
DOCS_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; object-src 'none'; "
        "base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_SWAGGER_PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Consentry API · Swagger UI</title>
<link rel="icon" href="{ASSETS_PATH}/favicon.png">
<link rel="stylesheet" href="{ASSETS_PATH}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{ASSETS_PATH}/swagger-ui-bundle.js"></script>
<script src="/docs/swagger-initializer.js"></script>
</body>
</html>
"""
_SWAGGER_INITIALIZER = f"""window.ui = SwaggerUIBundle({{
  url: "{OPENAPI_URL}",
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  deepLinking: true,
  showExtensions: true,
  showCommonExtensions: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
}});
"""
router = APIRouter(include_in_schema=False)


@router.get("/docs")
async def swagger_ui() -> HTMLResponse:
    return HTMLResponse(_SWAGGER_PAGE, headers=DOCS_HEADERS)


@router.get("/docs/swagger-initializer.js")
async def swagger_initializer() -> Response:
    return Response(_SWAGGER_INITIALIZER, media_type="text/javascript", headers=DOCS_HEADERS)


def _assets_directory() -> Path:
    spec = importlib.util.find_spec("fastapi_offline")  # found, not imported
    if spec is None or spec.origin is None:
        raise RuntimeError("the fastapi-offline package is missing: `pip install -e .`")
    return Path(spec.origin).parent / "static"


class DocsAssets(StaticFiles):
    """Swagger UI's files, with the page's headers."""

    def __init__(self) -> None:
        super().__init__(directory=_assets_directory())

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(DOCS_HEADERS)
        return response
