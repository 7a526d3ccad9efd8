//! The HTTP layer's integration tests, in one test binary: each file below was a binary of its
//! own, and each linked actix, Diesel, SQLite and libpq again (docs/testing.md has the times).
//! `binary` starts the real `petstore` process; `common` builds the app in-process;
//! `cluster` makes throwaway PostgreSQL clusters.

mod binary;
mod cluster;
mod common;

mod actors;
mod auth;
mod checkout;
mod cli;
mod conditional;
mod config;
mod console;
mod console_counter;
mod console_delivery;
mod console_lists;
mod events;
mod holds;
mod house_rules;
mod https;
mod ledger;
mod locale;
mod moving;
mod nodes;
mod observability;
mod openapi;
mod operations;
mod ownership;
mod postgres;
mod prices;
mod protocol;
mod settings;
mod standbys;
mod standbys_synchronous;
mod stopping;
mod storage;
mod traces;
mod upgrade;
mod webhooks;
