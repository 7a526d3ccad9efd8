//! The store a job is given ([`JobStore`]), over a [`Lane`]: a burst of one backend, or a
//! store itself.

use petstore_core::{DomainError, RepoResult, Snapshot, Store, Transaction};

/// Where a [`JobStore`]'s calls go: a burst of one backend, or a store itself. The methods
/// take type-erased work so that `JobStore` names no backend; it gives the work back its
/// types.
pub(crate) trait Lane {
    fn run_read(&self, work: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>)
    -> RepoResult<()>;
    fn run_read_one(
        &self,
        work: &mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>,
    ) -> RepoResult<()>;
    fn run_write(
        &self,
        work: &mut dyn FnMut(&mut dyn Transaction) -> RepoResult<()>,
    ) -> RepoResult<()>;
    /// Runs raw SQL in the burst's write transaction (tests that break a commit on purpose).
    #[cfg(test)]
    fn write_sql(&self, _sql: &str) -> RepoResult<()> {
        Err(DomainError::Storage("not a burst of writes".into()))
    }
}

/// The store one piece of work runs on: a [`Store`] whose calls go where the work was sent.
/// The executor hands one to each job over the burst it runs in (reads sharing one read
/// transaction, writes sharing one transaction and its commit), or over the backend's store
/// itself (each call in a transaction of its own).
#[derive(Clone, Copy)]
pub struct JobStore<'a>(&'a dyn Lane);

impl<'a> JobStore<'a> {
    pub(crate) fn over(lane: &'a dyn Lane) -> Self {
        Self(lane)
    }

    #[cfg(test)]
    pub(crate) fn write_sql(self, sql: &str) -> RepoResult<()> {
        self.0.write_sql(sql)
    }
}

impl std::fmt::Debug for JobStore<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobStore").finish_non_exhaustive()
    }
}

/// What a lane answers when it returns without having run the work it was given: a bug in
/// the lane, answered as a storage failure rather than a panic.
fn not_run() -> DomainError {
    DomainError::Storage("a store call returned without running its work".into())
}

/// A lane's type-erased read: it runs the work it is given once.
type ErasedRead<'w> = &'w mut dyn FnMut(&mut dyn Snapshot) -> RepoResult<()>;

/// Runs `work` once through `erased` (a lane's read), giving back what it returned.
fn read_once<T>(
    work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>,
    erased: impl FnOnce(ErasedRead<'_>) -> RepoResult<()>,
) -> RepoResult<T> {
    let (mut work, mut value) = (Some(work), None);
    erased(&mut |snapshot| {
        let work = work.take().ok_or_else(not_run)?;
        value = Some(work(snapshot)?);
        Ok(())
    })?;
    value.ok_or_else(not_run)
}

impl Store for JobStore<'_> {
    fn read<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        read_once(work, |erased| self.0.run_read(erased))
    }

    fn write<T>(
        &self,
        mut work: impl FnMut(&mut dyn Transaction) -> RepoResult<T>,
    ) -> RepoResult<T> {
        let mut value = None;
        self.0.run_write(&mut |tx| {
            value = None;
            value = Some(work(tx)?);
            Ok(())
        })?;
        value.ok_or_else(not_run)
    }

    fn read_one<T>(&self, work: impl FnOnce(&mut dyn Snapshot) -> RepoResult<T>) -> RepoResult<T> {
        read_once(work, |erased| self.0.run_read_one(erased))
    }
}

/// Makes a store a lane of its own, each call in a transaction of its own (a blanket impl
/// over every `Store` would stand in the way of the bursts' own).
macro_rules! store_lane {
    ($store:ty) => {
        impl $crate::job::Lane for $store {
            fn run_read(
                &self,
                work: &mut dyn FnMut(&mut dyn petstore_core::Snapshot) -> RepoResult<()>,
            ) -> RepoResult<()> {
                petstore_core::Store::read(self, work)
            }

            fn run_read_one(
                &self,
                work: &mut dyn FnMut(&mut dyn petstore_core::Snapshot) -> RepoResult<()>,
            ) -> RepoResult<()> {
                petstore_core::Store::read_one(self, work)
            }

            fn run_write(
                &self,
                work: &mut dyn FnMut(&mut dyn petstore_core::Transaction) -> RepoResult<()>,
            ) -> RepoResult<()> {
                petstore_core::Store::write(self, work)
            }
        }
    };
}
pub(crate) use store_lane;
