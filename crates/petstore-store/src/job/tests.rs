use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use super::*;

/// A lane the tests' work never calls.
struct Unused;

impl Lane for Unused {
    fn run_read(&self, _: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>) -> RepoResult<()> {
        Err(not_run())
    }
    fn run_read_one(
        &self,
        _: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>,
    ) -> RepoResult<()> {
        Err(not_run())
    }
    fn run_write(
        &self,
        _: &mut dyn FnMut(&mut dyn Transaction) -> RepoResult<()>,
    ) -> RepoResult<()> {
        Err(not_run())
    }
}

/// A read whose first run fails with `first`, and whose later runs answer their number;
/// what it answered, and how often it ran.
fn standby_then_primary(first: DomainError) -> (Vec<RepoResult<usize>>, usize) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let (answer, answered) = mpsc::channel();
    let mut first = Some(first);
    let job = ReadJob::new(
        None,
        move |_| {
            let run = counted.fetch_add(1, Ordering::SeqCst);
            match first.take() {
                Some(failure) => Err(failure),
                None => Ok(run),
            }
        },
        move |result| answer.send(result).unwrap(),
    );
    job.run_or_on(JobStore::over(&Unused), JobStore::over(&Unused));
    (answered.try_iter().collect(), runs.load(Ordering::SeqCst))
}

#[test]
fn a_read_a_standby_failed_under_runs_again_on_the_primary_which_alone_answers() {
    let (answers, runs) =
        standby_then_primary(DomainError::Unavailable(Failure::new("the standby died")));
    assert_eq!(runs, 2);
    assert!(matches!(answers.as_slice(), [Ok(1)]), "{answers:?}");
}

#[test]
fn a_refusal_by_the_rules_on_a_standby_is_the_answer() {
    let (answers, runs) = standby_then_primary(DomainError::InvalidTransition("no".into()));
    assert_eq!(runs, 1);
    assert!(
        matches!(answers.as_slice(), [Err(DomainError::InvalidTransition(_))]),
        "{answers:?}"
    );
}
