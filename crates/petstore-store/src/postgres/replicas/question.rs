//! The primary's position, asked once for every read that can use it.
//!
//! A read of the latest state needs a position the primary had after the read was queued.
//! One answer serves every read queued before its question was sent, on either reader thread,
//! so a node keeps one question in flight at a time: a burst whose reads were all queued
//! before the question in flight was sent waits for its answer; any other waits for it to
//! come back and then asks the next (a Raft leader batches ReadIndex requests the same way).
//! Under load questions go out back to back, each serving every read queued while the one
//! before it was out: the primary's work per read falls as reads rise, and a read waits at
//! most about one round trip more than if it had asked alone.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use crate::freshness::Position;

/// The question, shared by a node's reader threads.
#[derive(Debug, Default)]
pub(super) struct SharedQuestion {
    state: Mutex<State>,
    answered: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Whether a question is in flight.
    in_flight: bool,
    /// The latest answer: when its question was sent, and the position (`None`: the primary
    /// could not say).
    last: Option<(Instant, Option<Position>)>,
}

impl SharedQuestion {
    /// A position the primary had no earlier than `queued` (the last of a burst's reads to be
    /// queued), from the question in flight if it was sent since, else from one `ask` sends
    /// now, once no other is in flight. `None` when the primary could not say.
    pub(super) fn position_after(
        &self,
        queued: Instant,
        ask: impl FnOnce() -> Option<Position>,
    ) -> Option<Position> {
        let mut state = self.lock();
        loop {
            if let Some((asked, answer)) = state.last
                && (serves(asked, queued) || planted(asked, queued))
            {
                return answer;
            }
            if !state.in_flight {
                break;
            }
            state = self
                .answered
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        // Taken before the question is sent, so it claims no read queued after it went.
        let asked = Instant::now();
        state.in_flight = true;
        drop(state);
        let mut publish = Publish {
            question: self,
            asked,
            answer: None,
        };
        publish.answer = ask();
        publish.answer
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Publishes a question's answer when dropped, so that one whose asking panicked leaves no
/// burst waiting for it: its readers go to the primary, and the next burst asks again.
struct Publish<'q> {
    question: &'q SharedQuestion,
    asked: Instant,
    answer: Option<Position>,
}

impl Drop for Publish<'_> {
    fn drop(&mut self) {
        let mut state = self.question.lock();
        state.in_flight = false;
        state.last = Some((self.asked, self.answer));
        self.question.answered.notify_all();
    }
}

/// Whether an answer to a question sent at `asked` serves a read queued at `queued`: only if
/// the read was queued first, so that every write acknowledged before it is at or before the
/// answer.
fn serves(asked: Instant, queued: Instant) -> bool {
    queued <= asked
}

/// The planted bug's exception (`plant-shared-answer-too-early`): a burst takes the latest
/// answer even when its reads were queued after that question was sent, up to a second after.
fn planted(asked: Instant, queued: Instant) -> bool {
    cfg!(feature = "plant-shared-answer-too-early")
        && queued <= asked + std::time::Duration::from_secs(1)
}

#[cfg(test)]
mod tests;
