//! The house rules of the source, checked for every crate of the workspace: rooms a reader can
//! hold (no source file over 500 lines) and layers that read in order (no import circle
//! between a crate's modules), plus this crate's own layering (`docs/architecture.md`).
//!
//! How they count:
//! - **Lines** as `wc -l` counts them: every line of the file, its own `#[cfg(test)]` module
//!   included. A long test module moves beside its file (`foo/tests.rs`).
//! - **Modules** are a crate's top-level modules (`src/foo.rs` or `src/foo/`, everything
//!   under it one module). Module `a` imports `b` when code of `a` outside its tests names
//!   `crate::b`, or names an item through the crate root (`crate::Item`) that `lib.rs`
//!   re-exports from `b` (`pub use b::{Item, …}`). An import circle is a cycle of any length.

#![allow(
    clippy::unwrap_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most lines a source file may have.
const MAX_LINES: usize = 500;

/// The workspace's crates, by the folder of their sources.
fn crates() -> Vec<PathBuf> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&crates)
        .unwrap()
        .map(|entry| entry.unwrap().path().join("src"))
        .filter(|src| src.is_dir())
        .collect();
    found.sort();
    assert!(found.len() >= 3, "the crates under {crates:?}: {found:?}");
    found
}

fn source_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            source_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The files of `src` over [`MAX_LINES`], with their lengths.
fn long_files(src: &Path) -> Vec<(PathBuf, usize)> {
    let mut files = Vec::new();
    source_files(src, &mut files);
    let mut long: Vec<_> = files
        .into_iter()
        .map(|file| {
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            (file, lines)
        })
        .filter(|(_, lines)| *lines > MAX_LINES)
        .collect();
    long.sort();
    long
}

/// The item names `lib.rs` re-exports, each with the top-level module it comes from.
fn re_exports(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for statement in lib.split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, items)) = path.split_once("::") else {
            continue;
        };
        let items = items.trim().trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let item = item.rsplit("::").next().unwrap_or_default().trim();
            if !item.is_empty() {
                names.insert(item.to_owned(), module.trim().to_owned());
            }
        }
    }
    names
}

/// Each top-level module of the crate at `src` and the top-level modules its code (tests
/// aside) names.
fn imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap_or_default();
    let exported = re_exports(&lib);
    let mut files = Vec::new();
    source_files(src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let relative = file
            .strip_prefix(src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let module = relative
            .trim_end_matches(".rs")
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        if module == "lib" || module == "main" || relative.ends_with("/tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let named = graph.entry(module.clone()).or_default();
        for (at, _) in code.match_indices("crate::") {
            // A comment or a doc link is not an import.
            let line = code[..at].rsplit('\n').next().unwrap_or_default();
            if line.trim_start().starts_with("//") {
                continue;
            }
            let rest = &code[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let target = match name.chars().next() {
                Some(c) if c.is_ascii_lowercase() => Some(name),
                Some(_) => exported.get(&name).cloned(),
                None => None,
            };
            if let Some(target) = target.filter(|target| *target != module) {
                named.insert(target);
            }
        }
    }
    graph
}

/// An import circle of `graph`, as the modules along it, if there is one.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        module: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| m == module) {
            let mut found = path[at..].to_vec();
            found.push(module.to_owned());
            return Some(found);
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_owned());
        for next in graph.get(module).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(module.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|module| visit(module, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_source_file_is_over_500_lines() {
    let long: Vec<_> = crates().iter().flat_map(|src| long_files(src)).collect();
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines (split the file where its parts already are): {long:#?}"
    );
}

#[test]
fn no_crate_has_an_import_circle_between_its_modules() {
    for src in crates() {
        let graph = imports(&src);
        assert!(graph.len() > 3, "the modules of {src:?}: {graph:?}");
        if let Some(circle) = circle(&graph) {
            panic!("an import circle in {src:?}: {}", circle.join(" -> "));
        }
    }
}

/// The checks themselves find what they are for.
#[test]
fn the_checks_find_a_circle_and_a_re_exported_name() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(m, to)| (m.to_owned(), to.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(circle(&graph).unwrap(), ["a", "b", "c", "a"]);
    let exported = re_exports("pub use store::{AnyStore, migrate};\npub use job::JobStore;");
    assert_eq!(exported["AnyStore"], "store");
    assert_eq!(exported["JobStore"], "job");
}

#[test]
fn the_state_is_below_its_users_and_the_dispatcher_below_the_routes() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = imports(&src);
    let state = &graph["state"];
    for user in ["auth", "changes", "delivery", "routes", "app", "cli"] {
        assert!(!state.contains(user), "state imports {user}");
    }
    assert!(
        !graph["delivery"].contains("routes"),
        "delivery imports routes"
    );
}
