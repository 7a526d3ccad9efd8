//! The pet store repositories on SQLite (Diesel 2 + r2d2). Lands with the store issue.
