"""Store URLs: redis://, rediss:// and unix://, with passwords, databases and TLS options."""

from __future__ import annotations

import pytest

from mcpactor._exceptions import ConfigError
from mcpactor.store import StoreURL, parse_store_url


def test_parse_store_url_host_port_db() -> None:
    assert parse_store_url("redis://cache.internal:6380/2") == StoreURL(
        host="cache.internal", port=6380, db=2
    )


def test_parse_store_url_defaults() -> None:
    assert parse_store_url("redis://localhost") == StoreURL(host="localhost")


def test_parse_store_url_password_percent_encoded_and_hidden() -> None:
    url = parse_store_url("redis://app:s%40cret@127.0.0.1/0")
    assert (url.username, url.password) == ("app", "s@cret")
    assert "s@cret" not in repr(url)
    assert url.redacted() == "redis://app:***@127.0.0.1:6379/0"


def test_parse_store_url_password_only() -> None:
    url = parse_store_url("redis://:pw@h:1")
    assert (url.username, url.password) == (None, "pw")
    assert url.redacted() == "redis://:***@h:1/0"


def test_parse_store_url_tls_options() -> None:
    url = parse_store_url("rediss://h/1?ca=/etc/ca.pem&cert=/c.pem&key=/k.pem")
    assert url.tls
    assert (url.ca_file, url.cert_file, url.key_file, url.verify) == (
        "/etc/ca.pem",
        "/c.pem",
        "/k.pem",
        True,
    )
    assert not parse_store_url("rediss://h?verify=none").verify


def test_parse_store_url_unix_socket() -> None:
    url = parse_store_url("unix:///run/redis.sock?db=3")
    assert (url.socket, url.db, url.host) == ("/run/redis.sock", 3, None)


def test_parse_store_url_ipv6_redacted() -> None:
    assert parse_store_url("redis://[::1]:7000").redacted() == "redis://[::1]:7000/0"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://h", "expected a redis://"),
        ("redis://", "names no host"),
        ("redis://h/x", "the database is a number"),
        ("redis://h:99999", "out of range"),
        ("redis://h?ca=/x", "need a rediss:// URL"),
        ("rediss://h?cert=/c", "both cert= and key="),
        ("rediss://h?verify=maybe", "verify is"),
        ("redis://h/1?db=2", "given twice"),
        ("redis://h?colour=red", "unknown option"),
        ("unix://", "names the socket"),
        ("redis://h/" + "1" * 5000, "at most 4096"),
    ],
)
def test_parse_store_url_refuses(url: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        parse_store_url(url)


def test_parse_store_url_error_never_shows_password() -> None:
    with pytest.raises(ConfigError) as info:
        parse_store_url("redis://u:topsecret@h/notadb")
    assert "topsecret" not in str(info.value)


def test_parse_store_url_sentinel_nodes_service_and_db() -> None:
    url = parse_store_url("redis+sentinel://:pw@s1,s2:26380,[::1]:5/mymaster/2?wait=1")
    assert url.sentinels == (("s1", 26379), ("s2", 26380), ("::1", 5))
    assert (url.service, url.db, url.password, url.wait) == ("mymaster", 2, "pw", 1)
    assert url.redacted() == "redis+sentinel://:***@s1:26379,s2:26380,[::1]:5/mymaster/2?wait=1"
    assert "pw" not in repr(url)
    assert parse_store_url("redis+sentinel://s1/m?db=3").db == 3


def test_parse_store_url_wait_on_any_url() -> None:
    assert parse_store_url("redis://h?wait=2").redacted() == "redis://h:6379/0?wait=2"
    assert parse_store_url("unix:///s?wait=1").wait == 1
    assert parse_store_url("redis://h").wait == 0


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("redis+cluster://h:7000", "Redis Cluster is not supported"),
        ("rediss+cluster://h:7000", "Redis Cluster is not supported"),
        ("rediss+sentinel://s/m", "TLS to Sentinel"),
        ("redis+sentinel://s1", "names its primary's service"),
        ("redis+sentinel://s1/bad name", "names its primary's service"),
        ("redis+sentinel://s1,/m", "for each Sentinel"),
        ("redis+sentinel://s1:99999/m", "out of range"),
        ("redis+sentinel://s1/m/1?db=2", "given twice"),
        ("redis+sentinel://s1/m?ca=/x", "need a rediss:// URL"),
        ("redis+sentinel://" + ",".join(["s"] * 17) + "/m", "at most 16 Sentinels"),
        ("redis://h?wait=x", "wait is a number"),
        ("redis://h?wait=17", "wait is a number"),
    ],
)
def test_parse_store_url_refuses_sentinel_and_cluster_forms(url: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        parse_store_url(url)


def test_a_sentinel_url_error_never_shows_password() -> None:
    with pytest.raises(ConfigError) as info:
        parse_store_url("redis+sentinel://u:topsecret@s1/")
    assert "topsecret" not in str(info.value)
