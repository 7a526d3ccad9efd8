//! What a store reports of its connections and writes, for metrics and tests: the same shape
//! on both backends.

/// A snapshot of the connection pools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolState {
    /// Connections open.
    pub connections: u32,
    /// Of which idle.
    pub idle: u32,
}

/// What counts a store's writes and commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterStats {
    /// Writes run (once each, from the run that was answered).
    pub writes: u64,
    /// Transactions committed (fewer than writes when writes were grouped).
    pub commits: u64,
    /// Bursts of writes that gave up their shared transaction, their jobs run again each in
    /// a transaction of its own (PostgreSQL; always 0 on SQLite).
    pub reruns: u64,
}
