"""What only admins do: keys and webhook subscriptions, their secrets shown once."""

from playwright.sync_api import expect

from conftest import check_accessibility, screenshot
from steps import alert, confirmed, said, signed_in


def test_an_admin_creates_a_key_whose_secret_is_shown_once(server, page):
    signed_in(page, server, "admin")
    page.get_by_role("link", name="Keys").click()
    page.get_by_label("What it is for").fill("warehouse sync")
    page.get_by_label("Role").select_option("staff")
    page.get_by_role("button", name="Create the key").click()
    secret = page.locator(".secret").inner_text().strip()
    assert secret.startswith("pst_")
    check_accessibility(page)
    screenshot(page, "key-created")
    assert server.api.call("GET", "/v1/pets", key=secret)[0] == 200
    # Never again: not on the list, not on a reload.
    page.get_by_role("link", name="Keys").click()
    # The list, not the page that showed the secret (both list the key): wait for the new page.
    expect(page.locator(".secret")).to_have_count(0)
    expect(page.get_by_role("cell", name="warehouse sync", exact=True)).to_be_visible()
    assert secret not in page.content()
    assert secret[:12] in page.content(), "its prefix identifies it"


def test_an_admin_revokes_a_key(server, page):
    doomed = server.new_key("customer", "old app")
    signed_in(page, server, "admin")
    page.get_by_role("link", name="Keys").click()
    confirmed(page, "Revoke old app…", "Revoke old app")
    expect(said(page)).to_contain_text("Revoked the key “old app”")
    expect(page.get_by_role("cell", name="old app", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Revoke old app")).to_have_count(0)
    assert server.api.call("GET", "/v1/pets", key=doomed)[0] == 401


def test_an_admin_subscribes_a_webhook_whose_secret_is_shown_once(start_server, page):
    server = start_server(["--webhook-allow-private-targets"])
    signed_in(page, server, "admin")
    page.get_by_role("link", name="Webhooks").click()
    page.get_by_label("URL", exact=False).fill("http://127.0.0.1:9/hooks")
    page.get_by_label("order.placed").check()
    page.get_by_label("pet.created").check()
    page.get_by_role("button", name="Subscribe").click()
    secret = page.locator(".secret").inner_text().strip()
    assert len(secret) >= 32
    check_accessibility(page)
    screenshot(page, "webhook-created")
    status, hooks = server.api.call("GET", "/v1/webhooks")
    assert [h["url"] for h in hooks] == ["http://127.0.0.1:9/hooks"]
    assert sorted(hooks[0]["events"]) == ["order.placed", "pet.created"]
    page.get_by_role("link", name=f"Subscription {hooks[0]['id']}").click()
    expect(page.get_by_role("heading", name=f"Subscription {hooks[0]['id']}")).to_be_visible()
    assert secret not in page.content()
    check_accessibility(page)
    page.get_by_role("button", name="Resend").click()
    expect(said(page)).to_contain_text("sent every event from 1 on again")
    confirmed(page, f"Delete subscription {hooks[0]['id']}…", f"Delete subscription {hooks[0]['id']}")
    expect(page.get_by_role("heading", name="Webhooks")).to_be_visible()
    expect(said(page)).to_have_text(f"Deleted subscription {hooks[0]['id']}.")
    assert server.api.call("GET", "/v1/webhooks")[1] == []


def test_a_public_target_is_required_by_default(server, page):
    signed_in(page, server, "admin")
    page.get_by_role("link", name="Webhooks").click()
    page.get_by_label("URL", exact=False).fill("http://127.0.0.1:9/hooks")
    page.get_by_label("order.placed").check()
    page.get_by_role("button", name="Subscribe").click()
    expect(alert(page)).to_contain_text("private or local")
    # What was typed stays, to correct.
    expect(page.get_by_label("URL", exact=False)).to_have_value("http://127.0.0.1:9/hooks")
    expect(page.get_by_label("order.placed")).to_be_checked()
    assert server.api.call("GET", "/v1/webhooks")[1] == []
