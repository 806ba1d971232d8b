"""The web service's container probe: GET /healthz on this host's gunicorn as the TLS proxy would send it (one of
DJANGO_ALLOWED_HOSTS as Host, X-Forwarded-Proto https, so production's HTTPS redirect does not answer instead).
Exits 0 on 200, 1 otherwise. Usage: python deploy/healthcheck.py [PORT]"""

from __future__ import annotations

import http.client
import os
import sys


def probe_host(allowed_hosts: str) -> str:
    """A host name the settings accept: the first of DJANGO_ALLOWED_HOSTS (".example.org" allows example.org)."""
    first = next((h.strip() for h in allowed_hosts.split(",") if h.strip()), "localhost")
    return "localhost" if first == "*" else first.lstrip(".")


def healthy(port: int, host: str, timeout: float = 4.0) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", "/healthz", headers={"Host": host, "X-Forwarded-Proto": "https"})
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def main(argv: list[str]) -> int:
    port = int(argv[1]) if len(argv) > 1 else 8000
    return 0 if healthy(port, probe_host(os.environ.get("DJANGO_ALLOWED_HOSTS", ""))) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
