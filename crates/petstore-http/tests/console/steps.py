"""Steps the journeys share: signing in, and reading what the API says is true."""

from playwright.sync_api import expect


def sign_in(page, server, key, check=None):
    """Signs in with `key` through the sign-in form, typing as a person does."""
    page.goto(server.url + "/console/")
    expect(page).to_have_url(server.url + "/console/sign-in")
    if check:
        check(page)
    page.get_by_label("API key (staff or admin)").fill(key)
    page.get_by_role("button", name="Sign in").click()


def signed_in(page, server, role="staff"):
    """A page signed in with a new key of `role`, on the pets list (the sign-in lands on
    Today); returns the key."""
    key = server.admin_key if role == "admin" else server.new_key(role, f"console {role}")
    sign_in(page, server, key)
    expect(page.get_by_role("heading", name="Today")).to_be_visible()
    page.get_by_role("link", name="Pets", exact=True).click()
    expect(page.get_by_role("heading", name="Pets")).to_be_visible()
    return key


def made(server, path, body):
    """Creates through the API as the admin; returns the created resource."""
    status, created = server.api.call("POST", path, body)
    assert status == 201, f"POST {path} answered {status}: {created}"
    return created


def catalogue(server, pets=(("Rex", 3),)):
    """A category "Dogs" with `pets` (name, units), through the API: {name: pet}."""
    dogs = made(server, "/v1/categories", {"name": "Dogs"})
    found = {}
    for name, units in pets:
        pet = made(server, "/v1/pets", {"name": name, "categoryId": dogs["id"]})
        if units:
            status, _ = server.api.call("PATCH", f"/v1/inventory/{pet['id']}", {"quantity": units})
            assert status == 200
        found[name] = pet
    return dogs, found


def units(server, pet):
    status, item = server.api.call("GET", f"/v1/inventory/{pet['id']}")
    assert status == 200, item
    return item["quantity"]


def alert(page):
    """The page's refusal message."""
    return page.get_by_role("alert")


def confirmed(page, link, button):
    """Follows the `link` to a change that cannot be undone, and answers its question with
    `button`: the page asks first, and does nothing before."""
    page.get_by_role("link", name=link).click()
    expect(page.get_by_role("heading", name="?", exact=False)).to_be_visible()
    expect(page.get_by_text("This cannot be undone.", exact=False)).to_be_visible()
    page.get_by_role("button", name=button, exact=True).click()


def said(page):
    """The page's message saying what the last change did."""
    return page.locator("main > .message[role=status]")
