"""Which addresses a candidate download may connect to (SSRF protection). Pure: parses a URL's host in every
spelling the resolver accepts and says why an address is refused; the fetcher (`candidates.fetch`) resolves
once, asks here about every address, and connects to the address it checked.

Refused: loopback, private, link-local (cloud metadata at 169.254.169.254 among them), shared (100.64/10),
multicast, reserved, unspecified ("0", "0.0.0.0", "::") and documentation ranges, IPv6 unique-local
(fd00:ec2::254, EC2's metadata over IPv6), and IPv4 addresses inside IPv6 (mapped ::ffff:127.0.0.1,
IPv4-compatible, 6to4, Teredo, NAT64) by the IPv4 address they carry. Legacy IPv4 spellings (2130706433,
0x7f000001, 0177.0.0.1, 127.1) are read the way inet_aton and the resolver read them, so no spelling names
another address than the one checked. An allow-list of host:port pairs (empty by default) lets named
endpoints through.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection
from dataclasses import dataclass
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

SCHEMES = {"http": 80, "https": 443}
NAT64 = ipaddress.ip_network("64:ff9b::/96")
NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
# Addresses cloud providers serve instance metadata on that no range check above names on its own.
METADATA = {
    ipaddress.ip_address("169.254.169.254"),
    ipaddress.ip_address("169.254.170.2"),
    ipaddress.ip_address("100.100.100.200"),
    ipaddress.ip_address("fd00:ec2::254"),
}
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


class UrlRefused(ValueError):
    """A URL the downloader will not fetch; the message says why."""


@dataclass(frozen=True)
class Target:
    """A checked URL: scheme, host as written (lowercase, trailing dot removed), port, and the request path."""

    scheme: str
    host: str
    port: int
    path: str  # path and query, as sent in the request line

    @property
    def host_port(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == SCHEMES[self.scheme] else f"{host}:{self.port}"


def target_parse(url: str) -> Target:
    """Check a URL's shape: http or https only, a host, a valid port, no user info. UrlRefused otherwise."""
    if not isinstance(url, str) or not url.strip():
        raise UrlRefused("empty URL")
    if any(ch in url for ch in "\r\n\t\x00 "):
        raise UrlRefused("URL contains whitespace or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UrlRefused(f"malformed URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise UrlRefused(f"scheme {scheme or '(none)'!r} is not allowed: only http and https")
    if parts.username is not None or parts.password is not None:
        raise UrlRefused("URLs with user info (user:password@) are not allowed")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise UrlRefused("URL has no host")
    if ":" not in host and not all(_LABEL.match(label) for label in host.split(".")):
        raise UrlRefused(f"host {host!r} is not a valid host name")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(scheme=scheme, host=host, port=port or SCHEMES[scheme], path=path)


def legacy_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address an inet_aton-style spelling names (1 to 4 parts, each decimal, 0x hex or 0 octal:
    2130706433, 0x7f.1, 0177.0.0.1, 127.1), or None when the host is not such a number."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values = []
    for part in parts:
        try:
            if re.fullmatch(r"0[xX][0-9a-fA-F]*", part):
                values.append(int(part[2:] or "0", 16))
            elif re.fullmatch(r"0[0-7]+", part):
                values.append(int(part, 8))
            elif re.fullmatch(r"0|[1-9][0-9]*", part):
                values.append(int(part, 10))
            else:
                return None
        except ValueError:
            return None
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        return None
    number = 0
    for v in head:
        number = number * 256 + v
    number = number * 256 ** (5 - len(values)) + last
    return ipaddress.IPv4Address(number)


def literal_address(host: str) -> Address | None:
    """The address a host names without DNS (IPv6 with or without brackets and zone, legacy IPv4), or None."""
    bare = host.strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        return legacy_ipv4(host)


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, 6to4, Teredo client, NAT64), if any."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in NAT64 or address in NAT64_LOCAL:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if int(address) >> 32 == 0 and int(address) > 1:  # deprecated IPv4-compatible ::a.b.c.d
        return ipaddress.IPv4Address(int(address))
    return None


def refusal(address: Address) -> str | None:
    """Why a download may not connect to this address, or None when it is a public unicast address."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = embedded_ipv4(address)
        if inner is not None:
            reason = refusal(inner)
            return f"{reason} (inside IPv6 {address})" if reason else None
    if address in METADATA:
        return f"{address} is a cloud metadata address"
    for test, what in (
        ("is_unspecified", "an unspecified"),
        ("is_loopback", "a loopback"),
        ("is_link_local", "a link-local"),
        ("is_multicast", "a multicast"),
        ("is_reserved", "a reserved"),
        ("is_private", "a private or special-purpose"),
    ):
        if getattr(address, test):
            return f"{address} is {what} address"
    if not address.is_global:
        return f"{address} is not a public address"
    return None


def allowed(target: Target, allow: Collection[str]) -> bool:
    """Whether the allow-list (lowercase "host:port" entries) names this target's host and port."""
    return target.host_port in allow


def allow_list(entries: Collection[str]) -> frozenset[str]:
    """Normalise allow-list entries ("Example.org.:8080" -> "example.org:8080"); ValueError on one without a
    numeric port, since an entry lets one endpoint through, never a whole host."""
    out = set()
    for entry in entries:
        entry = entry.strip().lower()
        if not entry:
            continue
        host, sep, port = entry.rpartition(":")
        if not sep or not port.isdigit() or not host:
            raise ValueError(f"allow-list entry {entry!r} must be host:port")
        out.add(f"{host.strip('[]').rstrip('.')}:{int(port)}")
    return frozenset(out)
