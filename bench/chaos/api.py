"""A small HTTP client for the service that records every attempt in the history.

One connection per request: a node may be killed at any moment, and a pooled connection to a
dead node would turn the next request's failure into a puzzle about which request it was.
"""

import http.client
import json
import socket
import time

# Answers that say nothing definite about a write: the client retries them (with the same
# Idempotency-Key where there is one). 500 is here too: it is an anomaly, but it tells the
# client nothing about what happened.
RETRYABLE_STATUSES = {408, 429, 500, 502, 503, 504}
RETRYABLE_CODES = {"idempotency_key_in_use"}
# A 503 that is a refusal for good: a checkout of several lines before the stock ledger has
# begun (docs/domain.md) stays refused until the operator finishes the upgrade.
REFUSED_CODES = {"upgrade_unfinished"}


class Answer:
    __slots__ = ("status", "body", "headers", "error")

    def __init__(self, status=None, body=None, headers=None, error=None):
        self.status = status
        self.body = body
        self.headers = headers or {}
        self.error = error

    @property
    def code(self):
        return self.body.get("code") if isinstance(self.body, dict) else None

    @property
    def ok(self):
        return self.status is not None and 200 <= self.status < 300

    @property
    def definite(self):
        """True when retrying cannot change what this answer says."""
        if self.status is None:
            return False
        if self.code in REFUSED_CODES:
            return True
        if self.status in RETRYABLE_STATUSES:
            return False
        return self.code not in RETRYABLE_CODES


def send(address, method, path, key=None, body=None, headers=None, timeout=15.0):
    """One request to `address` ("host:port"); never raises for network trouble."""
    host, port = address.rsplit(":", 1)
    all_headers = {"Connection": "close"}
    if key:
        all_headers["Authorization"] = f"Bearer {key}"
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        all_headers["Content-Type"] = "application/json"
    all_headers.update(headers or {})
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request(method, path, body=payload, headers=all_headers)
        response = conn.getresponse()
        raw = response.read()
        answer_headers = {k.lower(): v for k, v in response.getheaders()}
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode("utf-8", "replace")[:500]
        return Answer(response.status, parsed, answer_headers)
    except ConnectionRefusedError:
        # Nothing listened: the request never reached a node, so it had no effect.
        return Answer(error="refused")
    except socket.timeout:
        return Answer(error="timeout")
    except (ConnectionError, http.client.HTTPException, OSError) as err:
        return Answer(error=f"{type(err).__name__}")
    finally:
        conn.close()


def _item(item):
    """What the read checks need of one item of a page: an order's id and whether it is
    complete, a stock level's pet and quantity, anything else's id."""
    if not isinstance(item, dict):
        return None
    if "complete" in item:
        return [item.get("id"), bool(item.get("complete"))]
    if "id" not in item and "petId" in item:
        return [item.get("petId"), item.get("quantity")]
    return item.get("id")


def trim(kind, answer):
    """What of an answer the history keeps: writes whole, reads summarised (a feed page by its
    ids; a list by what each item shows, and whether a next page was linked), so that a
    30-minute run's history stays a few tens of megabytes."""
    body = answer.body
    if not answer.ok or kind not in ("feed", "read_page", "read_point"):
        return body
    if kind == "feed" and isinstance(body, list):
        return {"ids": [int(event.get("id", 0)) for event in body]}
    if isinstance(body, list):
        return {"count": len(body), "items": [_item(item) for item in body],
                "more": 'rel="next"' in answer.headers.get("link", "")}
    return body


class Recorder:
    """Sends requests to the nodes by index and writes each attempt to the history."""

    def __init__(self, addresses, history, timeout):
        self.addresses = addresses
        self.history = history
        self.timeout = timeout
        # secret -> key id: each call line names the key it was sent with, never its secret.
        self.key_ids = {}

    def call(self, op_id, kind, client, node, method, path, key=None, body=None,
             headers=None):
        sent = time.time()
        answer = send(self.addresses[node], method, path, key, body, headers, self.timeout)
        answered = time.time()
        record = {
            "t": "call", "op": op_id, "kind": kind, "client": client, "node": node,
            "sent": round(sent, 4), "answered": round(answered, 4),
            "method": method, "path": path, "status": answer.status, "code": answer.code,
            "error": answer.error, "resp": trim(kind, answer),
        }
        if key in self.key_ids:
            record["keyId"] = self.key_ids[key]
        if body is not None:
            record["body"] = body
        if headers:
            record["headers"] = headers
        token = answer.headers.get("consistency-token")
        if token:
            record["token"] = token
        self.history.write(record)
        return answer
