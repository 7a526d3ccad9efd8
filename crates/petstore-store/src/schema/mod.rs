//! The tables, as Diesel sees them on both backends. Written by hand to match `migrations/`;
//! the migration tests run every query against each backend's migrated schema.
//!
//! Every column has the same type on both but two, whose storage differs: a time
//! ([`sql_types::UtcTime`]) and a JSON document ([`sql_types::JsonValue`]). Both read and write
//! the same Rust values on either backend, so every statement is written once (`repositories/`).

pub(crate) mod sql_types;

diesel::table! {
    use diesel::sql_types::*;
    use crate::schema::sql_types::*;

    categories (id) {
        id -> BigInt,
        name -> Text,
        name_key -> Text,
        description -> Nullable<Text>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::schema::sql_types::*;

    pets (id) {
        id -> BigInt,
        name -> Text,
        name_key -> Text,
        category_id -> BigInt,
        status -> Text,
        stock -> BigInt,
        open_orders -> BigInt,
        committed -> BigInt,
        held -> BigInt,
        price_amount -> Nullable<BigInt>,
        price_currency -> Nullable<Text>,
    }
}

diesel::table! {
    /// One row: the currency every price of the shop is in.
    shop (id) {
        id -> BigInt,
        currency -> Text,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::schema::sql_types::*;

    orders (id) {
        id -> BigInt,
        pet_id -> BigInt,
        quantity -> BigInt,
        ship_date -> Nullable<UtcTime>,
        complete -> Bool,
        owner_id -> Nullable<BigInt>,
        unit_amount -> Nullable<BigInt>,
        currency -> Nullable<Text>,
        line_count -> BigInt,
    }
}

diesel::table! {
    /// Lines 2 and on of an order of several; line 1 is the order's row.
    order_lines (order_id, line_no) {
        order_id -> BigInt,
        line_no -> BigInt,
        pet_id -> BigInt,
        quantity -> BigInt,
        unit_amount -> Nullable<BigInt>,
        currency -> Nullable<Text>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::schema::sql_types::*;

    events (id) {
        id -> BigInt,
        time -> UtcTime,
        #[sql_name = "type"]
        event_type -> Text,
        subject -> Text,
        data -> JsonValue,
        traceparent -> Nullable<Text>,
        actor -> Nullable<Text>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::schema::sql_types::*;

    api_keys (id) {
        id -> BigInt,
        name -> Text,
        role -> Text,
        prefix -> Text,
        hash -> Binary,
        created_at -> UtcTime,
        revoked_at -> Nullable<UtcTime>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::schema::sql_types::*;

    idempotency_records (owner_id, idempotency_key) {
        owner_id -> BigInt,
        idempotency_key -> Text,
        fingerprint -> Binary,
        response -> Binary,
        recorded_at -> UtcTime,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::schema::sql_types::*;

    webhooks (id) {
        id -> BigInt,
        url -> Text,
        event_types -> Text,
        secret -> Text,
        created_at -> UtcTime,
        delivered_through -> BigInt,
        failed_attempts -> BigInt,
        next_attempt_at -> Nullable<UtcTime>,
        leased_by -> Nullable<Text>,
        leased_until -> Nullable<UtcTime>,
        delivered_events -> BigInt,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::schema::sql_types::*;

    webhook_deliveries (id) {
        id -> BigInt,
        webhook_id -> BigInt,
        event_id -> BigInt,
        event_type -> Text,
        attempt -> BigInt,
        attempted_at -> UtcTime,
        outcome -> Text,
        status_code -> Nullable<Integer>,
        error -> Nullable<Text>,
        next_attempt_at -> Nullable<UtcTime>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::schema::sql_types::*;

    staff_sessions (token_hash) {
        token_hash -> Binary,
        key_id -> BigInt,
        started_at -> UtcTime,
        seen_at -> UtcTime,
    }
}

diesel::table! {
    node_heartbeats (node) {
        node -> Text,
        schema_version -> Text,
        seen_at -> BigInt,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::schema::sql_types::*;

    /// The stock ledger: one row per movement of a pet's stock (`petstore_core::Movement`).
    stock_movements (id) {
        id -> BigInt,
        pet_id -> BigInt,
        kind -> Text,
        quantity -> BigInt,
        available_change -> BigInt,
        committed_change -> BigInt,
        available_after -> BigInt,
        committed_after -> BigInt,
        order_id -> Nullable<BigInt>,
        line_no -> Nullable<BigInt>,
        reason -> Nullable<Text>,
        actor -> Nullable<Text>,
        request_id -> Nullable<Text>,
        time -> UtcTime,
        held_change -> BigInt,
        held_after -> BigInt,
        hold_id -> Nullable<BigInt>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::schema::sql_types::*;

    /// One row once the stock ledger has begun: movements are recorded from then on.
    ledger_opened (id) {
        id -> BigInt,
        at -> UtcTime,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::schema::sql_types::*;

    /// Holds, active (`ended` null) and ended (`petstore_core::Hold`).
    holds (id) {
        id -> BigInt,
        owner_id -> Nullable<BigInt>,
        created_at -> UtcTime,
        expires_at -> UtcTime,
        ended -> Nullable<Text>,
        ended_at -> Nullable<UtcTime>,
        order_id -> Nullable<BigInt>,
    }
}

diesel::table! {
    /// The lines of holds.
    hold_lines (hold_id, line_no) {
        hold_id -> BigInt,
        line_no -> BigInt,
        pet_id -> BigInt,
        quantity -> BigInt,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::schema::sql_types::*;

    /// One row once holds have begun: holds are placed from then on.
    holds_opened (id) {
        id -> BigInt,
        at -> UtcTime,
    }
}

diesel::joinable!(hold_lines -> holds (hold_id));

diesel::allow_tables_to_appear_in_same_query!(
    order_lines,
    stock_movements,
    ledger_opened,
    holds,
    hold_lines,
    holds_opened,
    categories,
    pets,
    orders,
    events,
    api_keys,
    staff_sessions,
    idempotency_records,
    webhooks,
    webhook_deliveries
);
