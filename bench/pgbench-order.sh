# An order's statements, as pgbench sends them: sourced by bench/orders-postgres and
# bench/pg-client/run, so both replay the same statements. They are the statements the service
# sent for one order before it held its writes back (docs/storage.md, "Writes held back": it
# now sends the order, stock, record and events in two statements before its COMMIT), kept as
# the fixed baseline those benches compare with.
#
# pgbench_order_script PETS: those statements (PostgreSQL's log with log_statement=all showed
# them), for a pet drawn at random from 1..=PETS.
# pgbench_order_events: the event arrays those statements bind, given once with -D, as the
# service binds them.
pgbench_order_script() {
  cat <<SQL
\set pet random(1, $1)
BEGIN ISOLATION LEVEL READ COMMITTED;
SELECT "pets"."id", "pets"."name", "pets"."category_id", "pets"."status", "pets"."stock", "pets"."open_orders" FROM "pets" WHERE ("pets"."id" = :pet) FOR UPDATE \gset
\set left :stock - 1
INSERT INTO "orders" ("pet_id", "quantity", "ship_date", "complete", "owner_id") VALUES (:pet, 1, NULL, false, 1) RETURNING "orders"."id";
UPDATE pets SET stock = :left WHERE id = :pet;
INSERT INTO pending_events (time, type, subject, data, traceparent) SELECT now(), e.type, e.subject, e.data, NULL FROM unnest(:types::text[], :subjects::text[], :data::jsonb[]) WITH ORDINALITY AS e(type, subject, data, place) ORDER BY e.place RETURNING pg_current_xact_id()::text::bigint;
COMMIT;
SQL
}

# pgbench_keyed_order_script PETS: the same order sent with an Idempotency-Key, as clients are
# told to send every order (docs/api.md): the statements above and the key's record, written
# as the service writes it (over an expired record of the key, never over a fresh one). Each
# transaction's key is drawn at random from 2^62, so two never share one.
pgbench_keyed_order_script() {
  pgbench_order_script "$1" | sed -e '/^COMMIT;$/d'
  cat <<SQL
\set key random(1, 4611686018427387904)
INSERT INTO idempotency_records (owner_id, idempotency_key, fingerprint, response, recorded_at) VALUES (1, 'key-' || :key, :fingerprint::bytea, :response::bytea, now()) ON CONFLICT (owner_id, idempotency_key) DO UPDATE SET fingerprint = excluded.fingerprint, response = excluded.response, recorded_at = excluded.recorded_at WHERE idempotency_records.recorded_at < excluded.recorded_at - interval '24 hours';
COMMIT;
SQL
}

# shellcheck disable=SC2034 # used by the scripts that source this file
pgbench_order_events=(
  -D 'types={order.placed,inventory.updated}'
  -D 'subjects={store/orders/1,inventory/1}'
  -D 'data={"{\"id\": 1, \"petId\": 1, \"complete\": false, \"quantity\": 1}","{\"petId\": 1, \"status\": \"available\", \"quantity\": 999999}"}'
  # A key's record as the service keeps it: the request's SHA-256, and the answer it got
  # (status, Location, ETag and body; about 200 bytes).
  -D "fingerprint=\\x$(printf '%064d' 0)"
  -D "response=\\x$(printf '%0400d' 0)"
)

# pgbench_batched_order_script PETS ORDERS: ORDERS of those orders in one transaction, the
# statements of each as above, each for a pet drawn from its own slice of 1..=PETS, so that a
# transaction locks its pets in id order and two transactions never wait on each other in a
# cycle (the service would have to take that care, or retry deadlocks).
pgbench_batched_order_script() {
  local pets="$1" orders="$2" slice n
  slice=$((pets / orders))
  for ((n = 0; n < orders; n++)); do
    echo "\\set pet$n random($((n * slice + 1)), $(((n + 1) * slice)))"
  done
  echo "BEGIN ISOLATION LEVEL READ COMMITTED;"
  for ((n = 0; n < orders; n++)); do
    pgbench_order_script "$pets" | sed -e '/^\\set pet /d' -e '/^BEGIN/d' -e '/^COMMIT/d' \
      -e "s/:pet\\b/:pet$n/g"
  done
  echo "COMMIT;"
}
