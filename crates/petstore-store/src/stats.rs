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

/// What one database server served of a node's reads, where the node has read standbys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerReads {
    /// `primary`, or `replica-<n>` for the n-th standby configured.
    pub server: String,
    /// Reads it served.
    pub reads: u64,
    /// A standby: whether its last probe found it replaying this primary. `None` for the
    /// primary.
    pub up: Option<bool>,
    /// A standby: whether it is up and the primary's commits wait for it, so that reads of
    /// the latest state ask the primary nothing. `None` for the primary.
    pub synchronous: Option<bool>,
    /// A standby: how many bytes of the primary's log it had yet to replay, as last seen.
    pub lag_bytes: Option<u64>,
}
