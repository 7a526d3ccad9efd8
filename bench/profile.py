"""Reports what bench/profile measured: instructions per request by layer, and the kernel's
side (context switches, system calls) per request.

    python3 bench/profile.py target/bench/callgrind REQUESTS

A function's own instructions (its "self" cost, inlined callees included, read from the
callgrind file) go to its layer: its crate's for Rust, its source file's for C; a layer's
figure is the sum over its functions. The "inclusive" table (from `callgrind_annotate`)
follows the nesting of one request through the service instead: each line counts the
function and everything it calls.
"""

import json
import pathlib
import re
import subprocess
import sys

# The layer of each crate, by its name with `_` read as `-`. Hash maps are filed with the rate
# limiter, their heaviest user on a request, though actix and others use them too.
CRATE_LAYERS = [
    ("SQLite", r"^libsqlite3-sys$"),
    ("Diesel, r2d2", r"^(diesel|diesel-migrations|r2d2|scheduled-thread-pool)$"),
    ("actix (HTTP, routing)", r"^(actix.*|awc|h2|http|httparse|bytes|bytestring|regex-lite|language-tags|mime|percent-encoding|url|form-urlencoded|encoding_rs|brotli.*|zstd.*|flate2)$"),
    ("runtime: tokio, futures, locks", r"^(tokio.*|mio|futures.*|parking-lot.*|lock_api|crossbeam.*|socket2|pin-project.*|local-waker|slab)$"),
    ("JSON (serde)", r"^(serde.*|itoa|ryu|zmij)$"),
    ("SHA-256 (keys, ETags)", r"^(sha2|digest|block-buffer|cpufeatures|hmac|crypto-common)$"),
    ("logging (tracing)", r"^(tracing.*|sharded-slab|thread-local|nu-ansi-term|matchers|regex-automata|valuable)$"),
    ("metrics (prometheus-client)", r"^(prometheus-client|dtoa)$"),
    ("rate limiting (governor), hash maps", r"^(governor|dashmap|quanta|nonzero-ext|hashbrown|foldhash|ahash)$"),
    ("time (chrono)", r"^(chrono|iana-time-zone)$"),
]
OTHER = "other"

LINE = re.compile(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*?)\s*$")


def inclusive_costs(path):
    """(total, [(cost, symbol)]) of one dump: each function with everything it calls."""
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", "--auto=no", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    total = 0
    rows = []
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        cost = int(m.group(1).replace(",", ""))
        rest = m.group(2)
        if rest.startswith("PROGRAM TOTALS"):
            total = cost
            continue
        # "file:function [object]"
        rest = re.sub(r"\s*\[[^\]]*\]$", "", rest)
        symbol = rest.split(":", 1)[1] if ":" in rest else rest
        rows.append((cost, symbol))
    return total, rows


def self_costs(path):
    """{(function, its file): its own instructions} of one dump, read from the callgrind
    file itself (callgrind_annotate's own figures count some thread entry points twice).

    A cost line counts for the current `fn=`, except the line right after `calls=`, which
    is the inclusive cost of that call and belongs to the callee. Code inlined into a
    function counts for it.
    """
    names = {}
    costs = {}
    function_file = None
    current = None
    after_call = False

    def name(value):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?", value)
        if not m:
            return value
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), value)

    with open(path, errors="replace") as dump:
        for line in dump:
            key, _, value = line.partition("=")
            if key == "fl":
                function_file = name(value.strip())
            elif key in ("fi", "fe"):
                name(value.strip())
            elif key == "fn":
                current = (name(value.strip()), function_file)
            elif key in ("cfi", "cfl", "cfn", "cob", "ob"):
                # Define names used later; they do not change where costs go.
                name(value.strip())
            elif key == "calls":
                after_call = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                if after_call:
                    after_call = False
                    continue
                fields = line.split()
                if len(fields) >= 2 and current is not None:
                    costs[current] = costs.get(current, 0) + int(fields[1])
    return costs


RUST_CRATE = re.compile(r"^<*([a-z][a-z0-9_]*)::")
REGISTRY_CRATE = re.compile(r"/index\.crates\.io-[^/]+/([A-Za-z0-9_.-]+?)-\d+\.\d+\.\d+[^/]*/")
RUST_STD = "Rust std (fmt, collections, Arc, Mutex)"


def crate_layer(crate):
    """The layer of a crate, by its name."""
    crate = crate.replace("_", "-")
    if crate in ("std", "core", "alloc"):
        return RUST_STD
    if crate.startswith("petstore-"):
        return f"ours: {crate}"
    for name, pattern in CRATE_LAYERS:
        if re.match(pattern, crate):
            return name
    return f"{OTHER} ({crate})"


def layer_of(function, source):
    """The layer of a function: its crate's (a Rust function), or its file's (C)."""
    m = RUST_CRATE.match(function) or REGISTRY_CRATE.search(source)
    if m:
        return crate_layer(m.group(1))
    # Should the build have lost its line tables, SQLite's functions still show by name.
    if re.match(r"^sqlite3|^yy_|^vdbe|^where|^btree|^pager", function):
        return "SQLite"
    m = re.search(r"crates/(petstore-[a-z]+)/", source)
    if m:
        return f"ours: {m.group(1)}"
    if "/library/" in source and source.startswith("/rustc/"):
        return RUST_STD
    if "/malloc/" in source or re.match(r"^(malloc|free|realloc|calloc|_int_|tcache|cfree)", function):
        return "allocator (glibc malloc)"
    if source.startswith(("./", "/usr/")) or source == "???":
        return "C library, system calls"
    return OTHER


def dumps(folder):
    """{target: dump file}: the dump each `callgrind_control -d NAME` made."""
    found = {}
    for path in sorted(folder.glob("*.*.*")):
        if not path.suffix[1:].isdigit():
            continue
        text = path.read_text(errors="replace")
        m = re.search(r"^desc: Trigger: (?:Client Request: |dump )(\S+)", text, re.M)
        if m:
            found[m.group(1)] = path
    return found


# The nesting of one request, outermost first: the inclusive cost of each.
NESTING = [
    ("actix: connection, parsing, writing", r"actix_http::h1::dispatcher::.*poll"),
    ("around_every_request middleware", r"petstore_http::middleware::around_every_request"),
    ("authenticate", r"petstore_http::auth::"),
    ("a write's hop to the blocking pool", r"actix_web::web::block|tokio::runtime::blocking::pool::spawn_blocking"),
    ("a read on a reader thread", r"petstore_http::readers::serve"),
    ("the use case", r"petstore_core::service::"),
    ("SQLite", r"^sqlite3_step$|^sqlite3_prepare"),
    ("JSON out", r"serde_json::ser::"),
    ("metrics", r"petstore_http::metrics::"),
]


def main():
    folder = pathlib.Path(sys.argv[1])
    requests = int(sys.argv[2])
    report = {}
    ceiling = None
    for target, path in sorted(dumps(folder).items(), key=lambda kv: kv[0] != "ceiling"):
        total, inclusive = inclusive_costs(path)
        layers = {}
        for (function, source), cost in self_costs(path).items():
            layer = layer_of(function, source or "")
            layers[layer] = layers.get(layer, 0) + cost
        nesting = {}
        for name, pattern in NESTING:
            costs = [c for c, s in inclusive if re.search(pattern, s)]
            nesting[name] = max(costs, default=0)
        entry = {
            "instructions_per_request": total / requests,
            "layers": {k: v / requests for k, v in sorted(layers.items(), key=lambda kv: -kv[1])},
            "inclusive": {k: v / requests for k, v in nesting.items() if v},
            "top_inclusive": [(c / requests, s) for c, s in inclusive[:40]],
        }
        counts = folder / f"{target}.switches"
        if counts.exists():
            n, switches = map(int, counts.read_text().split())
            entry["context_switches_per_request"] = switches / n
        strace = folder / f"{target}.strace"
        if strace.exists():
            calls = {}
            for line in strace.read_text().splitlines():
                fields = line.split()
                if len(fields) >= 5 and fields[0][0].isdigit() and fields[-1] != "total":
                    calls[fields[-1]] = int(fields[3])
            entry["syscalls_per_request"] = sum(calls.values()) / requests
            entry["syscalls"] = {k: v / requests for k, v in sorted(calls.items(), key=lambda kv: -kv[1])}
        if target == "ceiling":
            ceiling = entry["instructions_per_request"]
        report[target] = entry

    for target, entry in report.items():
        ratio = f" ({entry['instructions_per_request'] / ceiling:.1f} x the ceiling)" if ceiling else ""
        print(f"\n== {target}: {entry['instructions_per_request']:,.0f} instructions per request{ratio}")
        if "context_switches_per_request" in entry:
            print(
                f"   {entry['context_switches_per_request']:.2f} context switches, "
                f"{entry['syscalls_per_request']:.1f} system calls per request: "
                + ", ".join(f"{k} {v:.2f}" for k, v in list(entry["syscalls"].items())[:8])
            )
        print("   by layer (own instructions):")
        for name, cost in entry["layers"].items():
            share = cost / entry["instructions_per_request"] * 100
            print(f"     {name:<28} {cost:>10,.0f}  {share:5.1f}%")
        print("   nested (inclusive):")
        for name, cost in entry["inclusive"].items():
            print(f"     {name:<40} {cost:>10,.0f}")
    out = pathlib.Path("target/bench/profile-latest.json")
    out.write_text(json.dumps(report, indent=2))
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
