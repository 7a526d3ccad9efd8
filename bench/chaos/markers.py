"""The shipDate marker of an order: unique to the op that placed it (an order or a
checkout), so an order found in the database or the feed names the op, and so the
idempotency key, that made it."""

import datetime

MARKER_EPOCH = datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)


def ship_date_marker(op_id):
    moment = MARKER_EPOCH + datetime.timedelta(seconds=op_id)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def op_of_ship_date(text):
    """The op id a shipDate marker stands for, or None if it is no marker."""
    if not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return int((moment - MARKER_EPOCH).total_seconds())
