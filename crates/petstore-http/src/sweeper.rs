//! The holds' sweeper: every node, every `--hold-sweep-ms`, ends the holds whose expiry has
//! come, with no coordinator. Nodes sweeping at once end each hold once: the use case reads
//! each again under its pets' locks (`HoldUseCases::expire_due`). An idle shop's sweep is one
//! statement on the partial index of active holds.

use std::time::Duration;

use tokio::time::{MissedTickBehavior, interval};

use crate::state::AppState;

/// The most holds one transaction ends; a full batch is followed by another at once.
const BATCH: u32 = 100;

/// Sweeps until the service stops. `state` acts as the sweeper (`Actor::chore("holds")`).
pub async fn run(state: AppState, every: Duration) {
    let mut tick = interval(every);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut failing = false;
    while !state.is_stopping() {
        tick.tick().await;
        loop {
            match state.write(|shop| shop.holds().expire_due(BATCH)).await {
                Ok(ended) => {
                    failing = false;
                    if ended < BATCH as usize {
                        break;
                    }
                }
                // Logged once while it lasts: the next tick tries again.
                Err(error) => {
                    if !failing {
                        tracing::warn!(%error, "holds past their expiry could not be ended");
                    }
                    failing = true;
                    break;
                }
            }
        }
    }
}
