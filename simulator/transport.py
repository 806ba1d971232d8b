"""How the crowd simulator talks to the platform: the same HTTP API a browser uses, either in-process through
Django's test client or against a running server by URL. Nothing here reads the platform's models."""

from __future__ import annotations

import http.client
import json
import threading
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit

REDIRECTS = (301, 302, 303, 307, 308)


@dataclass(frozen=True)
class Reply:
    status: int
    data: Any

    def expect(self, *statuses: int) -> Any:
        if self.status not in statuses:
            raise RuntimeError(f"the platform answered {self.status}: {self.data!r}")
        return self.data


class Transport(Protocol):
    def call(
        self,
        method: str,
        path: str,
        *,
        token: str,
        params: dict | None = None,
        json_body: Any = None,
        files: list[tuple[str, bytes]] | None = None,
        headers: dict[str, str] | None = None,
        binary: bool = False,
    ) -> Reply: ...


def _decode(status: int, body: bytes, binary: bool = False) -> Reply:
    if binary and 200 <= status < 300:
        return Reply(status, body)  # a file download: the bytes as served
    if not body:
        return Reply(status, None)
    try:
        return Reply(status, json.loads(body))
    except ValueError:
        return Reply(status, body.decode("utf-8", "replace")[:500])


def fetch_redirected(location: str, binary: bool, timeout: float = 30.0) -> Reply:
    """GET the URL a download redirected to (an export on S3 answers 302 to a signed bucket URL), as a browser
    would: without the platform's token, which a bucket must not see and whose signed URL needs none."""
    try:
        with urllib.request.urlopen(urllib.request.Request(location), timeout=timeout) as response:
            return _decode(response.status, response.read(), binary)
    except urllib.error.HTTPError as exc:
        return _decode(exc.code, exc.read(), binary)


def redirected_elsewhere(method: str, status: int, location: str | None) -> str | None:
    """The absolute URL a GET was redirected to (a signed storage URL), or None when it was not."""
    if method.upper() != "GET" or status not in REDIRECTS or not location:
        return None
    parts = urlsplit(location)
    return location if parts.scheme in ("http", "https") and parts.netloc else None


class InProcessTransport:
    """Django's test client: real URL routing, middleware, authentication and serializers, no sockets."""

    def __init__(self) -> None:
        from django.test import Client

        self.client = Client()

    def call(
        self, method, path, *, token, params=None, json_body=None, files=None, headers=None, binary=False
    ) -> Reply:
        extra = {"HTTP_AUTHORIZATION": f"Token {token}"}
        for name, value in (headers or {}).items():
            extra["HTTP_" + name.upper().replace("-", "_")] = value
        if params:
            path = f"{path}?{urlencode(params)}"
        method = method.upper()
        if method == "GET":
            response = self.client.get(path, **extra)
        elif files is not None:
            from django.core.files.uploadedfile import SimpleUploadedFile

            uploads = [SimpleUploadedFile(name, data) for name, data in files]
            response = self.client.post(path, {"files": uploads}, **extra)
        else:
            response = self.client.generic(
                method,
                path,
                json.dumps(json_body) if json_body is not None else "",
                "application/json",
                **extra,
            )
        # A file download (FileResponse) streams its body; everything else has `content`.
        body = b"".join(response.streaming_content) if response.streaming else response.content
        location = redirected_elsewhere(method, response.status_code, response.get("Location"))
        if location is not None:
            return fetch_redirected(location, binary)
        return _decode(response.status_code, body, binary)


class HttpTransport:
    """A running server by URL, one keep-alive connection per thread."""

    def __init__(self, base_url: str, timeout: float = 30.0) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--server must be an http(s) URL, got {base_url!r}")
        self.scheme, self.host, self.port = parts.scheme, parts.hostname, parts.port
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self.local = threading.local()

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
            conn = cls(self.host, self.port, timeout=self.timeout)
            self.local.conn = conn
        return conn

    def call(
        self, method, path, *, token, params=None, json_body=None, files=None, headers=None, binary=False
    ) -> Reply:
        url = self.prefix + path + (f"?{urlencode(params)}" if params else "")
        head = {"Authorization": f"Token {token}", "Accept": "application/json", **(headers or {})}
        body: bytes | None = None
        if files is not None:
            boundary = uuid.uuid4().hex
            body = _multipart(boundary, files)
            head["Content-Type"] = f"multipart/form-data; boundary={boundary}"
        elif json_body is not None:
            body = json.dumps(json_body).encode()
            head["Content-Type"] = "application/json"
        for attempt in (1, 2):
            conn = self._connection()
            try:
                conn.request(method.upper(), url, body=body, headers=head)
                response = conn.getresponse()
                data = response.read()
                break
            except (ConnectionError, http.client.HTTPException):
                conn.close()
                self.local.conn = None
                if attempt == 2:
                    raise
        location = redirected_elsewhere(method, response.status, response.getheader("Location"))
        if location is not None:
            return fetch_redirected(location, binary, self.timeout)
        return _decode(response.status, data, binary)


def _multipart(boundary: str, files: list[tuple[str, bytes]]) -> bytes:
    chunks: list[bytes] = []
    for name, data in files:
        chunks.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\n".encode()
        )
        chunks.append(data)
        chunks.append(b"\r\n")
    chunks.append(f"--{boundary}--\r\n".encode())
    return b"".join(chunks)
