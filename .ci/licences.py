#!/usr/bin/env python3
"""Fails when a dependency's licence is not one we accept: permissive licences only, no GPL.

Reads `cargo metadata` on standard input. An SPDX expression passes when, reading `OR` as a
choice and `AND` as "both apply", it can be satisfied with accepted licences alone.
"""

import json
import re
import sys

# MIT, Apache and BSD, and the licences that say the same in other words (ISC is BSD-2 in
# fewer lines; Zlib, Unicode-3.0, BSL-1.0 and Unlicense ask even less; the PostgreSQL licence,
# libpq's, compiled in by pq-src, is BSD-style: keep the notice, no warranty).
ACCEPTED = {
    "MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "Zlib", "Unicode-3.0",
    "BSL-1.0", "Unlicense", "CC0-1.0", "0BSD", "PostgreSQL",
    "Apache-2.0 WITH LLVM-exception",
}


def tokens(expression):
    expression = expression.replace("/", " OR ")  # old crates write "MIT/Apache-2.0"
    return re.findall(r"\(|\)|[A-Za-z0-9.+-]+(?: WITH [A-Za-z0-9.+-]+)?", expression)


def satisfiable(items):
    """Recursive descent over OR (lowest), AND, parentheses."""
    def parse_or(i):
        ok, i = parse_and(i)
        while i < len(items) and items[i] == "OR":
            right, i = parse_and(i + 1)
            ok = ok or right
        return ok, i

    def parse_and(i):
        ok, i = parse_atom(i)
        while i < len(items) and items[i] == "AND":
            right, i = parse_atom(i + 1)
            ok = ok and right
        return ok, i

    def parse_atom(i):
        if items[i] == "(":
            ok, i = parse_or(i + 1)
            return ok, i + 1
        return items[i] in ACCEPTED, i + 1

    ok, end = parse_or(0)
    return ok and end == len(items)


metadata = json.load(sys.stdin)
refused = []
for package in metadata["packages"]:
    licence = package.get("license")
    if not licence or not satisfiable(tokens(licence)):
        refused.append(f"{package['name']} {package['version']}: {licence!r}")
if refused:
    print("dependencies with a licence we do not accept:", *refused, sep="\n  ")
    sys.exit(1)
print(f"licences: all {len(metadata['packages'])} packages use accepted licences")
