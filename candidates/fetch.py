"""One candidate download over HTTP(S) with SSRF protection and limits, and a bounded pool of them with per-host
politeness and retries. No Django: the import service (`candidates.services`) passes the limits in.

Every hop resolves its host once, refuses the whole host when any address it resolves to is refused
(`candidates.addresses`), and connects to the address it checked (TLS still verifies the host name): a second
DNS answer can never swap in another address. Redirects are followed by hand, at most `max_redirects` hops,
each checked like the first URL.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from urllib.parse import urljoin

from .addresses import Address, Target, UrlRefused, allowed, literal_address, refusal, target_parse

USER_AGENT = "Crowdlabel-candidate-import/1"
Resolver = Callable[[str, int], list[Address]]


class FetchFailed(Exception):
    """A download that did not give an image's bytes. `transient` failures (time-outs, refused connections,
    5xx, 429) are worth another attempt; the others are not."""

    def __init__(self, reason: str, *, transient: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.transient = transient


@dataclass(frozen=True)
class FetchLimits:
    max_bytes: int
    timeout: float = 10.0  # seconds per connect or read
    total_seconds: float = 30.0  # the whole download, redirects included
    max_redirects: int = 5
    allow: frozenset[str] = frozenset()  # "host:port" entries let through whatever they resolve to


@dataclass(frozen=True)
class Fetched:
    url: str
    final_url: str
    content_type: str
    data: bytes
    redirects: int = 0


def system_resolver(host: str, port: int) -> list[Address]:
    literal = literal_address(host)
    if literal is not None:
        return [literal]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise FetchFailed(f"cannot resolve {host}: {exc}", transient=False) from None
    out: list[Address] = []
    for *_, sockaddr in infos:
        address = literal_address(str(sockaddr[0]))
        if address is not None and address not in out:
            out.append(address)
    if not out:
        raise FetchFailed(f"{host} resolves to no address")
    return out


def resolve_checked(target: Target, limits: FetchLimits, resolver: Resolver) -> Address:
    """The one address to connect to: every address the host resolves to must pass (unless allow-listed)."""
    addresses = resolver(target.host, target.port)
    if not allowed(target, limits.allow):
        for address in addresses:
            reason = refusal(address)
            if reason:
                raise FetchFailed(f"refused address: {target.host} -> {reason}")
    return addresses[0]


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to a checked address, verifying the certificate against the URL's host name."""

    def __init__(self, address: str, server_name: str, port: int, timeout: float):
        super().__init__(address, port, timeout=timeout, context=ssl.create_default_context())
        self._server_name = server_name

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self._server_name)


def _connection(target: Target, address: Address, timeout: float) -> http.client.HTTPConnection:
    if target.scheme == "https":
        return _PinnedHTTPSConnection(str(address), target.host, target.port, timeout)
    return http.client.HTTPConnection(str(address), target.port, timeout=timeout)


def fetch(url: str, limits: FetchLimits, *, resolver: Resolver = system_resolver) -> Fetched:
    """Download one image URL within the limits. FetchFailed (with its reason) on anything else: a refused
    URL or address, too many redirects, an HTTP error, a non-image content type, too many bytes, too slow."""
    deadline = time.monotonic() + limits.total_seconds
    current = url
    for hop in range(limits.max_redirects + 1):
        try:
            target = target_parse(current)
        except UrlRefused as exc:
            raise FetchFailed(f"refused URL{' after redirect' if hop else ''}: {exc}") from None
        address = resolve_checked(target, limits, resolver)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise FetchFailed(f"took longer than {limits.total_seconds:g} s", transient=True)
        conn = _connection(target, address, min(limits.timeout, remaining))
        try:
            conn.request(
                "GET",
                target.path,
                headers={"Host": target.host_header, "User-Agent": USER_AGENT, "Accept": "image/*"},
            )
            response = conn.getresponse()
            if response.status in (301, 302, 303, 307, 308):
                location = response.getheader("Location")
                if not location:
                    raise FetchFailed(f"HTTP {response.status} redirect without a Location")
                current = urljoin(current, location)
                continue
            if response.status != 200:
                transient = response.status >= 500 or response.status in (408, 429)
                raise FetchFailed(f"HTTP {response.status} {response.reason}".strip(), transient=transient)
            content_type = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
            if not content_type.startswith("image/"):
                raise FetchFailed(f"content type {content_type or '(none)'!r} is not an image")
            data = _read_body(response, limits, deadline, conn)
            return Fetched(url=url, final_url=current, content_type=content_type, data=data, redirects=hop)
        except TimeoutError:
            raise FetchFailed(f"timed out (limit {limits.timeout:g} s per read)", transient=True) from None
        except ssl.SSLError as exc:
            raise FetchFailed(f"TLS error: {exc.reason or exc}") from None
        except (ConnectionError, http.client.HTTPException, OSError) as exc:
            raise FetchFailed(f"connection failed: {exc}", transient=True) from None
        finally:
            conn.close()
    raise FetchFailed(f"more than {limits.max_redirects} redirects")


def _read_body(response, limits: FetchLimits, deadline: float, conn) -> bytes:
    length = response.getheader("Content-Length")
    if length and length.isdigit() and int(length) > limits.max_bytes:
        raise FetchFailed(f"file is {int(length):,} bytes, more than the limit of {limits.max_bytes:,}")
    chunks: list[bytes] = []
    size = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise FetchFailed(f"took longer than {limits.total_seconds:g} s", transient=True)
        if conn.sock is not None:
            conn.sock.settimeout(min(limits.timeout, remaining))
        chunk = response.read1(65536) if hasattr(response, "read1") else response.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limits.max_bytes:
            raise FetchFailed(f"file is more than the limit of {limits.max_bytes:,} bytes")
        chunks.append(chunk)


@dataclass(frozen=True)
class PoolSettings:
    concurrency: int = 4  # downloads at once, over all hosts
    host_interval: float = 0.0  # seconds between two requests' starts to one host (one at a time per host)
    attempts: int = 3  # per URL, for transient failures
    backoff: float = 1.0  # seconds before the second attempt, doubling after each


@dataclass
class Outcome:
    index: int
    url: str
    fetched: Fetched | None = None
    error: str = ""
    attempts: int = 0


@dataclass
class _HostGate:
    """One request at a time per host, and `interval` seconds between their starts."""

    interval: float
    locks: dict[str, threading.Lock] = field(default_factory=dict)
    last: dict[str, float] = field(default_factory=dict)
    guard: threading.Lock = field(default_factory=threading.Lock)

    def lock(self, host: str) -> threading.Lock:
        with self.guard:
            return self.locks.setdefault(host, threading.Lock())

    def before(self, host: str) -> None:  # called holding the host's lock
        wait_for = self.last.get(host, float("-inf")) + self.interval - time.monotonic()
        if wait_for > 0:
            time.sleep(wait_for)
        self.last[host] = time.monotonic()


def _host_of(url: str) -> str:
    try:
        return target_parse(url).host_port
    except UrlRefused:
        return ""


def fetch_many(
    urls: Sequence[str],
    limits: FetchLimits,
    pool: PoolSettings,
    *,
    fetcher: Callable[[str, FetchLimits], Fetched] | None = None,
) -> Iterator[Outcome]:
    """Download URLs with at most `pool.concurrency` at once and one at a time per host, retrying transient
    failures with exponential back-off; yields each outcome as it completes (any order)."""
    gate = _HostGate(pool.host_interval)
    do_fetch = fetcher or (lambda u, lim: fetch(u, lim))

    def one(index: int, url: str) -> Outcome:
        outcome = Outcome(index=index, url=url)
        host = _host_of(url)
        for attempt in range(1, max(1, pool.attempts) + 1):
            outcome.attempts = attempt
            try:
                with gate.lock(host):
                    gate.before(host)
                    outcome.fetched = do_fetch(url, limits)
                outcome.error = ""
                return outcome
            except FetchFailed as exc:
                outcome.error = exc.reason
                if not exc.transient or attempt >= pool.attempts:
                    break
            time.sleep(pool.backoff * 2 ** (attempt - 1))
        if outcome.attempts > 1:
            outcome.error += f" (after {outcome.attempts} attempts)"
        return outcome

    with ThreadPoolExecutor(max_workers=max(1, pool.concurrency)) as executor:
        pending: set[Future[Outcome]] = {executor.submit(one, i, u) for i, u in enumerate(urls)}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
