"""One HTTP request as a client on the provisioning network makes it (the installer
endpoint's tests)."""

from __future__ import annotations


def http(method: str, url: str, token: str | None, body: bytes | None = None,
         source: str | None = None) -> tuple[int, bytes]:
    """One request; ``source``: the local address to send it from (any 127.x works)."""
    import http.client
    from urllib.parse import urlsplit

    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname or "", u.port, timeout=5,
                                      source_address=(source, 0) if source else None)
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    if method == "POST" and body is None:
        body = b""
    try:
        conn.request(method, u.path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()
