"""The harness itself, before any console page: a fresh server, its keys, and the browser."""

from playwright.sync_api import expect


def test_a_fresh_server_makes_keys_and_the_browser_renders_a_page_it_serves(server, page):
    # The admin key is the one the server wrote on its first start.
    status, body = server.api.call("GET", "/v1/keys")
    assert status == 200, body

    # A key of the role asked for: staff read the catalogue and may not manage keys.
    staff = server.new_key("staff", "harness staff")
    assert server.api.call("GET", "/v1/pets", key=staff)[0] == 200
    assert server.api.call("GET", "/v1/keys", key=staff)[0] == 403
    # A secret of the right form that the server never made is refused.
    assert server.api.call("GET", "/v1/pets", key="pst_" + "0" * 64)[0] == 401

    page.goto(server.url + "/docs/")
    # Swagger UI writes the API's title only once its scripts have run and fetched
    # /openapi.json from the server. The document is large: on a busy machine this takes
    # seconds beyond Playwright's default 5.
    expect(page.locator(".info .title")).to_contain_text("Petstore API", timeout=30_000)
