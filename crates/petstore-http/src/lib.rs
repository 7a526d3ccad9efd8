//! The pet store's HTTP API (actix-web) and the `petstore` binary.
//!
//! A thin layer: handlers translate HTTP into calls of [`petstore_core::Service`] and back.
//! No business rule lives here. What this crate owns is the wire: routes, extractors that
//! answer bad input with the contract's JSON errors, status codes, headers, pagination links,
//! and the OpenAPI document generated from the handlers themselves.

//!
//! Each item has one path, under its module (`petstore_http::state::AppState`): the modules
//! are the layer's parts, and the binary is the only real user of this library.

#![deny(missing_docs)]

pub mod app;
pub mod auth;
pub mod changes;
pub mod cli;
pub mod conditional;
pub mod cors;
pub mod delivery;
mod endpoint;
pub mod error;
pub mod extract;
mod field_errors;
pub mod json;
pub mod logging;
pub mod metrics;
pub mod middleware;
pub mod openapi;
pub mod pagination;
mod rate_limit;
pub mod routes;
pub mod state;
pub mod traces;
pub mod wire;

/// The layering `docs/architecture.md` describes, checked: no two modules of this crate
/// import each other (a hub nobody can read in order), the shared state imports none of the
/// modules that use it, and the webhook dispatcher imports no route.
#[cfg(test)]
mod layering {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// Each top-level module and the top-level modules its code (tests aside) names.
    fn imports() -> BTreeMap<String, BTreeSet<String>> {
        fn walk(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, found);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    found.push(path);
                }
            }
        }
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        walk(&src, &mut files);
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for file in files {
            let relative = file
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let module = relative
                .trim_end_matches(".rs")
                .split('/')
                .next()
                .unwrap()
                .to_owned();
            if module == "lib" || module == "main" {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            let named = graph.entry(module.clone()).or_default();
            for (at, _) in code.match_indices("crate::") {
                let rest = &code[at + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                    .collect();
                // A doc link (`[`crate::x`]`) is not an import.
                let line = code[..at].rsplit('\n').next().unwrap_or_default();
                if !name.is_empty() && name != module && !line.trim_start().starts_with("//") {
                    named.insert(name);
                }
            }
        }
        graph
    }

    #[test]
    fn no_two_modules_import_each_other() {
        let graph = imports();
        for (module, named) in &graph {
            for other in named {
                assert!(
                    !graph.get(other).is_some_and(|back| back.contains(module)),
                    "{module} and {other} import each other"
                );
            }
        }
    }

    #[test]
    fn the_state_is_below_its_users_and_the_dispatcher_below_the_routes() {
        let graph = imports();
        let state = &graph["state"];
        for user in ["auth", "changes", "delivery", "routes", "app", "cli"] {
            assert!(!state.contains(user), "state imports {user}");
        }
        assert!(
            !graph["delivery"].contains("routes"),
            "delivery imports routes"
        );
    }
}
