//! The pet store's HTTP API (actix-web) and the `petstore` binary.
//!
//! A thin layer: handlers translate HTTP into calls of [`petstore_core::Service`] and back.
//! No business rule lives here. What this crate owns is the wire: routes, extractors that
//! answer bad input with the contract's JSON errors, status codes, headers, pagination links,
//! and the OpenAPI document generated from the handlers themselves.

//!
//! Each item has one path, under its module (`petstore_http::state::AppState`): the modules
//! are the layer's parts, and the binary is the only real user of this library.

#![deny(missing_docs)]

pub mod app;
pub mod auth;
pub mod changes;
pub mod cli;
pub mod conditional;
pub mod consistency;
pub mod console;
pub mod context;
pub mod cors;
pub mod delivery;
mod endpoint;
pub mod error;
pub mod extract;
mod field_errors;
pub mod json;
pub mod logging;
pub mod metrics;
pub mod middleware;
pub mod openapi;
pub mod pagination;
mod rate_limit;
pub mod routes;
pub mod state;
pub mod sweeper;
pub mod tls;
pub mod traces;
pub mod wire;
