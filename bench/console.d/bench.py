#!/usr/bin/env python3
"""The measuring side of bench/console (its header says what is measured and why); Python's
standard library only.

    bench.py --binary PATH [--out FILE]

Every knob is an environment variable (BENCH_BACKEND, BENCH_ROUNDS, BENCH_DURATION,
BENCH_WARMUP, BENCH_CONNECTIONS, BENCH_PETS, BENCH_SERVER_CPU, BENCH_LOAD_CPU,
BENCH_MAX_RATIO, PETSTORE_TEST_POSTGRES_URL). One process does the whole run: it makes the
database, starts the service, seeds it, signs in, runs the loads with wrk, checks every load
and its answers, prints the tables and writes the JSON. A check that fails stops the run
(exit 1) with a line saying what failed, before anything is printed as a result; whatever the
run started (the service, wrk, the scratch database, the temporary folder) is stopped or
removed on any exit, Ctrl-C and SIGTERM included.
"""

import argparse
import html
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

TICKS = os.sysconf("SC_CLK_TCK")
PAGE_ITEMS = 100  # a console page's rows, the JSON lists' limit here
CATEGORIES = ["Dogs", "Cats", "Birds", "Fish", "Reptiles"]
NAMES = ["Biscuit", "Pepper", "Luna", "Milo", "Nala", "Otis", "Poppy", "Rex", "Sky", "Tango"]
COOKIE = "petstore_console"

# The loads: the path wrk asks for, how it authenticates, the route label the service's
# /metrics counts its answers under, and which side of a comparison it is.
LOADS = {
    "pets-page": {"label": "pets page", "path": "/console/pets", "auth": "cookie",
                  "route": "/console/pets", "side": "page"},
    "pets-json": {"label": "pets JSON", "path": f"/v1/pets?limit={PAGE_ITEMS}", "auth": "bearer",
                  "route": "/v1/pets", "side": "json"},
    "categories-json": {"label": "categ. JSON", "path": f"/v1/categories?limit={PAGE_ITEMS}",
                        "auth": "bearer", "route": "/v1/categories", "side": "json"},
    "stock-page": {"label": "stock page", "path": "/console/stock", "auth": "cookie",
                   "route": "/console/stock", "side": "page"},
    "stock-json": {"label": "stock JSON", "path": f"/v1/inventory?limit={PAGE_ITEMS}",
                   "auth": "bearer", "route": "/v1/inventory", "side": "json"},
}
ORDER = ["pets-page", "pets-json", "categories-json", "stock-page", "stock-json"]
# Each page against the JSON answers that hold the same data: the pets page shows the pets,
# their categories' names and their units (GET /v1/pets, GET /v1/categories and
# GET /v1/inventory), the stock page the stock entries and their pets' names
# (GET /v1/inventory and GET /v1/pets). The JSON side's cost is
# the sum of its answers' (a client needs both), its rate the sets of answers a second.
PAIRS = {"pets": ("pets-page", ("pets-json", "categories-json", "stock-json")),
         "stock": ("stock-page", ("stock-json", "pets-json"))}


class Failure(Exception):
    """A check that failed: main() prints it and exits 1."""


def log(message):
    print(message, file=sys.stderr, flush=True)


def knob(name, default, kind=int):
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return kind(text)
    except ValueError:
        raise Failure(f"{name}={text!r} is not a {kind.__name__}") from None


# ---------------------------------------------------------------- HTTP


class Client:
    """One kept-alive connection to the service, opened again when the service closed it."""

    def __init__(self, port):
        self.port = port
        self.connection = None

    def call(self, method, path, headers=None, body=None, timeout=30):
        """(status, headers, body bytes)."""
        headers = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
        for attempt in (1, 2):
            if self.connection is None:
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port,
                                                             timeout=timeout)
            try:
                self.connection.request(method, path, body=body, headers=headers)
                response = self.connection.getresponse()
                return response.status, response.headers, response.read()
            except (ConnectionError, http.client.HTTPException, TimeoutError, OSError):
                self.connection.close()
                self.connection = None
                if attempt == 2:
                    raise

    def close(self):
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def json_of(status, body, what, expected=(200,)):
    if status not in expected:
        raise Failure(f"{what}: expected {' or '.join(map(str, expected))}, got {status}: "
                      f"{body[:300]!r}")
    try:
        return json.loads(body)
    except ValueError:
        raise Failure(f"{what}: the answer is not JSON: {body[:300]!r}") from None


# ---------------------------------------------------------------- CPU time


def stat_fields(pid):
    """/proc/PID/stat's fields after the command name (which may hold spaces), or None."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rpartition(")")[2].split()
    except OSError:
        return None


def service_cpu(pid):
    """The service's CPU time so far: each live thread's run time in nanoseconds
    (/proc/PID/task/*/schedstat's first field, user + system), the threads read, and
    /proc/PID/stat's utime + stime (every thread, live or gone, in clock ticks)."""
    fields = stat_fields(pid)
    if fields is None:
        raise Failure(f"the service (pid {pid}) is gone")
    threads, nanoseconds = set(), 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as file:
                nanoseconds += int(file.read().split()[0])
            threads.add(tid)
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended meanwhile
    return {"ns": nanoseconds, "threads": threads,
            "stat_seconds": (int(fields[11]) + int(fields[12])) / TICKS}


def cpu_between(before, after):
    """CPU seconds between two service_cpu() readings, and where the figure comes from: the
    threads' schedstat when every thread of the first reading still ran at the second (a
    thread that ended took its time with it), else /proc/PID/stat (to a clock tick)."""
    if before["threads"] <= after["threads"]:
        return (after["ns"] - before["ns"]) / 1e9, "schedstat"
    return after["stat_seconds"] - before["stat_seconds"], "stat"


class PostgresCpu:
    """CPU seconds of the local PostgreSQL server the scratch database lives on (its
    postmaster, every live child, the children it reaped), or None where that cannot be read
    (a server on another machine, a data directory out of reach). The whole server's: other
    databases' work on it is counted too."""

    def __init__(self, url):
        self.postmaster = None
        try:
            directory = subprocess.run(
                ["psql", "-X", "-Atq", url, "-c", "SHOW data_directory"], capture_output=True,
                text=True, timeout=30).stdout.strip()
            with open(os.path.join(directory, "postmaster.pid")) as file:
                pid = int(file.readline())
            if stat_fields(pid) is not None:
                self.postmaster = pid
        except (OSError, ValueError, subprocess.SubprocessError):
            pass

    def seconds(self):
        if self.postmaster is None:
            return None
        fields = stat_fields(self.postmaster)
        if fields is None:
            return None
        total = sum(int(fields[i]) for i in (11, 12, 13, 14))
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                child = stat_fields(entry)
                if child and int(child[1]) == self.postmaster:
                    total += int(child[11]) + int(child[12])
        return total / TICKS


# ---------------------------------------------------------------- the service's counters


def answers_by_route(client):
    """{(route, status): count} of GET answers, from petstore_http_requests_total."""
    status, _, body = client.call("GET", "/metrics")
    if status != 200:
        raise Failure(f"GET /metrics: expected 200, got {status}")
    counts = {}
    for line in body.decode().splitlines():
        found = re.match(r"petstore_http_requests_total\{(.*)\}\s+(\S+)$", line)
        if not found:
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', found.group(1)))
        if labels.get("method") == "GET":
            key = (labels.get("route"), labels.get("status"))
            counts[key] = counts.get(key, 0) + float(found.group(2))
    return counts


# ---------------------------------------------------------------- the run


class Run:
    def __init__(self, args):
        self.binary = os.path.realpath(args.binary)
        self.out = args.out
        self.backend = os.environ.get("BENCH_BACKEND", "sqlite").strip() or "sqlite"
        if self.backend not in ("sqlite", "postgres"):
            raise Failure(f"BENCH_BACKEND is sqlite or postgres, not {self.backend!r}")
        self.rounds = knob("BENCH_ROUNDS", 3)
        self.duration = knob("BENCH_DURATION", 8)
        self.warmup = knob("BENCH_WARMUP", 2)
        self.connections = knob("BENCH_CONNECTIONS", 4)
        self.pets = knob("BENCH_PETS", 100)
        self.server_cpu = knob("BENCH_SERVER_CPU", 0)
        self.load_cpu = knob("BENCH_LOAD_CPU", 1)
        self.max_ratio = knob("BENCH_MAX_RATIO", 2.0, float)
        if self.rounds < 1 or self.duration < 1 or self.warmup < 0 or self.connections < 1:
            raise Failure("BENCH_ROUNDS, BENCH_DURATION and BENCH_CONNECTIONS must be at least "
                          "1, BENCH_WARMUP at least 0 (whole seconds)")
        if self.pets < 1:
            raise Failure("BENCH_PETS must be at least 1")
        cores = sorted(os.sched_getaffinity(0))
        self.cores = len(cores)
        if self.server_cpu == self.load_cpu or not {self.server_cpu, self.load_cpu} <= set(cores):
            raise Failure(f"BENCH_SERVER_CPU ({self.server_cpu}) and BENCH_LOAD_CPU "
                          f"({self.load_cpu}) must be two different cores of {cores}")
        self.items = min(self.pets, PAGE_ITEMS)
        self.started = time.time()
        self.load_at_start = os.getloadavg()[0]
        self.work = tempfile.mkdtemp(prefix="petstore-bench-console.")
        self.service = None
        self.service_log = os.path.join(self.work, "service.log")
        self.client = None
        self.postgres_base = None
        self.postgres_database = None
        self.postgres_cpu = None

    # -- the database

    def database(self):
        if self.backend == "sqlite":
            return os.path.join(self.work, "petstore.db")
        base = os.environ.get("PETSTORE_TEST_POSTGRES_URL", "").strip()
        if not base:
            raise Failure("BENCH_BACKEND=postgres needs PETSTORE_TEST_POSTGRES_URL (a server "
                          "the run may create a database on, e.g. "
                          "postgres://postgres@127.0.0.1:5432/postgres)")
        name = f"bench_console_{secrets.token_hex(4)}"
        self.psql(base, f"CREATE DATABASE {name}")
        self.postgres_base, self.postgres_database = base, name
        self.postgres_cpu = PostgresCpu(base)
        return urllib.parse.urlsplit(base)._replace(path=f"/{name}").geturl()

    @staticmethod
    def psql(url, statement):
        done = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", url, "-c", statement],
                              capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise Failure(f"psql {statement!r}: {done.stderr.strip()}")

    # -- the service

    def start_service(self):
        database = self.database()
        port = free_port()
        # A clean environment: no PETSTORE_* variable (nor OTEL_*, PG*) reaches the service;
        # it logs at warn, as in every benchmark here (an info line per request would cost
        # both sides what the log's destination costs).
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RUST_LOG": "warn"}
        if "HOME" in os.environ:
            env["HOME"] = os.environ["HOME"]
        command = ["taskset", "-c", str(self.server_cpu), self.binary, "serve",
                   "--bind", f"127.0.0.1:{port}", "--database", database,
                   "--admin-key-file", os.path.join(self.work, "admin-key"),
                   "--workers", "1", "--rate-limit", "1000000"]
        with open(self.service_log, "wb") as output:
            self.service = subprocess.Popen(command, env=env, stdout=output,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        self.client = Client(port)
        self.port = port
        deadline = time.monotonic() + 120
        while True:
            if self.service.poll() is not None:
                raise Failure(f"the service exited with status {self.service.returncode} while "
                              f"starting:\n{self.log_tail()}")
            try:
                status, _, _ = self.client.call("GET", "/healthz", timeout=2)
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise Failure(f"/healthz did not answer 200 within 120 s:\n{self.log_tail()}")
            time.sleep(0.1)
        # taskset execs the binary: the child is the service itself, on the server's core.
        with open(f"/proc/{self.service.pid}/comm") as file:
            comm = file.read().strip()
        allowed = os.sched_getaffinity(self.service.pid)
        if allowed != {self.server_cpu}:
            raise Failure(f"the service ({comm}) runs on cores {sorted(allowed)}, expected "
                          f"{self.server_cpu}")
        with open(os.path.join(self.work, "admin-key")) as file:
            self.admin_key = file.read().strip()
        if not self.admin_key:
            raise Failure("the service wrote no admin key")

    def log_tail(self):
        try:
            with open(self.service_log, errors="replace") as file:
                return "".join(file.readlines()[-20:])
        except OSError:
            return "(no log)"

    def stop_service(self):
        if self.client is not None:
            self.client.close()
        if self.service is None or self.service.poll() is not None:
            return
        self.service.terminate()
        try:
            self.service.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.service.kill()
            self.service.wait()

    def cleanup(self):
        try:
            self.stop_service()
        finally:
            if self.postgres_database:
                try:
                    self.psql(self.postgres_base,
                              f"DROP DATABASE IF EXISTS {self.postgres_database} WITH (FORCE)")
                except (Failure, OSError, subprocess.SubprocessError) as error:
                    log(f"bench/console: could not drop {self.postgres_database}: {error}")
            shutil.rmtree(self.work, ignore_errors=True)

    # -- the data

    def api(self, method, path, key, body=None, expected=(200,)):
        status, _, answer = self.client.call(method, path,
                                             {"Authorization": f"Bearer {key}"}, body)
        return json_of(status, answer, f"{method} {path}", expected)

    def seed(self):
        """BENCH_PETS pets over five categories, each with stock, made through the API as the
        admin; a staff key; the first page's pets as each answer should show them."""
        log(f"seeding {len(CATEGORIES)} categories and {self.pets} pets with stock through the API")
        categories = {}
        for name in CATEGORIES:
            made = self.api("POST", "/v1/categories", self.admin_key, {"name": name}, (201,))
            categories[made["id"]] = name
        category_ids = sorted(categories)
        pets = []
        for n in range(self.pets):
            name = f"{NAMES[n % len(NAMES)]} {n + 1:04d}"
            category = category_ids[n % len(category_ids)]
            made = self.api("POST", "/v1/pets", self.admin_key,
                            {"name": name, "categoryId": category}, (201,))
            if made.get("name") != name or made.get("categoryId") != category:
                raise Failure(f"POST /v1/pets answered {made} for {name!r} in {category}")
            quantity = 1 + (n * 37) % 500
            stock = self.api("PATCH", f"/v1/inventory/{made['id']}", self.admin_key,
                             {"quantity": quantity})
            if stock.get("quantity") != quantity:
                raise Failure(f"PATCH /v1/inventory/{made['id']} answered {stock}, "
                              f"expected quantity {quantity}")
            pets.append({"id": made["id"], "name": name, "categoryId": category,
                         "category": categories[category], "status": made["status"],
                         "quantity": quantity})
        pets.sort(key=lambda pet: pet["id"])
        self.expected = pets[:self.items]
        key = self.api("POST", "/v1/keys", self.admin_key, {"name": "bench", "role": "staff"},
                       (201,))
        if key.get("role") != "staff" or not key.get("key"):
            raise Failure(f"POST /v1/keys answered no staff key: { {k: v for k, v in key.items() if k != 'key'} }")
        self.staff_key = key["key"]

    def sign_in(self):
        """The staff key exchanged for a console session: its cookie."""
        body = urllib.parse.urlencode({"key": self.staff_key}).encode()
        status, headers, answer = self.client.call(
            "POST", "/console/sign-in",
            {"Content-Type": "application/x-www-form-urlencoded"}, body)
        if status != 303 or headers.get("Location") != "/console/":
            raise Failure(f"POST /console/sign-in: expected 303 to /console/, got {status} "
                          f"(Location {headers.get('Location')!r}): {answer[:300]!r}")
        for value in headers.get_all("Set-Cookie") or []:
            found = re.match(rf"{COOKIE}=(pss_[^;]+)", value)
            if found:
                self.session = found.group(1)
                break
        else:
            raise Failure(f"POST /console/sign-in set no {COOKIE} cookie: "
                          f"{headers.get_all('Set-Cookie')}")
        # Without the cookie a page sends the browser to sign in: the 3xx the counts catch.
        status, headers, _ = self.client.call("GET", "/console/")
        if status != 303:
            raise Failure(f"GET /console/ without a session: expected 303, got {status}")

    # -- the checks of what each load answers

    def sample(self, name):
        """Fetches the load's answer once, as wrk asked for it, and checks that it holds the
        first page's pets as seeded. Returns its size in bytes."""
        load = LOADS[name]
        status, headers, body = self.client.call("GET", load["path"], self.auth_headers(name))
        what = f"the sampled {load['label']} (GET {load['path']})"
        if load["side"] == "json":
            items = json_of(status, body, what)
            if name == "categories-json":
                shown = [i.get("name") for i in items] if isinstance(items, list) else items
                if shown != CATEGORIES:
                    raise Failure(f"{what}: expected the categories {CATEGORIES}, got {shown}")
                return len(body)
            if not isinstance(items, list) or len(items) != self.items:
                raise Failure(f"{what}: expected a list of {self.items} items, got "
                              f"{len(items) if isinstance(items, list) else type(items).__name__}")
            if name == "pets-json":
                shown = [(i.get("id"), i.get("name"), i.get("categoryId"), i.get("status"))
                         for i in items]
                wanted = [(p["id"], p["name"], p["categoryId"], p["status"])
                          for p in self.expected]
            else:
                shown = [(i.get("petId"), i.get("quantity")) for i in items]
                wanted = [(p["id"], p["quantity"]) for p in self.expected]
        else:
            if status != 200:
                raise Failure(f"{what}: expected 200, got {status} "
                              f"(Location {headers.get('Location')!r})")
            if not (headers.get("Content-Type") or "").startswith("text/html"):
                raise Failure(f"{what}: Content-Type {headers.get('Content-Type')!r}, not HTML")
            text = body.decode()
            if "Signed in as staff" not in text:
                raise Failure(f"{what}: the page does not say it is the staff session's")
            tbody = re.search(r"<tbody>(.*?)</tbody>", text, re.S)
            if not tbody:
                raise Failure(f"{what}: no table body in the page")
            if name == "pets-page":
                # Each cell names its column (data-label) for the phone's layout; the units
                # cell holds the level and its mark.
                rows = re.findall(r'<tr><td[^>]*>(\d+)</td><td[^>]*><a href="/console/pets/(\d+)">'
                                  r"([^<]*)</a></td><td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td>"
                                  r"<td[^>]*>.*?</td></tr>",
                                  tbody.group(1))
                shown = [(int(i), int(link), html.unescape(n), html.unescape(c), s)
                         for i, link, n, c, s in rows]
                wanted = [(p["id"], p["id"], p["name"], p["category"], p["status"])
                          for p in self.expected]
            else:
                rows = re.findall(r'<tr id="stock-(\d+)"><td[^>]*><a href="/console/pets/(\d+)">'
                                  r'([^<]*)</a></td><td[^>]*>([^<]*)</td>.*?name="quantity"[^>]*?'
                                  r'value="(\d+)"', tbody.group(1), re.S)
                shown = [(int(i), int(link), html.unescape(n), s, int(q))
                         for i, link, n, s, q in rows]
                wanted = [(p["id"], p["id"], p["name"], p["status"], p["quantity"])
                          for p in self.expected]
            row_count = tbody.group(1).count("<tr")
            if row_count != len(shown):
                raise Failure(f"{what}: {row_count} rows, of which {len(shown)} read as "
                              "expected (has the page's markup changed?)")
        if shown != wanted:
            missing = [w for w in wanted if w not in shown]
            extra = [s for s in shown if s not in wanted]
            raise Failure(f"{what}: does not hold the first {self.items} pets as seeded, in "
                          f"order ({len(shown)} shown; missing {missing[:3]}, unexpected "
                          f"{extra[:3]})")
        return len(body)

    def auth_headers(self, name):
        if LOADS[name]["auth"] == "cookie":
            return {"Cookie": f"{COOKIE}={self.session}"}
        return {"Authorization": f"Bearer {self.staff_key}"}

    # -- the loads

    def write_scripts(self):
        for name in ORDER:
            if LOADS[name]["auth"] == "cookie":
                header = f'wrk.headers["Cookie"] = "{COOKIE}=" .. os.getenv("BENCH_SESSION")'
            else:
                header = 'wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_KEY")'
            with open(os.path.join(self.work, f"{name}.lua"), "w") as file:
                file.write(header + "\n" + """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %d %d %d %d %d %d %.3f %.3f\\n", summary.requests,
    summary.duration, summary.bytes, e.status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
""")

    def wrk(self, name, seconds):
        """wrk on the load's path for `seconds`, on the load generator's core: its figures,
        after checking it saw no answer of 4xx/5xx and no socket error."""
        load = LOADS[name]
        # The secrets go through the environment, not the command line (ps shows that).
        env = {**os.environ, "BENCH_SESSION": self.session, "BENCH_KEY": self.staff_key}
        command = ["taskset", "-c", str(self.load_cpu), "wrk", "-t1",
                   f"-c{self.connections}", f"-d{seconds}s", "--timeout", "10s",
                   "-s", os.path.join(self.work, f"{name}.lua"),
                   f"http://127.0.0.1:{self.port}{load['path']}"]
        done = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=seconds + 60)
        found = re.search(r"RESULT (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) "
                          r"([0-9.]+) ([0-9.]+)", done.stdout)
        if done.returncode != 0 or not found:
            raise Failure(f"wrk on the {load['label']} exited {done.returncode} without its "
                          f"figures:\n{done.stdout}{done.stderr}")
        (requests, duration_us, size, status_errors, connect, read, write,
         timeouts) = map(int, found.groups()[:8])
        if requests == 0:
            raise Failure(f"wrk on the {load['label']} got no answer")
        if status_errors or connect or read or write or timeouts:
            raise Failure(f"wrk on the {load['label']}: {status_errors} answers 4xx/5xx, socket "
                          f"errors: connect {connect}, read {read}, write {write}, timeout "
                          f"{timeouts}")
        return {"requests": requests, "seconds": duration_us / 1e6, "bytes": size,
                "p50_ms": float(found.group(9)), "p99_ms": float(found.group(10))}

    def measure(self, round_number, name):
        load = LOADS[name]
        log(f"round {round_number}: {load['label']} (GET {load['path']})")
        if self.service.poll() is not None:
            raise Failure(f"the service exited ({self.service.returncode}):\n{self.log_tail()}")
        if self.warmup:
            self.wrk(name, self.warmup)
        # Answers in flight when the warm-up's wrk stopped land before the counts are read.
        time.sleep(0.5)
        counts_before = answers_by_route(self.client)
        postgres_before = self.postgres_cpu.seconds() if self.postgres_cpu else None
        cpu_before = service_cpu(self.service.pid)
        result = self.wrk(name, self.duration)
        cpu_after = service_cpu(self.service.pid)
        postgres_after = self.postgres_cpu.seconds() if self.postgres_cpu else None
        time.sleep(0.5)
        counts_after = answers_by_route(self.client)

        # What the service answered on the load's route, by status: only 200 (wrk counts a
        # 303 to the sign-in page as a success), and as many as wrk got, more by at most one
        # a connection (answers in flight when wrk stopped).
        by_status = {}
        for (route, status), count in counts_after.items():
            if route == load["route"]:
                delta = int(count - counts_before.get((route, status), 0))
                if delta:
                    by_status[status] = delta
        served = by_status.pop("200", 0)
        if by_status:
            raise Failure(f"the {load['label']} (route {load['route']}): the service answered "
                          f"{by_status} besides {served} answers 200")
        if not result["requests"] <= served <= result["requests"] + self.connections:
            raise Failure(f"the {load['label']}: wrk got {result['requests']} answers, the "
                          f"service counted {served} answered 200 (expected "
                          f"{result['requests']} to {result['requests'] + self.connections})")
        seconds, source = cpu_between(cpu_before, cpu_after)
        result.update({
            "load": name,
            "round": round_number,
            "served_200": served,
            "requests_per_second": result["requests"] / result["seconds"],
            "bytes_per_answer": result["bytes"] / result["requests"],
            "service_cpu_seconds": seconds,
            "service_cpu_source": source,
            "service_cpu_us_per_answer": seconds * 1e6 / result["requests"],
        })
        if postgres_before is not None and postgres_after is not None:
            result["postgres_server_cpu_us_per_answer"] = (
                (postgres_after - postgres_before) * 1e6 / result["requests"])
        result["sample_bytes"] = self.sample(name)
        return result

    # -- the whole run

    def run(self):
        self.start_service()
        self.seed()
        self.sign_in()
        for name in ORDER:
            self.sample(name)
        self.write_scripts()
        rounds = []
        for round_number in range(1, self.rounds + 1):
            order = ORDER if round_number % 2 else list(reversed(ORDER))
            results = {name: self.measure(round_number, name) for name in order}
            rounds.append({"round": round_number, "order": order, "results": results})
        self.stop_service()
        self.report(rounds)

    def report(self, rounds):
        load_at_end = os.getloadavg()[0]
        postgres = self.backend == "postgres" and all(
            "postgres_server_cpu_us_per_answer" in r
            for round_ in rounds for r in round_["results"].values())
        print()
        print(f"bench/console: {self.binary} on {self.backend}"
              + (f" (scratch database {self.postgres_database})" if self.postgres_database else ""))
        print(f"  a console page against the JSON answer holding the same data, both as one "
              f"staff key ({len(self.expected)} items an answer; {self.pets} pets in "
              f"{len(CATEGORIES)} categories):")
        for pair, (page, data) in PAIRS.items():
            print(f"    {pair:<6} GET {LOADS[page]['path']:<16} (session cookie)  against  "
                  + " + ".join(f"GET {LOADS[d]['path']}" for d in data) + " (bearer key)")
        print(f"  {self.rounds} round{'s' if self.rounds > 1 else ''} of {self.duration} s a load "
              f"after {self.warmup} s of warm-up, wrk -t1 -c{self.connections}, the order "
              "reversed every other round")
        print(f"  cores ({self.cores} on this machine): service {self.server_cpu} "
              f"(--workers 1), wrk and this script {self.load_cpu}")
        print(f"  the machine's load average (1 min): {self.load_at_start:.2f} at the start, "
              f"{load_at_end:.2f} at the end")
        print("  CPU: the service's (user + system, every thread) over the answers wrk got"
              + ("; PostgreSQL: the whole local server's, others' work on it included"
                 if postgres else ""))

        def json_side(round_, pair):
            """The JSON answers' CPU per set, and sets a second."""
            results = [round_["results"][d] for d in PAIRS[pair][1]]
            cpu = sum(r["service_cpu_us_per_answer"] for r in results)
            rate = 1 / sum(1 / r["requests_per_second"] for r in results)
            return cpu, rate

        def ratios(round_, pair):
            page = round_["results"][PAIRS[pair][0]]
            cpu, rate = json_side(round_, pair)
            return (page["service_cpu_us_per_answer"] / cpu, page["requests_per_second"] / rate)

        for round_ in rounds:
            print()
            print(f"round {round_['round']} ({', '.join(LOADS[n]['label'] for n in round_['order'])})")
            print(f"  {'load':<11} {'req/s':>8} {'answers':>8} {'p50 ms':>7} {'p99 ms':>7} "
                  f"{'bytes':>7} {'CPU µs/answer':>14}" + (f" {'PG µs/answer':>13}" if postgres else ""))
            for name in ORDER:
                r = round_["results"][name]
                print(f"  {LOADS[name]['label']:<11} {r['requests_per_second']:>8.0f} "
                      f"{r['requests']:>8} {r['p50_ms']:>7.2f} {r['p99_ms']:>7.2f} "
                      f"{r['bytes_per_answer']:>7.0f} {r['service_cpu_us_per_answer']:>13.1f}"
                      + ("*" if r["service_cpu_source"] == "stat" else " ")
                      + (f" {r['postgres_server_cpu_us_per_answer']:>13.1f}" if postgres else ""))
            for pair in PAIRS:
                cpu, rate = ratios(round_, pair)
                print(f"  {pair}: page over JSON, CPU per answer {cpu:.2f}, req/s {rate:.2f}")

        median = lambda values: statistics.median(values)
        show = lambda values: ", ".join(f"{v:.2f}" for v in values)
        summary = {}
        print()
        print(f"median of the {self.rounds} round{'s' if self.rounds > 1 else ''} (ratios taken "
              "within each round, rounds in brackets)")
        width = 6 * self.rounds + 2
        print(f"  {'pair':<6} {'page CPU µs':>11} {'JSON CPU µs':>11}   "
              f"{'page/JSON CPU':>13} {'(rounds)':<{width}}   {'page/JSON req/s':>15} (rounds)")
        for pair, (page, data) in PAIRS.items():
            cpu_rounds = [ratios(r, pair)[0] for r in rounds]
            rate_rounds = [ratios(r, pair)[1] for r in rounds]
            page_cpu = median([r["results"][page]["service_cpu_us_per_answer"] for r in rounds])
            data_cpu = median([json_side(r, pair)[0] for r in rounds])
            summary[pair] = {
                "page_cpu_us_per_answer": page_cpu, "json_cpu_us_per_answer": data_cpu,
                "page_over_json_cpu": median(cpu_rounds), "page_over_json_cpu_rounds": cpu_rounds,
                "page_over_json_requests_per_second": median(rate_rounds),
                "page_over_json_requests_per_second_rounds": rate_rounds,
                "page_requests_per_second": median(
                    [r["results"][page]["requests_per_second"] for r in rounds]),
                "json_sets_per_second": median([json_side(r, pair)[1] for r in rounds]),
            }
            print(f"  {pair:<6} {page_cpu:>11.1f} {data_cpu:>11.1f}   "
                  f"{median(cpu_rounds):>13.2f} {'(' + show(cpu_rounds) + ')':<{width}}   "
                  f"{median(rate_rounds):>15.2f} ({show(rate_rounds)})")
        print()
        for pair, figures in summary.items():
            cpu, rate = figures["page_over_json_cpu"], figures["page_over_json_requests_per_second"]
            figures["within_cpu"] = cpu <= self.max_ratio
            figures["within_requests_per_second"] = rate >= 1 / self.max_ratio
            print(f"  the {pair} page: {cpu:.2f} times the CPU of the JSON answers holding its data: "
                  + ("within" if figures["within_cpu"] else "NOT within")
                  + f" {self.max_ratio:g}x; by req/s {rate:.2f} of the JSON's: "
                  + ("within" if figures["within_requests_per_second"] else "NOT within")
                  + f" {self.max_ratio:g}x (at least {1 / self.max_ratio:.2f})")
        answers = sum(r["requests"] for round_ in rounds for r in round_["results"].values())
        sources = sorted({r["service_cpu_source"] for round_ in rounds
                          for r in round_["results"].values()})
        print()
        print(f"checks passed: {answers} answers measured, each page and JSON answer counted "
              "200 by the service (no 3xx: every page was the signed-in session's) and as many "
              "as wrk got; wrk saw no 4xx/5xx and no socket error, warm-ups included; after "
              f"every load a sampled answer held the first {len(self.expected)} pets as seeded, "
              "in order (pages: ids, names, category names or units, status; JSON: the items)")
        if sources != ["schedstat"]:
            print("  (*: CPU read from /proc/PID/stat, to 10 ms: a thread of the service "
                  "ended during that load)")
        took = time.time() - self.started
        print(f"the run took {int(took // 60)} min {int(took % 60)} s")
        os.makedirs(os.path.dirname(self.out) or ".", exist_ok=True)
        with open(self.out, "w") as file:
            json.dump({
                "binary": self.binary, "backend": self.backend,
                "rounds": self.rounds, "duration_seconds": self.duration,
                "warmup_seconds": self.warmup, "connections": self.connections,
                "pets": self.pets, "items_per_answer": len(self.expected),
                "categories": len(CATEGORIES), "cores": self.cores,
                "server_cpu": self.server_cpu, "load_cpu": self.load_cpu,
                "max_ratio": self.max_ratio,
                "paths": {name: LOADS[name]["path"] for name in ORDER},
                "load_average_at_start": self.load_at_start, "load_average_at_end": load_at_end,
                "started_at": self.started, "run_seconds": took,
                "rounds_results": rounds, "median": summary,
            }, file, indent=2)
        print(f"written to {self.out}")


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--out", default="target/bench/console.json")
    args = parser.parse_args()

    def terminated(signum, _frame):
        raise SystemExit(128 + signum)

    # Ctrl-C raises KeyboardInterrupt even where the shell started this with SIGINT ignored
    # (a background job of a script).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, terminated)
    signal.signal(signal.SIGHUP, terminated)
    run = None
    try:
        run = Run(args)
        # This script (and the wrk and psql it runs) on the load generator's core.
        os.sched_setaffinity(0, {run.load_cpu})
        run.run()
    except Failure as failure:
        sys.exit(f"bench/console: FAILED: {failure}")
    except KeyboardInterrupt:
        log("bench/console: interrupted")
        sys.exit(130)
    except SystemExit as leaving:
        if isinstance(leaving.code, int) and leaving.code > 128:
            log("bench/console: terminated")
        raise
    finally:
        # Cleaning up is not cut short by a second Ctrl-C.
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
        if run is not None:
            run.cleanup()


if __name__ == "__main__":
    main()
