"""What ``HostPolicy`` lets in, and what its refusals tell the developer who meets them.

A web developer meets the 421 on day one: Starlette's ``TestClient`` sends the Host
``testserver``, and a proxy sends its public name, without a port when it listens on the
scheme's default one. The refusal names the value received and the setting that allows
it; what is allowed already goes to the server's log only, since any client reads the
refusal. A ``name:*`` pattern takes the name with no port too.
"""

from __future__ import annotations

import logging

import pytest

from answerback.transports.http import HostPolicy


def logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "answerback.http"]


def test_a_port_pattern_also_takes_the_name_without_a_port() -> None:
    policy = HostPolicy(
        allowed_hosts=["mcp.example.com:*"], allowed_origins=["https://app.example:*"]
    )
    for host in ("mcp.example.com", "mcp.example.com:443", "MCP.example.com:8443"):
        assert policy.host_allowed(host), host
    for host in ("mcp.example.com:", "mcp.example.com.evil:443", "evil.mcp.example.com"):
        assert not policy.host_allowed(host), host
    assert policy.origin_allowed("https://app.example")
    assert policy.origin_allowed("https://app.example:8443")
    assert not policy.origin_allowed("http://app.example")


def test_the_default_policy_takes_loopback_with_and_without_a_port() -> None:
    policy = HostPolicy()
    for host in ("127.0.0.1", "localhost:8000", "[::1]", "[::1]:1"):
        assert policy.host_allowed(host), host
    assert policy.origin_allowed("http://localhost")
    assert policy.origin_allowed("https://127.0.0.1:5173")


def test_a_refused_host_is_named_with_the_setting_that_allows_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "answerback.http")
    refusal = HostPolicy().host_refusal("testserver")
    assert refusal is not None
    assert refusal.startswith("Misdirected request: ")
    assert "the Host 'testserver'" in refusal
    assert "127.0.0.1" not in refusal
    assert "host_policy=HostPolicy(allowed_hosts=[..., 'testserver'])" in refusal
    assert HostPolicy().host_refusal("localhost:8000") is None
    assert logged(caplog) == [
        "refused a request with Host 'testserver' (HostPolicy allowed_hosts: '127.0.0.1:*', "
        "'localhost:*', '[::1]:*'); add the value there if the server should take it"
    ]


def test_a_missing_host_says_so() -> None:
    assert HostPolicy().host_refusal(None) == (
        "Misdirected request: the request has no Host header; send one."
    )


def test_a_refused_origin_is_named_with_the_setting_that_allows_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "answerback.http")
    policy = HostPolicy(allowed_origins=[f"https://app{n}.example" for n in range(8)])
    refusal = policy.origin_refusal("https://Evil.example")
    assert refusal is not None
    assert refusal.startswith("Forbidden: ")
    assert "the Origin 'https://Evil.example'" in refusal
    assert "app0" not in refusal
    assert "HostPolicy(allowed_origins=[..., 'https://evil.example'])" in refusal
    assert policy.origin_refusal(None) is None
    assert policy.origin_refusal("https://app7.example") is None
    [line] = logged(caplog)
    assert line.startswith("refused a request with Origin 'https://evil.example' ")
    assert "'https://app5.example' and 2 more" in line


def test_each_refused_value_is_logged_once_and_only_so_many(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "answerback.http")
    policy = HostPolicy()
    policy.host_refusal("again.example")
    policy.host_refusal("AGAIN.example")
    assert len(logged(caplog)) == 1
    for n in range(1000):
        assert policy.host_refusal(f"made-up-{n}.example") is not None
    lines = logged(caplog)
    assert len(lines) == 32
    assert lines[-1].endswith("; 32 refused values are logged now, later ones will not be")


def test_a_long_host_is_cut_in_the_refusal() -> None:
    refusal = HostPolicy().host_refusal("h" * 5000)
    assert refusal is not None
    assert len(refusal) < 800
    assert "'" + "h" * 97 + "...'" in refusal
