"""Negative controls: planted bugs (`--plant NAME`), each of which must make the checker
fail. They show that the checks catch what they claim to; docs/reliability.md lists what
each run reported."""

import os
import subprocess

PLANTS = {
    "async-standby": "the standby is asynchronous (synchronous_standby_names = ''); "
                     "failovers come every 12 s at least, each after a few seconds of a "
                     "silent replication link",
    "retry-drops-key": "clients retry an order without its Idempotency-Key",
    "feed-unlocked": "stamp_events() gives ids from a sequence, without the advisory lock "
                     "(skipping rows another stamper holds), and sleeps a moment before its "
                     "transaction commits",
    "answer-before-commit": "PostgreSQL nodes run target/chaos-plant/"
                            "petstore-answer-before-commit, which answers a write burst's "
                            "jobs before its COMMIT",
    "webhook-out-of-order": "the nodes of both shops run target/chaos-plant/"
                            "petstore-webhook-out-of-order, whose delivery runs swap the "
                            "first two events of each page they read ahead",
    "replica-unchecked": "PostgreSQL nodes run target/chaos-plant/petstore-replica-unchecked, "
                         "whose read standbys serve every read they get without checking how "
                         "far they have replayed",
    "shared-answer-too-early": "PostgreSQL nodes run target/chaos-plant/"
                               "petstore-shared-answer-too-early, whose read bursts take the "
                               "node's latest position answer even when their reads were "
                               "queued after its question was sent (up to a second after); "
                               "they read only pg-c, the asynchronous read standby (a "
                               "synchronous one is read with no question)",
    "wrong-actor": "the nodes of both shops run target/chaos-plant/petstore-wrong-actor, "
                   "whose events name the key that made the change through the other door "
                   "(a change through /v1 as the console's)",
    "lines-separately": "the nodes of both shops run target/chaos-plant/"
                        "petstore-lines-separately: checkout lines are judged one by one "
                        "against the stock each pet had before the checkout, and a repeated "
                        "pet is not refused",
    "set-without-row": "the nodes of both shops run target/chaos-plant/"
                       "petstore-set-without-row: a stock set through PATCH /v1/inventory "
                       "writes no ledger row",
    "price-outside-tx": "PostgreSQL nodes run target/chaos-plant/"
                        "petstore-price-outside-tx: a checkout reads its lines' prices before "
                        "the transaction that locks their pets, and sleeps a moment",
    "hold-ended-twice": "the nodes of both shops run target/chaos-plant/"
                        "petstore-hold-ended-twice: a hold the sweeper expired is taken as "
                        "usable, so a release or a checkout ends it a second time",
    "expired-hold-accepted": "the nodes of both shops run target/chaos-plant/"
                             "petstore-expired-hold-accepted: a hold's checkout accepts a hold "
                             "whose expiry has come (until the sweeper ends it)",
    "sweep-without-reread": "the nodes of both shops run target/chaos-plant/"
                            "petstore-sweep-without-reread: the sweeper ends the holds it read "
                            "as due without reading them again under their pets' locks",
}

# Plants compiled into the node binary: each is petstore-http's Cargo feature of the same
# name with `plant-` before it, built with the chaos-plant profile (Cargo.toml: never in
# target/release), and run by the nodes of the shops named here. The build goes to
# target/chaos-plant/petstore whatever the feature, so the command copies it to a name of
# its own: a binary left there by another plant's build is never taken for this one's.
BUILT_PLANTS = {
    # The bug is in postgres/burst.rs: a SQLite node would run the correct code anyway, and
    # the COMMIT cut that shows it is a PostgreSQL fault.
    "answer-before-commit": ("pg",),
    # The bug is in webhook delivery, which both backends share: both shops must catch it.
    "webhook-out-of-order": ("pg", "sqlite"),
    # Read standbys are PostgreSQL's; the standby faults that make them lag (replay paused,
    # link stalled, killed) show it.
    "replica-unchecked": ("pg",),
    "shared-answer-too-early": ("pg",),
    # The bug is in the request's context (petstore-http's context.rs), which both backends
    # share: both shops must catch it (event-actor, webhook copies alike).
    "wrong-actor": ("pg", "sqlite"),
    # The checkout's rules and the ledger are the core's, the same on both backends: both
    # shops must catch each (the ledger's checks, checkout-repeated-pet).
    "lines-separately": ("pg", "sqlite"),
    "set-without-row": ("pg", "sqlite"),
    # A price change can only commit between the early read and the checkout's transaction
    # where writes run side by side. SQLite's one writer thread runs each write's use case
    # whole, the early read and the pause included, so none can: only PostgreSQL shows it.
    "price-outside-tx": ("pg",),
    # Holds are the core's, the same on both backends: both shops run each (a hold ended
    # twice: hold-ending, ledger-hold; a checkout past the expiry: hold-after-expiry). A
    # sweep without its read again shows only where two sweepers race for one hold, so on
    # PostgreSQL's two nodes: on SQLite's one, nothing else ends a hold once it is due.
    "hold-ended-twice": ("pg", "sqlite"),
    "expired-hold-accepted": ("pg", "sqlite"),
    "sweep-without-reread": ("pg", "sqlite"),
}


def plant_feature(plant):
    """petstore-http's Cargo feature that compiles `plant` in."""
    return f"plant-{plant}"


def plant_binary(plant):
    """Where the binary with `plant` compiled in is expected, from the repository's root."""
    return os.path.join("target", "chaos-plant", f"petstore-{plant}")


def plant_build(plant):
    """The commands that build `plant_binary(plant)` (run from the repository's root)."""
    return ("cargo build --profile chaos-plant -p petstore-http --bin petstore --features "
            f"petstore-http/{plant_feature(plant)} && cp target/chaos-plant/petstore "
            f"{plant_binary(plant)}")


# The feed stamped without its lock: the real stamp_events() is in
# migrations/postgres/2026-11-25-000004_feed_in_commit_order/up.sql. Here ids come from a
# sequence as each stamper runs, not from event_feed.last_id under the advisory lock, so two
# stampers overlap and the later one may commit first: ids then follow stamp order, not
# commit order, and a follower that read the larger ids first never sees the smaller ones.
# Without the lock, a stamper would still wait on the rows another one is moving (and so
# commit after it); SKIP LOCKED lets it move what is left instead, as a stamper written
# without the lock in mind would.
# The function is in the catalogue, so the standby has it and it survives a failover. It moves
# each event's actor as the real one does (migrations/postgres/2026-11-28-000008_event_actors):
# the plant breaks the order of the feed, nothing else.
FEED_UNLOCKED_SQL = """
CREATE SEQUENCE IF NOT EXISTS chaos_plant_feed_ids;
SELECT setval('chaos_plant_feed_ids',
              GREATEST((SELECT last_id FROM event_feed),
                       COALESCE((SELECT MAX(id) FROM events), 0)) + 1, false);
CREATE OR REPLACE FUNCTION stamp_events() RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    stamped bigint;
BEGIN
    IF current_setting('transaction_read_only') = 'on'
       OR current_setting('transaction_isolation') <> 'read committed'
       OR NOT EXISTS (SELECT FROM pending_events) THEN
        RETURN 0;
    END IF;
    WITH moved AS (
        DELETE FROM pending_events
        WHERE seq IN (SELECT seq FROM pending_events FOR UPDATE SKIP LOCKED)
        RETURNING seq, time, type, subject, data, traceparent, actor
    )
    INSERT INTO events (id, time, type, subject, data, traceparent, actor)
    SELECT nextval('chaos_plant_feed_ids'), time, type, subject, data, traceparent, actor
    FROM (SELECT * FROM moved ORDER BY seq) AS ordered;
    GET DIAGNOSTICS stamped = ROW_COUNT;
    PERFORM pg_sleep(random() * 0.1);
    RETURN stamped;
END;
$$;
"""

PLANTED_CHECK = ("SELECT count(*) FROM pg_proc WHERE proname = 'stamp_events' "
                 "AND prosrc LIKE '%chaos_plant_feed_ids%'")


def binary_for(plant, repo, release_binary, shop):
    """The binary the nodes of `shop` ("pg" or "sqlite") run under `plant` (None: no plant);
    None when it is the plant's and missing."""
    if shop in BUILT_PLANTS.get(plant, ()):
        path = os.path.join(repo, plant_binary(plant))
        return path if os.access(path, os.X_OK) else None
    return release_binary


def plant_feed_unlocked(cluster):
    """Replaces stamp_events() on the primary (after the nodes migrated it)."""
    out = subprocess.run(
        ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p",
         str(cluster.port), "-U", "postgres", "-d", "postgres"],
        input=FEED_UNLOCKED_SQL, capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise RuntimeError(f"planting stamp_events(): {out.stderr.strip()[-500:]}")


def feed_unlocked_still_planted(cluster):
    """True when the primary of the end still runs the planted stamp_events()."""
    return cluster.query(PLANTED_CHECK) == "1"
