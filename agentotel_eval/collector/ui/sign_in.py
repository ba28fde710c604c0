"""Signing in to the web UI when the collector requires a token: ``GET /login`` shows the form, ``POST
/login`` checks the token and sets the UI's cookie (derived from the token, never the token itself),
``/logout`` clears it. A sign-in only ever leads to a page of this collector."""

from __future__ import annotations

from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentotel_eval.collector.receive.auth import AUTH_CHALLENGE, UI_COOKIE, Authenticator
from agentotel_eval.collector.receive.errors import ReceiverError
from agentotel_eval.collector.receive.http.answers import CLOSE, text
from agentotel_eval.collector.receive.http.bodies import ClientGone, read_body
from agentotel_eval.collector.ui.routes import HTML, SECURITY_HEADERS
from agentotel_eval.pages.sign_in import content_security_policy, sign_in_page

MAX_FORM = 16 * 1024
WRONG_TOKEN = "That is not this collector's token."


def local_path(value: str) -> str:
    """``value`` if it is a path on this server, else ``/``: where a sign-in may lead (never another site)."""
    if (
        not value.startswith("/")
        or value.startswith("//")
        or "\\" in value
        or any(not 0x21 <= ord(c) < 0x7F for c in value)
        or value.split("?", 1)[0] in ("/login", "/logout")
    ):
        return "/"
    return value


def sign_in(next_path: str, error: str = "", status: int = 401) -> Response:
    """The sign-in form, with the page's own Content-Security-Policy (its stylesheet is inline)."""
    headers = {**SECURITY_HEADERS, "Content-Security-Policy": content_security_policy()}
    if status == 401:
        headers["WWW-Authenticate"] = AUTH_CHALLENGE
    return Response(sign_in_page(next_path, error), status, headers=headers, media_type=HTML)


def sign_in_routes(auth: Authenticator, *, secure: bool) -> list[Route]:
    """The routes; ``secure``: the cookie is only sent over HTTPS (the collector serves TLS)."""

    def cookie(value: str, max_age: int | None = None) -> str:
        parts = [f"{UI_COOKIE}={value}", "Path=/", "HttpOnly", "SameSite=Strict"]
        if max_age is not None:
            parts.append(f"Max-Age={max_age}")
        if secure:
            parts.append("Secure")
        return "; ".join(parts)

    async def form(request: Request) -> Response:
        return sign_in(
            local_path(request.query_params.getlist("next")[0] if "next" in request.query_params else "/"),
            status=200,
        )

    async def login(request: Request) -> Response:
        try:
            fields = parse_qs((await read_body(request, MAX_FORM)).decode("utf-8", "replace"))
        except ReceiverError as exc:
            return text(exc.http_status if exc.http_status == 408 else 400, str(exc), CLOSE)
        except ClientGone:
            return Response(status_code=400)
        target = local_path(fields.get("next", ["/"])[0])
        if not auth.token(fields.get("token", [""])[0]):
            auth.failed("http")
            return sign_in(target, WRONG_TOKEN)
        return Response(
            b"",
            303,
            headers={
                "Location": target,
                "Set-Cookie": cookie(auth.cookie_value),
                "Cache-Control": "no-store",
            },
            media_type="text/plain; charset=utf-8",
        )

    async def logout(request: Request) -> Response:
        headers = {"Location": "/", "Set-Cookie": cookie("", max_age=0), "Cache-Control": "no-store"}
        if request.method == "POST":
            headers.update(CLOSE)  # a body, if any, is not read
        return Response(b"", 303, headers=headers, media_type="text/plain; charset=utf-8")

    return [
        Route("/login", form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["GET", "POST"]),
    ]
