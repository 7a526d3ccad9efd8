//! What a backend tells the executor of its threads (how many, how many jobs each takes, what
//! runs them) and of its upkeep.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::read::ReadJob;
use super::write::WriteJob;

/// Runs the jobs one thread took at once as one burst.
pub(crate) type Runner<J> = Arc<dyn Fn(Vec<J>) + Send + Sync>;

/// What a backend's threads are: how many, how many jobs each takes at once, what runs the
/// jobs it took, by when its calls must be answered, and the chore it wants done now and then.
pub(crate) struct Bursts {
    pub(crate) readers: ThreadSpec<ReadJob>,
    pub(crate) writers: ThreadSpec<WriteJob>,
    /// How long a caller waits for an answer in all, where the backend's waits are not
    /// bounded by this process (the network to a server): `None` on SQLite.
    pub(crate) deadline: Option<Duration>,
    /// Upkeep on a thread of its own, off every caller's path.
    pub(crate) chore: Option<Chore>,
}

/// Upkeep a backend wants done every so often (PostgreSQL vacuums its feed's queue,
/// `postgres/feed.rs`; both forget expired idempotency records, `upkeep.rs`). It handles its
/// own failures: the next run tries again.
pub(crate) struct Chore {
    pub(crate) every: Duration,
    pub(crate) run: Box<dyn FnMut() + Send>,
}

impl Chore {
    /// One chore doing each of `chores` at its own pace, on one thread: it wakes as often as
    /// the most frequent of them, and runs each whose time has come.
    pub(crate) fn together(chores: Vec<Chore>) -> Chore {
        let every = chores
            .iter()
            .map(|chore| chore.every)
            .min()
            .unwrap_or(Duration::from_secs(1));
        let mut due: Vec<(Instant, Chore)> = chores
            .into_iter()
            .map(|chore| (Instant::now() + chore.every, chore))
            .collect();
        Chore {
            every,
            run: Box::new(move || {
                let now = Instant::now();
                for (at, chore) in &mut due {
                    // A waking a little early (the thread's own period) still counts as due.
                    if *at <= now + every / 2 {
                        (chore.run)();
                        *at = now + chore.every;
                    }
                }
            }),
        }
    }
}

/// One kind of thread: how many, the most jobs each takes at once, and what runs them.
pub(crate) struct ThreadSpec<J> {
    pub(crate) count: usize,
    pub(crate) burst: usize,
    pub(crate) run: Runner<J>,
}
