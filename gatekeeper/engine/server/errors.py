"""OpenAI-shaped HTTP errors: `{"error": {"message", "type", "param", "code"}}` with a 4xx/5xx status."""

from __future__ import annotations

from http import HTTPStatus

from fastapi.responses import JSONResponse

_TYPES = {400: "BadRequestError", 401: "AuthenticationError", 404: "NotFoundError", 405: "BadRequestError",
          413: "BadRequestError", 422: "BadRequestError", 503: "ServiceUnavailableError"}


class ApiError(Exception):
    """A request the server refuses; rendered by the app's exception handler."""

    def __init__(self, message: str, status: int = 400, param: str | None = None, type: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param
        self.type = type or _TYPES.get(status, "InternalServerError" if status >= 500 else "BadRequestError")

    def body(self) -> dict:
        """The JSON body, as vLLM and OpenAI send it."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.status}}

    def response(self) -> JSONResponse:
        """The error as an HTTP response."""
        return JSONResponse(self.body(), status_code=self.status)


def error_response(status: int, message: str | None = None, param: str | None = None) -> JSONResponse:
    """An OpenAI-shaped response for a bare status (unknown route, wrong method, ...)."""
    return ApiError(message or HTTPStatus(status).phrase, status, param).response()
