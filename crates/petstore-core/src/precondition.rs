//! Conditional changes: a change to a resource that applies only if the resource is still
//! what the client last saw (HTTP's `If-Match`).
//!
//! The condition is checked inside the change's own write transaction, after the resource is
//! read and before it is written. Writers are serialised, so no other change can slip in
//! between the check and the write: of two clients editing from the same state, one wins and
//! the other is refused with [`DomainError::PreconditionFailed`](crate::DomainError).

/// A condition on the current state of a resource.
pub trait Precondition<T> {
    /// Whether the change may go ahead given the resource as it is now.
    fn holds(&self, current: &T) -> bool;
}

impl<T, F: Fn(&T) -> bool> Precondition<T> for F {
    fn holds(&self, current: &T) -> bool {
        self(current)
    }
}

/// No condition: the change always goes ahead.
#[derive(Debug, Clone, Copy, Default)]
pub struct Always;

impl<T> Precondition<T> for Always {
    fn holds(&self, _: &T) -> bool {
        true
    }
}
