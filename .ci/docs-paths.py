"""The docs name only what exists, the architecture names every big source file, and every
doc stays short.

Four checks of ours; links and #anchors between the docs are lychee's (.ci/docs-check).

1. Every repository path a doc names (in `code`, in a fenced block, or as a link target)
   exists. A path is a word that starts with a top-level entry of the repository
   (`crates/`, `bench/`, `Cargo.toml`, ...) or with a crate's folder (`petstore-http/`). `<aggregate>` and `*` stand for any name.
2. Every source file of more than 300 lines is named in docs/architecture.md: from its crate's
   folder on (`petstore-http/src/error.rs`), or in the folder map under a folder that holds
   it, relative to that folder (`sqlite/burst.rs` under `crates/petstore-store/src/`).
3. Where a doc places an item in a file ("`JobStore` (`job.rs`)"), the file defines it: a
   `struct`, `enum`, `trait`, `type`, `union`, `const`, `static`, `fn`, `mod` or
   `macro_rules!` of that name (for `Type::method`, a `fn method`). A path that does not start
   at the repository or a crate's folder may be any tracked file ending with it.
4. Every `README.md` (wherever git tracks one) and every `docs/**/*.md` is at most 450 lines,
   as `wc -l` counts: a doc says how things are now, and past runs belong in git and
   docs/history.md.

Prints each miss and exits 1 if there is one.
"""

import fnmatch
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIG = 300
LONGEST_DOC = 450

tracked = subprocess.run(
    ["git", "ls-files"], cwd=ROOT, check=True, capture_output=True, text=True
).stdout.split()
top_level = sorted({path.split("/")[0] for path in tracked})
# Every tracked file and every folder that holds one.
tracked_paths = set(tracked) | {
    "/".join(path.split("/")[:end]) for path in tracked for end in range(1, path.count("/") + 1)
}
# The docs also name a crate's files from its folder on: `petstore-http/src/error.rs`.
crates = sorted({path.split("/")[1] for path in tracked if path.startswith("crates/")})
# A path word: starts at a top-level entry, runs over the characters a path is made of.
path_word = re.compile(
    r"(?<![\w./<>*-])("
    + r"(?:" + "|".join(re.escape(name) for name in top_level) + r")(?:/[\w.<>*{},-]*)*"
    + r"|(?:" + "|".join(re.escape(name) for name in crates) + r")(?:/[\w.<>*{},-]*)+"
    + r")(?![\w-]|\.\w)"
)
code_span = re.compile(r"`([^`\n]+)`")
link_target = re.compile(r"\]\(([^)#\s]+)")


def named_paths(text):
    """The path words of a doc: in code spans, fenced blocks and link targets."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        pieces = [line] if fenced else code_span.findall(line) + link_target.findall(line)
        for piece in pieces:
            for word in path_word.findall(piece):
                yield number, word.rstrip(".,;:")


def exists(word):
    """Whether a named path exists; a placeholder or `*` matches any one name."""
    word = re.sub(r":\d+$", "", word)  # `file.rs:42` names a line of file.rs
    if word.split("/")[0] in crates:
        word = "crates/" + word
    pattern = re.sub(r"<[^>]*>", "*", word).rstrip("/")
    if "{" in pattern:  # `{a,b}`: each must exist
        head, rest = pattern.split("{", 1)
        choices, tail = rest.split("}", 1)
        return all(exists(head + choice + tail) for choice in choices.split(","))
    # Against what git tracks, not the working tree: a path only a build or an install
    # makes (node_modules, target/) is not there in a fresh clone.
    return any(fnmatch.fnmatchcase(path, pattern) for path in tracked_paths)


def check_named_paths():
    misses = []
    docs = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
    for doc in docs:
        for number, word in named_paths(doc.read_text()):
            if not exists(word):
                misses.append(f"{doc.relative_to(ROOT)}:{number}: names `{word}`, which does not exist")
    return misses


def folder_map_sections(doc):
    """The folder map's sections: a line that starts with a folder (`crates/x/src/`) opens one,
    and the lines indented under it belong to it."""
    sections, current = {}, None
    for line in doc.splitlines():
        opening = re.match(r"([\w.*/-]+/)\s", line + " ")
        if opening and not line.startswith(" "):
            current = opening.group(1)
            sections[current] = line[len(current):]
        elif current and line.startswith(" "):
            sections[current] += "\n" + line
        else:
            current = None
    return sections


def names(text, path):
    """Whether `text` names `path` as a word of its own, not as the end of a longer path."""
    return re.search(r"(?<![\w./-])" + re.escape(path) + r"(?![\w/-])", text) is not None


def names_or_patterns(text, path):
    """Whether `text` names `path`, itself or by a pattern: `memory/<aggregate>.rs` names
    every file of `memory/`."""
    if names(text, path):
        return True
    for pattern in re.findall(r"[\w./-]*<[^>\s]+>[\w./-]*", text):
        as_regex = re.sub(r"<[^>]+>", "[^/]+", pattern.replace(".", r"\."))
        if re.fullmatch(as_regex, path):
            return True
    return False


def check_big_files_named():
    architecture = (ROOT / "docs/architecture.md").read_text()
    sections = folder_map_sections(architecture)
    misses = []
    for path in tracked:
        if not path.endswith(".rs") or not (ROOT / path).is_file():
            continue
        with open(ROOT / path) as source:
            lines = sum(1 for _ in source)
        if lines <= BIG:
            continue
        # Named anywhere from its crate's folder on (`petstore-http/src/error.rs`), or within
        # the folder map's section for a folder that holds it, relative to that folder
        # (`model.rs` under `crates/petstore-core/src/`, `sqlite/burst.rs` under the store's).
        from_crate = path.split("/", 1)[1] if path.startswith("crates/") else path
        named = names(architecture, from_crate) or any(
            path.startswith(folder) and names_or_patterns(text, path[len(folder):])
            for folder, text in sections.items()
        )
        if not named:
            misses.append(f"{path}: {lines} lines, not named in docs/architecture.md")
    return misses


item_in_file = re.compile(r"`([A-Za-z_][\w:]*)!?` \(`([^`\s]+\.rs)`\)")


def defines(path, item):
    """Whether the Rust file at `path` defines `item` (its last `::` segment)."""
    name = item.split("::")[-1]
    text = (ROOT / path).read_text()
    kinds = r"(?:struct|enum|trait|type|union|const|static|fn|mod)"
    return (
        re.search(r"\b" + kinds + r"\s+" + re.escape(name) + r"\b", text) is not None
        or re.search(r"macro_rules!\s*" + re.escape(name) + r"\b", text) is not None
    )


def check_items_in_files():
    misses = []
    docs = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
    for doc in docs:
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            for item, named in item_in_file.findall(line):
                full = "crates/" + named if named.split("/")[0] in crates else named
                candidates = [
                    path for path in tracked
                    if path == full or path.endswith("/" + named)
                ]
                if not any(defines(path, item) for path in candidates):
                    misses.append(
                        f"{doc.relative_to(ROOT)}:{number}: places `{item}` in `{named}`, "
                        "which does not define it"
                    )
    return misses


def check_docs_short():
    misses = []
    docs = [path for path in tracked if path.split("/")[-1] == "README.md"] + [
        str(path.relative_to(ROOT)) for path in sorted((ROOT / "docs").rglob("*.md"))
    ]
    for doc in docs:
        if not (ROOT / doc).is_file():
            continue
        with open(ROOT / doc, "rb") as text:
            lines = text.read().count(b"\n")  # as `wc -l` counts
        if lines > LONGEST_DOC:
            misses.append(f"{doc}: {lines} lines, more than {LONGEST_DOC}")
    return misses


def main():
    misses = (
        check_named_paths() + check_big_files_named() + check_items_in_files()
        + check_docs_short()
    )
    for miss in misses:
        print(miss, file=sys.stderr)
    if misses:
        sys.exit(1)


if __name__ == "__main__":
    main()
