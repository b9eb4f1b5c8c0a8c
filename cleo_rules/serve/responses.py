"""JSON responses, shared by the service's endpoints and the playground's."""

from __future__ import annotations

import json

from starlette.responses import Response

__all__ = ["JSON_TYPES", "json_response"]

# the content types a JSON request body may declare
JSON_TYPES = ("application/json",)


def json_response(data, status: int = 200, headers: dict | None = None) -> Response:
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return Response(body, status_code=status, media_type="application/json", headers=headers)
