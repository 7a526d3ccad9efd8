"""Signing in and out, and every way a session ends."""

import time

from playwright.sync_api import expect

from conftest import check_accessibility, screenshot
from steps import alert, sign_in, signed_in


def test_staff_sign_in_and_out(server, page):
    key = server.new_key("staff", "Sam at the counter")
    sign_in(page, server, key, check=lambda p: (check_accessibility(p), screenshot(p, "sign-in")))
    expect(page.get_by_role("heading", name="Today")).to_be_visible()
    expect(page.get_by_text("Signed in as staff")).to_be_visible()
    # Staff see no admin sections.
    expect(page.get_by_role("link", name="Keys")).to_have_count(0)
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_text("You have signed out.")).to_be_visible()
    # The session is gone from the server too: the old cookie opens nothing.
    page.goto(server.url + "/console/stock")
    expect(page).to_have_url(server.url + "/console/sign-in")


def test_the_key_never_reaches_script_or_storage(server, page):
    key = signed_in(page, server)
    page.get_by_role("link", name="Stock").click()
    expect(page.get_by_role("heading", name="Stock")).to_be_visible()
    assert page.evaluate("document.cookie") == "", "the session cookie is HttpOnly"
    stored = page.evaluate(
        "JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])")
    cookie, = page.context.cookies()
    # htmx keeps the current path in sessionStorage; no secret, and no page copy, is kept.
    for secret in (key, cookie["value"]):
        assert secret not in stored, stored
    assert "<" not in stored, "no copy of a page is kept in storage"
    assert key not in page.content()
    assert (cookie["httpOnly"], cookie["sameSite"], cookie["path"]) == (True, "Strict", "/console/")
    assert cookie["value"].startswith("pss_") and key not in cookie["value"]


def test_a_customer_key_is_refused(server, page):
    sign_in(page, server, server.new_key("customer", "Cy"))
    expect(alert(page)).to_contain_text("customer's key cannot sign in")
    check_accessibility(page)
    assert page.context.cookies() == []


def test_an_unknown_or_malformed_key_is_refused(server, page):
    sign_in(page, server, "pst_" + "0" * 64)
    expect(alert(page)).to_contain_text("not valid")
    sign_in(page, server, "too short")
    expect(alert(page)).to_contain_text("not an API key")
    assert page.context.cookies() == []


def test_an_idle_session_expires(start_server, page):
    server = start_server(["--console-idle-secs", "2"])
    signed_in(page, server)
    time.sleep(2.5)
    page.get_by_role("link", name="Orders").click()
    expect(page).to_have_url(server.url + "/console/sign-in")


def test_a_session_in_use_ends_at_its_maximum_age(start_server, page):
    server = start_server(["--console-max-age-secs", "3"])
    signed_in(page, server)
    started = time.monotonic()
    # Used every half second, it is never idle; still it ends three seconds after sign-in.
    while time.monotonic() - started < 2.4:
        page.get_by_role("link", name="Stock").click()
        expect(page.get_by_role("heading", name="Stock")).to_be_visible()
        time.sleep(0.5)
    time.sleep(max(0.0, 3.2 - (time.monotonic() - started)))
    page.get_by_role("link", name="Orders").click()
    expect(page).to_have_url(server.url + "/console/sign-in")


def test_a_revoked_key_s_session_ends_on_the_next_page(server, page):
    staff = server.new_key("staff", "leaving staff")
    sign_in(page, server, staff)
    expect(page.get_by_role("heading", name="Today")).to_be_visible()
    status, keys = server.api.call("GET", "/v1/keys")
    key_id = next(k["id"] for k in keys if k["name"] == "leaving staff")
    assert server.api.call("DELETE", f"/v1/keys/{key_id}")[0] == 204
    page.get_by_role("link", name="Categories").click()
    expect(page).to_have_url(server.url + "/console/sign-in")


def test_signing_out_ends_the_session_in_every_tab(server, page):
    signed_in(page, server)
    other = page.context.new_page()
    other.goto(server.url + "/console/orders")
    expect(other.get_by_role("heading", name="Orders")).to_be_visible()
    page.get_by_role("button", name="Sign out").click()
    # Signed out once the server says so, before the other tab moves.
    expect(page.get_by_text("You have signed out.")).to_be_visible()
    other.get_by_role("link", name="Stock").click()
    expect(other).to_have_url(server.url + "/console/sign-in")


def test_staff_are_refused_the_admin_pages(server, page):
    signed_in(page, server)
    page.goto(server.url + "/console/keys")
    expect(alert(page)).to_contain_text("forbidden")
    check_accessibility(page)


def test_sign_in_by_keyboard_alone(server, page):
    key = server.new_key("staff", "keyboard")
    page.goto(server.url + "/console/sign-in")
    # The key field has the focus on arrival (asserted before typing: keys typed before the
    # browser applies autofocus would be lost); Enter sends the form.
    expect(page.get_by_label("API key (staff or admin)")).to_be_focused()
    page.keyboard.type(key)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Today")).to_be_visible()
    # The first Tab reaches the skip link, which moves on to the content.
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to the content")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Today", exact=True)).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Pets", exact=True)).to_be_focused()
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Categories")).to_be_visible()


def test_a_session_is_shared_by_every_node(start_server, page):
    first = start_server()
    second = start_server(beside=first)
    signed_in(page, first)
    # The same browser, the same cookie (it names a path, not a port: cookies do not keep
    # ports apart), the other node: the session is in the database both read.
    page.goto(second.url + "/console/orders")
    expect(page.get_by_role("heading", name="Orders")).to_be_visible()
    page.get_by_role("button", name="Sign out").click()
    # The sign-out answered (a click only sends it): then the other node sees it ended.
    expect(page).to_have_url(second.url + "/console/sign-in?ended")
    page.goto(first.url + "/console/orders")
    expect(page).to_have_url(first.url + "/console/sign-in")
