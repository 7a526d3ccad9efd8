"""Fixtures and checks for the staff console's browser journeys.

Each journey gets a `petstore serve` of its own on a fresh database (a SQLite file, or with
CONSOLE_BACKEND=postgres a scratch database of the server in PETSTORE_TEST_POSTGRES_URL) and
a new page in Debian's headless Chromium, driven by Playwright. `.ci/console-journeys` builds
the binary, installs what this needs and runs it; run by hand, a missing piece skips every
journey and says which.

A journey imports the checks it uses: `from conftest import check_accessibility, screenshot`.
"""

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import sync_playwright

BACKEND = os.environ.get("CONSOLE_BACKEND", "sqlite")
PETSTORE_BIN = os.environ.get("PETSTORE_BIN", "")
POSTGRES_URL = os.environ.get("PETSTORE_TEST_POSTGRES_URL", "")
CHROMIUM = shutil.which("chromium")
# The screenshots in docs/console are taken at this size, and every journey runs at it, so
# that what a journey checks is what the pictures show.
VIEWPORT = {"width": 1280, "height": 800}
# A debug binary migrating a new PostgreSQL database on a busy 2-core machine takes seconds.
START_SECONDS = 30
STOP_SECONDS = 30

FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    # Remembered for the server's teardown, which prints its log only for a failed test.
    report = yield
    if report.failed:
        item.stash[FAILED] = True
    return report


@pytest.fixture(scope="session", autouse=True)
def requirements():
    """Skips every journey, saying why, when this machine cannot run them."""
    if BACKEND not in ("sqlite", "postgres"):
        pytest.fail(f"CONSOLE_BACKEND is {BACKEND!r}: it must be sqlite or postgres")
    if not CHROMIUM:
        pytest.skip("Debian's chromium is not installed (.ci/console-journeys installs it)")
    if not PETSTORE_BIN:
        pytest.skip("PETSTORE_BIN is not set (`bash .ci/console-journeys` builds the binary)")
    if not os.access(PETSTORE_BIN, os.X_OK):
        pytest.skip(f"PETSTORE_BIN names no executable: {PETSTORE_BIN}")
    if BACKEND == "postgres" and not POSTGRES_URL:
        pytest.skip(
            "CONSOLE_BACKEND=postgres needs PETSTORE_TEST_POSTGRES_URL, a server it may create "
            "databases on"
        )


class Api:
    """A JSON client of the server's API, calling with the admin key unless given another."""

    def __init__(self, url, key):
        self.url = url
        self.key = key

    def call(self, method, path, body=None, key=None):
        """Returns the status and the decoded body (None when empty), whatever the status."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", "Bearer " + (key or self.key))
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, _decoded(answer.read())
        except urllib.error.HTTPError as error:
            with error:
                return error.code, _decoded(error.read())


def _decoded(raw):
    return json.loads(raw) if raw else None


@dataclass
class Server:
    url: str
    admin_key: str
    api: Api
    database: str

    def new_key(self, role, name):
        """A new key's secret: its only appearance is in the answer that creates it."""
        status, body = self.api.call("POST", "/v1/keys", {"name": name, "role": role})
        assert status == 201, f"POST /v1/keys answered {status}: {body}"
        return body["key"]


@pytest.fixture
def start_server(request, tmp_path):
    """`start_server(extra_args=[...])` starts a `petstore serve` on a database of its own;
    `start_server(beside=other)` another node on `other`'s database."""
    started = 0

    def start(extra_args=(), beside=None):
        nonlocal started
        started += 1
        folder = tmp_path / f"server-{started}"
        folder.mkdir()
        database = beside.database if beside else _new_database(request, folder)
        port = _free_port()
        log = folder / "server.log"
        # Written by the binary itself: a database with no key gets an admin key on its
        # first start, in this file, as an operator's first start does.
        key_file = folder / "admin-key"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [PETSTORE_BIN, "serve", "--bind", f"127.0.0.1:{port}", "--database", database,
                 "--admin-key-file", key_file, *extra_args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=_server_environment(),
            )
        request.addfinalizer(lambda: _stop(process, log, request.node))
        url = f"http://127.0.0.1:{port}"
        _wait_until_serving(url, process)
        # Only the first node of a database writes its admin key.
        admin_key = beside.admin_key if beside else key_file.read_text().strip()
        return Server(url, admin_key, Api(url, admin_key), database)

    return start


@pytest.fixture
def server(start_server):
    return start_server()


def _new_database(request, folder):
    """A SQLite file in `folder`, or a new PostgreSQL database dropped when the test ends."""
    if BACKEND == "sqlite":
        return str(folder / "petstore.db")
    name = "console_" + secrets.token_hex(6)
    _psql(f"CREATE DATABASE {name}")
    # Registered before the server's stop, so it runs after it (finalizers run last first).
    request.addfinalizer(lambda: _psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    # The server's URL with the new database's name: its host, user and TLS settings kept.
    return urllib.parse.urlsplit(POSTGRES_URL)._replace(path="/" + name).geturl()


def _psql(statement):
    subprocess.run(["psql", "-q", POSTGRES_URL, "-c", statement], check=True)


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _server_environment():
    # The server is what its command line says: a PETSTORE_* variable of the caller's shell
    # (a config file, PETSTORE_BOOTSTRAP_ADMIN_KEY, which would leave no key file) would
    # change the server under test.
    return {name: value for name, value in os.environ.items() if not name.startswith("PETSTORE_")}


def _wait_until_serving(url, process):
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"petstore exited with {process.returncode} before serving (log below)")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"petstore did not answer {url}/healthz within {START_SECONDS} s (log below)")


def _stop(process, log, test):
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_SECONDS)
        stopped = True
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        stopped = False
    if test.stash.get(FAILED, False) or not stopped:
        print(f"--- petstore's log ({log}) ---\n{log.read_text(errors='replace')}")
    if not stopped:
        pytest.fail(f"petstore did not stop within {STOP_SECONDS} s of SIGTERM")


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as playwright:
        # Debian's chromium: Playwright downloads no browser of its own (CI reaches only the
        # package registries). No sandbox: CI runs as root, where Chromium cannot start one.
        browser = playwright.chromium.launch(executable_path=CHROMIUM, chromium_sandbox=False)
        yield browser
        browser.close()


@pytest.fixture
def new_page(browser):
    """`new_page(viewport=..., java_script_enabled=...)`: a page in a new browser context
    with those options. The test fails if a page's Content Security Policy blocked anything
    (a script, a style, an image): Playwright sees that only as a console message, and the
    page may look right without what was blocked."""
    contexts = []
    blocked = []

    def note(message):
        if message.type == "error" and "Content Security Policy" in message.text:
            blocked.append(message.text)

    def open_page(**options):
        context = browser.new_context(**{"viewport": VIEWPORT, **options})
        context.on("console", note)
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()
    if blocked:
        pytest.fail("the Content Security Policy blocked:\n" + "\n".join(blocked))


@pytest.fixture
def page(new_page):
    """A page at the screenshots' size, with script."""
    return new_page()


def check_accessibility(page):
    """axe-core on the page as it is now: no serious or critical violation.

    axe is injected by `page.evaluate`, which goes through the DevTools protocol and is not
    subject to the page's Content Security Policy: it runs on the console as served, with
    its CSP in force (tried with `script-src 'self'` and Trusted Types required)."""
    violations = Axe().run(page).response["violations"]
    serious = [v for v in violations if v["impact"] in ("serious", "critical")]
    if serious:
        lines = [f"axe on {page.url}:"]
        for violation in serious:
            lines.append(f"{violation['id']} ({violation['impact']}): {violation['help']}")
            lines.extend(f"    at {node['target']}" for node in violation["nodes"])
        pytest.fail("\n".join(lines))


def screenshot(page, name):
    """Saves the whole page as `<name>.png` in CONSOLE_SCREENSHOTS (docs/console when
    `.ci/console-journeys` is asked for them); without it, does nothing."""
    folder = os.environ.get("CONSOLE_SCREENSHOTS")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    # Playwright's defaults (hiding the caret, stopping animations) inject an inline style,
    # which the console's policy rightly blocks; the console has no animation to stop.
    page.screenshot(path=Path(folder) / f"{name}.png", full_page=True, caret="initial")
