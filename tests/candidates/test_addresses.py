"""SSRF protection of candidate downloads: every spelling of a refused address is refused, public addresses
pass, the allow-list lets exactly its host:port through, and a refused host is never connected to."""

from __future__ import annotations

import ipaddress

import pytest

from candidates.addresses import (
    UrlRefused,
    allow_list,
    legacy_ipv4,
    literal_address,
    refusal,
    target_parse,
)
from candidates.fetch import FetchFailed, FetchLimits, fetch
from tests.annotation.imagefiles import jpeg
from tests.candidates.server import Site

REFUSED_HOSTS = [
    ("127.0.0.1", "loopback"),
    ("127.1", "loopback"),
    ("2130706433", "loopback"),  # decimal
    ("0x7f000001", "loopback"),  # hex
    ("0x7f.0.0.1", "loopback"),
    ("0177.0.0.1", "loopback"),  # octal
    ("017700000001", "loopback"),
    ("0", "unspecified"),
    ("0.0.0.0", "unspecified"),
    ("[::]", "unspecified"),
    ("[::1]", "loopback"),
    ("[0:0:0:0:0:0:0:1]", "loopback"),
    ("[::ffff:127.0.0.1]", "loopback"),  # IPv4-mapped
    ("[::ffff:7f00:1]", "loopback"),
    ("[::127.0.0.1]", "loopback"),  # IPv4-compatible
    ("[2002:7f00:1::]", "loopback"),  # 6to4
    ("[64:ff9b::a9fe:a9fe]", "metadata"),  # NAT64 of 169.254.169.254
    ("169.254.169.254", "metadata"),
    ("0xa9fea9fe", "metadata"),
    ("2852039166", "metadata"),
    ("[fd00:ec2::254]", "metadata"),
    ("100.100.100.200", "metadata"),
    ("169.254.1.1", "link-local"),
    ("[fe80::1]", "link-local"),
    ("10.0.0.1", "private"),
    ("012.0.0.1", "private"),  # octal 10.0.0.1
    ("172.16.5.4", "private"),
    ("192.168.0.1", "private"),
    ("[fc00::1]", "private"),
    ("100.64.0.1", "address"),  # shared address space: not global
    ("224.0.0.1", "multicast"),
    ("[ff02::1]", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    ("192.0.2.1", "special-purpose"),  # documentation
]


@pytest.mark.parametrize(("host", "what"), REFUSED_HOSTS, ids=[h for h, _ in REFUSED_HOSTS])
def test_every_spelling_of_a_refused_address_is_refused(host, what):
    target = target_parse(f"http://{host}/x.jpg")
    address = literal_address(target.host)
    assert address is not None, host
    reason = refusal(address)
    assert reason is not None and what in reason, (host, reason)


@pytest.mark.parametrize("host", ["93.184.216.34", "8.8.8.8", "[2606:4700:4700::1111]", "[::ffff:8.8.8.8]"])
def test_public_addresses_pass(host):
    assert refusal(literal_address(target_parse(f"https://{host}/").host)) is None


def test_legacy_ipv4_reads_as_inet_aton_does():
    assert legacy_ipv4("127.1") == ipaddress.IPv4Address("127.0.0.1")
    assert legacy_ipv4("10.1.258") == ipaddress.IPv4Address("10.1.1.2")
    assert legacy_ipv4("0x7f.0x1") == ipaddress.IPv4Address("127.0.0.1")
    assert legacy_ipv4("256.1.1.1") is None
    assert legacy_ipv4("08.1.1.1") is None  # not octal, not decimal: a name, resolved by DNS
    assert legacy_ipv4("example") is None


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://example.org/a.jpg", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("gopher://example.org/", "only http and https"),
        ("http://user:pw@example.org/", "user info"),
        ("http:///a.jpg", "no host"),
        ("http://exa mple.org/", "whitespace"),
        ("http://example.org:99999/", "malformed"),
        ("http://-bad-.org/", "not a valid host name"),
        ("", "empty"),
    ],
)
def test_urls_of_the_wrong_shape_are_refused_with_the_reason(url, reason):
    with pytest.raises(UrlRefused, match=reason):
        target_parse(url)


def test_trailing_dots_and_case_do_not_change_the_host():
    assert target_parse("http://Example.ORG./a").host == "example.org"
    assert target_parse("http://127.0.0.1./a").host == "127.0.0.1"


def test_allow_list_needs_a_port_and_normalises_entries():
    assert allow_list(["Example.org.:8080", " 127.0.0.1:5000 ", "[::1]:81", ""]) == {
        "example.org:8080",
        "127.0.0.1:5000",
        "::1:81",
    }
    with pytest.raises(ValueError, match="host:port"):
        allow_list(["example.org"])


def test_a_name_that_resolves_to_a_refused_address_is_never_connected_to():
    with Site() as site:
        site.image("/a.jpg", jpeg(1))
        limits = FetchLimits(max_bytes=10**6, timeout=2)

        # a DNS answer mixing a public and a loopback address: the host is refused as a whole
        def resolver(host, port):
            return [ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("127.0.0.1")]

        with pytest.raises(FetchFailed, match="refused address: images.example -> 127.0.0.1 is a loopback"):
            fetch(f"http://images.example:{site.port}/a.jpg", limits, resolver=resolver)
        with pytest.raises(FetchFailed, match="loopback"):
            fetch(site.url("/a.jpg"), limits)
        assert site.hits["/a.jpg"] == 0


def test_the_allow_list_lets_one_loopback_port_through_and_connects_to_the_checked_address():
    with Site() as site, Site() as other:
        site.image("/a.jpg", jpeg(1))
        other.image("/a.jpg", jpeg(1))
        limits = FetchLimits(max_bytes=10**6, timeout=2, allow=allow_list([f"127.0.0.1:{site.port}"]))
        assert fetch(site.url("/a.jpg"), limits).data == jpeg(1)
        with pytest.raises(FetchFailed, match="loopback"):
            fetch(other.url("/a.jpg"), limits)
        # a name allow-listed by host:port is connected to at the address it resolved to, once
        calls = []

        def resolver(host, port):
            calls.append(host)
            return [ipaddress.ip_address("127.0.0.1")]

        named = FetchLimits(max_bytes=10**6, timeout=2, allow=allow_list([f"images.test:{site.port}"]))
        assert fetch(f"http://images.test:{site.port}/a.jpg", named, resolver=resolver).data == jpeg(1)
        assert calls == ["images.test"]
        assert other.hits["/a.jpg"] == 0 and site.hits["/a.jpg"] == 2


def test_a_redirect_is_checked_like_the_first_url():
    with Site() as site, Site() as other:
        other.image("/a.jpg", jpeg(1))
        site.routes["/to-other-port"] = (302, {"Location": other.url("/a.jpg")}, b"")
        site.routes["/to-metadata"] = (302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b"")
        site.routes["/to-ftp"] = (301, {"Location": "ftp://example.org/a.jpg"}, b"")
        site.routes["/loop"] = (302, {"Location": "/loop"}, b"")
        limits = FetchLimits(
            max_bytes=10**6, timeout=2, max_redirects=3, allow=allow_list([f"127.0.0.1:{site.port}"])
        )
        with pytest.raises(FetchFailed, match="loopback"):
            fetch(site.url("/to-other-port"), limits)
        with pytest.raises(FetchFailed, match="metadata"):
            fetch(site.url("/to-metadata"), limits)
        with pytest.raises(FetchFailed, match="after redirect.*only http and https"):
            fetch(site.url("/to-ftp"), limits)
        with pytest.raises(FetchFailed, match="more than 3 redirects"):
            fetch(site.url("/loop"), limits)
        assert site.hits["/loop"] == 4
        assert other.hits["/a.jpg"] == 0
