//! The commit the binary is built from, for `--version` and `petstore_build_info`
//! (`0.1.0+<commit>`): what `git` says where the build runs in a checkout, `unknown` where
//! it does not (a source archive; an image build, whose context leaves `.git` out).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_owned())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=PETSTORE_COMMIT={commit}");
    // Built again when HEAD moves: a checkout, or a commit on the branch it names. Only files
    // that exist are named: Cargo runs a script again on every build for one that does not.
    let watched = [
        git(&["rev-parse", "--git-path", "HEAD"]),
        git(&["symbolic-ref", "-q", "HEAD"])
            .and_then(|branch| git(&["rev-parse", "--git-path", &branch])),
        git(&["rev-parse", "--git-path", "packed-refs"]),
    ];
    for path in watched.into_iter().flatten() {
        if Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
