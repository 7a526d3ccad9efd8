//! Work handed to the store's threads ([`crate::Executor`]), the store each piece of it is
//! given ([`JobStore`]), and what a backend tells the executor of its bursts ([`Bursts`]).
//!
//! This module names no backend: each backend's burst runner (`sqlite/burst.rs`,
//! `postgres/burst.rs`) takes the jobs defined here and hands each a `JobStore` over the
//! burst it runs in, and the executor only queues jobs and starts threads. Its files follow
//! its four contracts: what a job names before it runs (`names.rs`), the jobs themselves
//! (`read.rs`, `write.rs`), the threads a backend asks for (`bursts.rs`), and the store a job
//! is given (`lane.rs`).

mod bursts;
mod lane;
mod names;
mod read;
#[cfg(test)]
pub(crate) mod testing;
mod write;

pub(crate) use bursts::{Bursts, Chore, ThreadSpec};
pub use lane::JobStore;
pub(crate) use lane::{Lane, store_lane};
pub(crate) use names::named_pets;
pub use names::{KeyName, ReadNames, Row, WriteNames};
pub(crate) use read::{Answered, ReadJob};
pub(crate) use write::{GaveUp, WriteJob, gave_up, in_time, named_keys, refuse};
