"""JSON responses, shared by the service's endpoints and the playground's."""

from __future__ import annotations

from starlette.responses import Response

from .problems import encode_json

__all__ = ["JSON_TYPES", "json_response"]

# the content types a JSON request body may declare
JSON_TYPES = ("application/json",)


def json_response(data, status: int = 200, headers: dict | None = None) -> Response:
    return Response(encode_json(data), status_code=status, media_type="application/json", headers=headers)
