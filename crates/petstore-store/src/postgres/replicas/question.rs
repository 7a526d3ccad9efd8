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
    /// When the question in flight was sent, if one is.
    in_flight: Option<Instant>,
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
        // The question this burst last waited for, sent before or after its reads were queued:
        // the planted bug takes its answer even when after.
        let mut joined = None;
        loop {
            if let Some((asked, answer)) = state.last
                && (serves(asked, queued) || planted(joined == Some(asked)))
            {
                return answer;
            }
            match state.in_flight {
                Some(asked) => {
                    joined = Some(asked);
                    state = self
                        .answered
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                None => break,
            }
        }
        // Taken before the question is sent, so it claims no read queued after it went.
        let asked = Instant::now();
        state.in_flight = Some(asked);
        drop(state);
        let mut publish = Publish {
            question: self,
            asked,
            answer: None,
        };
        publish.answer = ask();
        // The planted bug also holds its answer a moment, as a slow round trip would, so that
        // the soak meets bursts that join it late.
        #[cfg(feature = "plant-shared-answer-too-early")]
        std::thread::sleep(std::time::Duration::from_millis(200));
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
        state.in_flight = None;
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

/// The planted bug's exception (`plant-shared-answer-too-early`): a burst takes the answer of
/// the question it waited for even when its reads were queued after that question was sent.
fn planted(waited_for_it: bool) -> bool {
    cfg!(feature = "plant-shared-answer-too-early") && waited_for_it
}

#[cfg(test)]
mod tests;
