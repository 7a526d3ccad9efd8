//! The tables, as Diesel sees them on PostgreSQL. Written by hand to match
//! `migrations/postgres/`; the migration tests run every query against the migrated schema.

diesel::table! {
    categories (id) {
        id -> BigInt,
        name -> Text,
        name_key -> Text,
        description -> Nullable<Text>,
    }
}

diesel::table! {
    pets (id) {
        id -> BigInt,
        name -> Text,
        name_key -> Text,
        category_id -> BigInt,
        status -> Text,
        stock -> BigInt,
        open_orders -> BigInt,
    }
}

diesel::table! {
    orders (id) {
        id -> BigInt,
        pet_id -> BigInt,
        quantity -> BigInt,
        ship_date -> Nullable<Timestamptz>,
        complete -> Bool,
        owner_id -> Nullable<BigInt>,
    }
}

diesel::table! {
    events (id) {
        id -> BigInt,
        time -> Timestamptz,
        #[sql_name = "type"]
        event_type -> Text,
        subject -> Text,
        data -> Jsonb,
        traceparent -> Nullable<Text>,
    }
}

diesel::table! {
    api_keys (id) {
        id -> BigInt,
        name -> Text,
        role -> Text,
        prefix -> Text,
        hash -> Binary,
        created_at -> Timestamptz,
        revoked_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    idempotency_records (owner_id, idempotency_key) {
        owner_id -> BigInt,
        idempotency_key -> Text,
        fingerprint -> Binary,
        response -> Binary,
        recorded_at -> Timestamptz,
    }
}

diesel::table! {
    webhooks (id) {
        id -> BigInt,
        url -> Text,
        event_types -> Text,
        secret -> Text,
        created_at -> Timestamptz,
        delivered_through -> BigInt,
        failed_attempts -> BigInt,
        next_attempt_at -> Nullable<Timestamptz>,
        leased_by -> Nullable<Text>,
        leased_until -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    webhook_deliveries (id) {
        id -> BigInt,
        webhook_id -> BigInt,
        event_id -> BigInt,
        event_type -> Text,
        attempt -> BigInt,
        attempted_at -> Timestamptz,
        outcome -> Text,
        status_code -> Nullable<Integer>,
        error -> Nullable<Text>,
        next_attempt_at -> Nullable<Timestamptz>,
    }
}

diesel::allow_tables_to_appear_in_same_query!(
    categories,
    pets,
    orders,
    events,
    api_keys,
    idempotency_records,
    webhooks,
    webhook_deliveries
);
