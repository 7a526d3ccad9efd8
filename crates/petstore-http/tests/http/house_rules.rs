//! The house rules of the source, checked for every crate of the workspace: rooms a reader can
//! hold (no source file over 400 lines) and layers that read in order (no import circle
//! between the modules of a crate, nor between the files of one of its modules), plus this
//! crate's own layering (`docs/architecture.md`).
//!
//! How they count:
//! - **Lines** as `wc -l` counts them: every line of the file, its own `#[cfg(test)]` module
//!   included. A long test module moves beside its file (`foo/tests.rs`).
//! - **Modules** are looked at one level at a time: the crate's top-level modules, then the
//!   child modules of each module (the files of `console/`), each with every module compiled
//!   inside it (`modules.rs` says how the code is read). Child `a` imports its sibling `b` when
//!   code of `a` outside its tests names `b`, or an item that a `use` of an enclosing module
//!   brings in from `b`. An import circle is a cycle of any length.

#![allow(
    clippy::unwrap_used,
    reason = "a test stops at the first thing that is not as expected"
)]

mod modules;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use modules::{ImportGraph, imports, module_graphs};

/// The most lines a source file may have.
const MAX_LINES: usize = 400;

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

/// An import circle of `graph`, as the modules along it, if there is one.
fn circle(graph: &ImportGraph) -> Option<Vec<String>> {
    fn visit(
        module: &str,
        graph: &ImportGraph,
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
fn no_source_file_is_over_400_lines() {
    let long: Vec<_> = crates().iter().flat_map(|src| long_files(src)).collect();
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines (split the file where its parts already are): {long:#?}"
    );
}

#[test]
fn no_crate_has_an_import_circle_between_its_modules_or_their_files() {
    let mut circles = Vec::new();
    for src in crates() {
        let graphs = module_graphs(&src);
        let top_level = &graphs[&Vec::new()];
        assert!(top_level.len() > 3, "the modules of {src:?}: {top_level:?}");
        for (module, graph) in &graphs {
            if let Some(circle) = circle(graph) {
                let within = match module.join("::") {
                    inner if inner.is_empty() => "the crate root".to_owned(),
                    inner => format!("module {inner}"),
                };
                circles.push(format!("{src:?}, {within}: {}", circle.join(" -> ")));
            }
        }
    }
    assert!(circles.is_empty(), "import circles: {circles:#?}");
}

/// The circle finder finds a cycle of any length.
#[test]
fn the_circle_finder_finds_a_circle_of_three() {
    let graph: ImportGraph = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(m, to)| (m.to_owned(), to.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(circle(&graph).unwrap(), ["a", "b", "c", "a"]);
}

/// A crate of `files` (paths under `src/`, and their text) in a folder of its own, and the
/// import circle its top-level modules make, if any.
fn circle_in(files: &[(&str, &str)]) -> Option<Vec<String>> {
    circle_in_module(files, &[])
}

/// A crate of `files`, and the import circle the child modules of `module` make, if any.
fn circle_in_module(files: &[(&str, &str)], module: &[&str]) -> Option<Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    let module: Vec<String> = module.iter().map(|m| (*m).to_owned()).collect();
    circle(&module_graphs(dir.path())[&module])
}

/// Each form below hid a circle from the text scan these rules used before.
#[test]
fn a_grouped_use_is_read_name_by_name() {
    let found = circle_in(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        (
            "a.rs",
            "use crate::{b::{Bee, Hive}, c::Sea};\npub struct A;\n",
        ),
        (
            "b.rs",
            "use crate::a::A;\npub struct Bee;\npub struct Hive;\n",
        ),
        ("c.rs", "pub struct Sea;\n"),
    ]);
    assert_eq!(found.unwrap(), ["a", "b", "a"]);
}

#[test]
fn code_after_a_test_only_item_is_read_and_the_tests_are_not() {
    let found = circle_in(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "#[cfg(test)]\nfn only_in_tests() {}\n\npub fn f() -> u8 {\n    crate::b::g()\n}\n",
        ),
        (
            "b.rs",
            "pub fn g() -> u8 {\n    format!(\"{}\", crate::a::f()).len() as u8\n}\n",
        ),
    ]);
    assert_eq!(found.unwrap(), ["a", "b", "a"]);
    // Tests may reach anywhere: `c`'s test-only code naming `a` makes no circle with it.
    let none = circle_in(&[
        ("lib.rs", "mod a;\nmod c;\n"),
        ("a.rs", "pub fn f() {\n    crate::c::h()\n}\n"),
        (
            "c.rs",
            "pub fn h() {}\n#[cfg(test)]\nmod tests {\n    use crate::a::f;\n}\n\
             #[cfg(all(test, unix))]\nfn helper() {\n    crate::a::f()\n}\n",
        ),
    ]);
    assert_eq!(none, None);
}

#[test]
fn a_path_through_super_reaches_the_module_it_names() {
    let found = circle_in(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "mod inner;\npub fn g() {}\n"),
        ("a/inner.rs", "pub(crate) use super::super::b::B;\n"),
        (
            "b.rs",
            "pub struct B;\npub fn f() {\n    crate::a::g()\n}\n",
        ),
    ]);
    assert_eq!(found.unwrap(), ["a", "b", "a"]);
}

#[test]
fn a_module_belongs_where_path_compiles_it() {
    let found = circle_in(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "pub fn g() {}\npub fn h() {\n    crate::b::x()\n}\n",
        ),
        (
            "b.rs",
            "#[path = \"shared/code.rs\"]\nmod code;\npub fn x() {}\n",
        ),
        ("shared/code.rs", "pub fn f() {\n    crate::a::g()\n}\n"),
    ]);
    assert_eq!(found.unwrap(), ["a", "b", "a"]);
}

#[test]
fn a_name_lib_rs_re_exports_counts_for_its_module() {
    let found = circle_in(&[
        (
            "lib.rs",
            "mod job;\nmod store;\npub use job::JobStore;\npub use store::{migrate, AnyStore};\n",
        ),
        ("job.rs", "use crate::AnyStore;\npub struct JobStore;\n"),
        (
            "store.rs",
            "pub struct AnyStore(crate::JobStore);\npub fn migrate() {}\n",
        ),
    ]);
    assert_eq!(found.unwrap(), ["job", "store", "job"]);
}

/// The console's circle as it stood: its replies named the sign-in page's address in the
/// session module, whose extractors answer with the replies.
#[test]
fn a_circle_between_the_files_of_one_module_is_found() {
    let console = [
        ("lib.rs", "mod console;\nmod error;\n"),
        ("error.rs", "pub struct ApiError;\n"),
        ("console/mod.rs", "mod reply;\nmod session;\nmod view;\n"),
        (
            "console/reply.rs",
            "use crate::error::ApiError;\npub fn to_sign_in() -> &'static str {\n    \
             super::session::SIGN_IN\n}\n",
        ),
        (
            "console/session.rs",
            "use super::reply::to_sign_in;\npub const SIGN_IN: &str = \"/sign-in\";\n",
        ),
        ("console/view.rs", "pub fn page() {}\n"),
    ];
    assert_eq!(
        circle_in_module(&console, &["console"]).unwrap(),
        ["reply", "session", "reply"]
    );
    // Between the top-level modules there is none: `console` names `error`, not back.
    assert_eq!(circle_in(&console), None);
}

/// A name the module's own file brings in (`pub use session::Settings`) counts for the file it
/// comes from; an item of the module's own file counts for none of its children.
#[test]
fn a_name_the_enclosing_module_brings_in_counts_for_its_file() {
    let found = circle_in_module(
        &[
            ("lib.rs", "mod console;\n"),
            (
                "console/mod.rs",
                "mod session;\nmod view;\npub use session::Settings;\npub const BASE: &str = \"\";\n",
            ),
            ("console/view.rs", "pub fn page(_: &super::Settings) {}\n"),
            (
                "console/session.rs",
                "pub struct Settings;\npub fn f() {\n    super::view::page(&Settings)\n}\n",
            ),
        ],
        &["console"],
    );
    assert_eq!(found.unwrap(), ["session", "view", "session"]);
    let none = circle_in_module(
        &[
            ("lib.rs", "mod console;\n"),
            (
                "console/mod.rs",
                "mod session;\nmod view;\npub const BASE: &str = \"\";\n",
            ),
            (
                "console/view.rs",
                "pub fn page() -> &'static str {\n    super::BASE\n}\n",
            ),
            (
                "console/session.rs",
                "pub fn f() {\n    super::view::page();\n}\n",
            ),
        ],
        &["console"],
    );
    assert_eq!(none, None);
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
