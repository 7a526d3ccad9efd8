#!/usr/bin/env python3
"""Verify a petstore webhook delivery the Standard Webhooks way, with Python's standard library.

    event = verify(secret, headers, body)

`secret` is the `whsec_...` value `POST /v1/webhooks` showed once; `headers` the request's
headers (names in lower case); `body` the raw request body, as bytes, before any JSON parsing.
Returns the CloudEvent, or raises ValueError. Run this file to check it against the Standard
Webhooks specification's example and a delivery made like the service makes them.
"""

import base64
import hashlib
import hmac
import json
import time

# Refuse deliveries stamped more than five minutes from now: a captured request cannot be
# replayed later.
TOLERANCE_SECONDS = 5 * 60


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    content = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, content, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def verify(secret: str, headers: dict, body: bytes, now: float | None = None) -> dict:
    msg_id = headers["webhook-id"]
    timestamp = int(headers["webhook-timestamp"])
    now = time.time() if now is None else now
    if abs(now - timestamp) > TOLERANCE_SECONDS:
        raise ValueError("webhook-timestamp is too far from now")
    expected = sign(secret, msg_id, timestamp, body)
    # The header may hold several space-separated signatures (during a secret rotation).
    for entry in headers["webhook-signature"].split(" "):
        version, _, signature = entry.partition(",")
        if version == "v1" and hmac.compare_digest(signature, expected):
            return json.loads(body)
    raise ValueError("no valid signature")


if __name__ == "__main__":
    # The example in the Standard Webhooks specification.
    spec_secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    spec_headers = {
        "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "webhook-timestamp": "1614265330",
        "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    }
    spec_body = b'{"test": 2432232314}'
    assert verify(spec_secret, spec_headers, spec_body, now=1614265330) == {"test": 2432232314}

    # A delivery as the service makes it: the event id as webhook-id, now as the timestamp.
    secret = "whsec_" + base64.b64encode(bytes(range(32))).decode()
    body = b'{"specversion":"1.0","id":"42","source":"/v1","type":"order.placed"}'
    now = int(time.time())
    headers = {
        "webhook-id": "42",
        "webhook-timestamp": str(now),
        "webhook-signature": "v1," + sign(secret, "42", now, body),
    }
    assert verify(secret, headers, body)["type"] == "order.placed"
    for bad_body, bad_headers in [
        (body.replace(b"42", b"43"), headers),
        (body, {**headers, "webhook-id": "43"}),
        (body, {**headers, "webhook-timestamp": str(now - 3600)}),
        (body, {**headers, "webhook-signature": "v2," + sign(secret, "42", now, body)}),
    ]:
        try:
            verify(secret, bad_headers, bad_body)
        except ValueError:
            continue
        raise AssertionError(f"accepted a bad delivery: {bad_headers} {bad_body!r}")
    print("verify_webhook.py: all checks passed")
