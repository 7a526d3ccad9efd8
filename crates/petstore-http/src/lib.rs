//! The pet store HTTP API (actix-web) and the `petstore` binary. Lands with the HTTP issue.
