//! The error a value type gives when input breaks one of its rules. It depends on nothing else
//! in the crate, so every value, id and model type can use it without an import loop.

use std::borrow::Cow;

/// A field of a request broke a rule: wrong length, out of range, control characters…
///
/// `field` is the contract's camelCase field name, so a client can tell which input to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ValidationError {
    /// The field at fault, as the contract spells it (`name`, `categoryId`, `quantity`…).
    pub field: Cow<'static, str>,
    /// What is wrong with it, in words a client developer can act on.
    pub reason: Cow<'static, str>,
}

impl ValidationError {
    /// A validation error for `field`.
    pub fn new(field: impl Into<Cow<'static, str>>, reason: impl Into<Cow<'static, str>>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The same error, reported against another field name.
    ///
    /// Value types know only a generic name (an id says `id`); the place that holds the
    /// value knows the real one (`categoryId`).
    #[must_use]
    pub fn for_field(mut self, field: impl Into<Cow<'static, str>>) -> Self {
        self.field = field.into();
        self
    }
}
