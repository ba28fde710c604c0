"""Signing in to the web UI: where a sign-in may lead, the form, the token's check and the cookie."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from agentotel_eval.collector.receive.auth import UI_COOKIE, Authenticator
from agentotel_eval.collector.ui.sign_in import MAX_FORM, WRONG_TOKEN, local_path, sign_in_routes


def test_only_local_paths_are_sign_in_targets():
    assert local_path("/runs?since=7d&agent=a") == "/runs?since=7d&agent=a"
    assert local_path("/runs/abc/def") == "/runs/abc/def"
    for bad in ("", "runs", "//x", "/\\x", "http://x/", "/a b", "/ü", "/a\x7f", "/login", "/logout?x=1"):
        assert local_path(bad) == "/", bad


def _client(auth: Authenticator, secure: bool = False) -> TestClient:
    return TestClient(Starlette(routes=sign_in_routes(auth, secure=secure)), follow_redirects=False)


def test_the_form_keeps_a_local_next_and_drops_another_site():
    with _client(Authenticator("tok")) as client:
        local = client.get("/login", params={"next": "/runs?since=1d"})
        assert local.status_code == 200 and "/runs?since=1d" in local.text
        assert "Content-Security-Policy" in local.headers and "WWW-Authenticate" not in local.headers
        away = client.get("/login", params={"next": "//evil.example/x"})
        assert "evil.example" not in away.text


def test_a_wrong_token_shows_the_form_again_and_is_counted():
    auth = Authenticator("tok")
    with _client(auth) as client:
        answer = client.post("/login", data={"token": "nope", "next": "/runs"})
    assert answer.status_code == 401 and "WWW-Authenticate" in answer.headers
    assert WRONG_TOKEN in answer.text.replace("&#39;", "'") and UI_COOKIE not in answer.headers.get(
        "set-cookie", ""
    )
    assert auth.failures() == {"http": 1}


@pytest.mark.parametrize("secure", [False, True])
def test_the_right_token_sets_the_derived_cookie_and_leads_on(secure):
    auth = Authenticator("tok")
    with _client(auth, secure) as client:
        answer = client.post("/login", data={"token": "tok", "next": "/runs/x/y"})
    assert answer.status_code == 303 and answer.headers["location"] == "/runs/x/y"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{UI_COOKIE}={auth.cookie_value};") and "tok;" not in cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and ("Secure" in cookie) is secure
    assert answer.headers["cache-control"] == "no-store" and auth.failures() == {}


def test_a_sign_in_leading_elsewhere_leads_home():
    with _client(Authenticator("tok")) as client:
        answer = client.post("/login", data={"token": "tok", "next": "https://evil.example/"})
    assert answer.status_code == 303 and answer.headers["location"] == "/"


def test_a_form_over_its_limit_is_refused_and_signs_nobody_in():
    auth = Authenticator("tok")
    with _client(auth) as client:
        answer = client.post(
            "/login",
            content=b"token=tok&x=" + b"a" * MAX_FORM,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
    assert answer.status_code == 400 and "set-cookie" not in answer.headers


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_signing_out_clears_the_cookie(method):
    with _client(Authenticator("tok")) as client:
        answer = client.request(method, "/logout")
    assert answer.status_code == 303 and answer.headers["location"] == "/"
    assert (
        answer.headers["set-cookie"].startswith(f"{UI_COOKIE}=;")
        and "Max-Age=0" in answer.headers["set-cookie"]
    )
