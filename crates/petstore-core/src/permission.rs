//! What an operation requires of its caller: named by the rules of who may do what
//! (`access.rs`) and by the error that refuses a caller (`error.rs`), so it depends on
//! neither.

/// What an operation requires of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Permission {
    /// Read the catalogue and inventory; place, list, read and cancel one's own orders. Any key.
    Shop,
    /// Change the catalogue and inventory; see, complete and cancel every order. Staff, admin.
    ManageStore,
    /// Manage API keys and webhook subscriptions. Admin.
    Administer,
}
