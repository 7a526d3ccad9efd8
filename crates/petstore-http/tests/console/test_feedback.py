"""The console says what happened: it asks before what cannot be undone, says when a change
went through, shows a refused form again with what was typed and its error beside it, keeps
addresses that survive a reload, and fits a phone and a keyboard."""

from playwright.sync_api import expect

from conftest import check_accessibility, screenshot
from steps import alert, catalogue, confirmed, made, said, sign_in, signed_in, units

PHONE = {"width": 390, "height": 844}


def reloads_as_a_page(page, heading):
    """Reloads, as F5 does: the same page comes back as HTML (never the API's JSON)."""
    answer = page.reload()
    assert answer.headers["content-type"].startswith("text/html"), answer.headers
    expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible()


def test_without_script_a_removal_asks_first_and_every_change_says_so(server, new_page):
    page = new_page(java_script_enabled=False)
    _, pets = catalogue(server, (("Rex", 3), ("Fido", 1)))
    rex = pets["Rex"]
    signed_in(page, server)
    page.get_by_role("link", name="Stock").click()
    page.get_by_label("Units of Rex").fill("4")
    page.get_by_role("button", name="Set").first.click()
    expect(said(page)).to_have_text("Set the stock of Rex to 4 units.")
    assert units(server, rex) == 4

    page.get_by_role("link", name="Pets", exact=True).click()
    page.get_by_role("link", name="Rex").click()
    expect(page.get_by_role("heading", name="Pet Rex")).to_be_visible()
    page.get_by_label("Units", exact=True).fill("2")
    page.get_by_role("button", name="Place the order").click()
    expect(said(page)).to_contain_text("for 2 units.")
    order = server.api.call("GET", "/v1/store/orders")[1][0]
    page.get_by_role("button", name=f"Complete order {order['id']}").click()
    expect(said(page)).to_have_text(f"Completed order {order['id']}.")

    # Asked, and kept: nothing happens before the answer.
    page.get_by_role("link", name="Pets", exact=True).click()
    page.get_by_role("link", name="Fido").click()
    page.get_by_role("link", name="Delete Fido…").click()
    expect(page.get_by_role("heading", name="Delete Fido?")).to_be_visible()
    # (axe runs on the question with script, in the phone's journey: without script,
    # Playwright cannot run it.)
    screenshot(page, "asked-first")
    page.get_by_role("link", name="No, keep it").click()
    expect(page.get_by_role("heading", name="Pet Fido")).to_be_visible()
    assert server.api.call("GET", f"/v1/pets?id={pets['Fido']['id']}")[1] != []
    confirmed(page, "Delete Fido…", "Delete Fido")
    expect(said(page)).to_have_text("Deleted Fido.")
    assert server.api.call("GET", f"/v1/pets?id={pets['Fido']['id']}")[1] == []
    # Said once: the next page says nothing of it.
    page.get_by_role("link", name="Stock").click()
    expect(page.get_by_role("heading", name="Stock")).to_be_visible()
    expect(said(page)).to_have_count(0)


def test_a_refused_form_keeps_what_was_typed_beside_its_error_and_survives_a_reload(
        start_server, page):
    server = start_server()
    dogs, pets = catalogue(server, (("Rex", 2),))
    rex = pets["Rex"]
    made(server, "/v1/categories", {"name": "Cats"})
    signed_in(page, server, "admin")

    # A new pet with a blank name: the status chosen stays, the error is beside the name.
    page.get_by_label("Name", exact=True).fill("   ")
    page.get_by_label("Status", exact=True).last.select_option("pending")
    page.get_by_role("button", name="Add the pet").click()
    name = page.get_by_label("Name", exact=True)
    expect(name).to_have_attribute("aria-invalid", "true")
    expect(name).to_be_focused()
    expect(page.locator("#pet-name-error")).to_contain_text("validation_failed")
    expect(page.get_by_label("Status", exact=True).last).to_have_value("pending")
    check_accessibility(page)
    reloads_as_a_page(page, "Pets")

    # A category named as another: both fields as typed.
    page.get_by_role("link", name="Categories").click()
    expect(page.get_by_role("heading", name="Categories")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("DOGS")
    page.get_by_label("Description", exact=True).fill("Loud")
    page.get_by_role("button", name="Add the category").click()
    expect(page.locator("#category-name-error")).to_contain_text("category_exists")
    expect(page.get_by_label("Name", exact=True)).to_have_value("DOGS")
    expect(page.get_by_label("Description", exact=True)).to_have_value("Loud")
    screenshot(page, "refused-form")
    reloads_as_a_page(page, "Categories")
    # Renamed in its row to another's name: the row keeps the name typed.
    page.get_by_label("Name of Cats").fill("Dogs")
    page.get_by_role("button", name="Save").last.click()
    expect(alert(page)).to_contain_text("category_exists")
    expect(page.get_by_label("Name of Cats")).to_have_value("Dogs")
    reloads_as_a_page(page, "Categories")
    expect(page.get_by_label("Name of Cats")).to_have_value("Cats")

    # Deleted while it has pets: asked, refused on the question's page, in the shop's words.
    confirmed(page, "Delete Dogs…", "Delete Dogs")
    expect(alert(page)).to_contain_text("The category Dogs still has pets")
    reloads_as_a_page(page, "Delete the category Dogs?")

    # More units than the stock: the quantity stays, the words name the pet.
    page.goto(f"{server.url}/console/pets/{rex['id']}")
    page.get_by_label("Units", exact=True).fill("5")
    page.get_by_role("button", name="Place the order").click()
    expect(alert(page)).to_contain_text("not enough units of Rex")
    expect(page.get_by_label("Units", exact=True)).to_have_value("5")
    reloads_as_a_page(page, "Pet Rex")

    # A stale edit: the form shows the pet as it is now, not what would undo the change.
    status, _ = server.api.call(
        "PUT", f"/v1/pets/{rex['id']}",
        {"name": "Rex II", "categoryId": dogs["id"], "status": "available"})
    assert status == 200
    page.get_by_label("Name", exact=True).fill("Rexy")
    page.get_by_role("button", name="Save the pet").click()
    expect(alert(page)).to_contain_text("Someone else changed Rex")
    expect(page.get_by_label("Name", exact=True)).to_have_value("Rex II")
    reloads_as_a_page(page, "Pet Rex II")

    # A key with a blank name: the role chosen stays.
    page.get_by_role("link", name="Keys").click()
    page.get_by_label("What it is for").fill("  ")
    page.get_by_label("Role").select_option("staff")
    page.get_by_role("button", name="Create the key").click()
    expect(page.locator("#key-name-error")).to_contain_text("validation_failed")
    expect(page.get_by_label("Role")).to_have_value("staff")
    reloads_as_a_page(page, "API keys")

    # A private webhook address: what was typed stays, beside the reason.
    page.get_by_role("link", name="Webhooks").click()
    page.get_by_label("URL", exact=False).fill("http://10.0.0.7/hooks")
    page.get_by_label("pet.created").check()
    page.get_by_role("button", name="Subscribe").click()
    expect(page.locator("#webhook-url-error")).to_contain_text("forbidden_target")
    expect(page.get_by_label("pet.created")).to_be_checked()
    reloads_as_a_page(page, "Webhooks")


def test_unknown_addresses_and_refused_pages_are_pages(server, page):
    signed_in(page, server)
    answer = page.goto(server.url + "/console/nowhere")
    assert answer.status == 404
    assert answer.headers["content-type"].startswith("text/html")
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    check_accessibility(page)
    page.get_by_role("link", name="Back to the console").click()
    expect(page.get_by_role("heading", name="Today")).to_be_visible()
    answer = page.goto(server.url + "/console/keys")
    assert answer.status == 403
    expect(page.get_by_role("heading", name="Not allowed")).to_be_visible()
    expect(alert(page)).to_contain_text("Ask an admin")
    # A form's action typed as an address: the page the form is on.
    _, pets = catalogue(server, (("Rex", 1),))
    page.goto(f"{server.url}/console/pets/{pets['Rex']['id']}/order")
    expect(page.get_by_role("heading", name="Pet Rex")).to_be_visible()


def test_every_kind_of_page_fits_a_phone(start_server, new_page):
    server = start_server(["--webhook-allow-private-targets"])
    _, pets = catalogue(server, (("Rex", 5), ("A pet with a long name for a small screen", 2)))
    rex = pets["Rex"]
    order = made(server, "/v1/store/orders", {"petId": rex["id"], "quantity": 1})
    hook = made(server, "/v1/webhooks", {"url": "http://127.0.0.1:9/a/long/path/to/a/receiver",
                                         "events": ["order.placed"]})
    page = new_page(viewport=PHONE)
    pages = [
        "/console/sign-in",
        "/console/", "/console/pets", f"/console/pets/{rex['id']}",
        f"/console/pets/{rex['id']}/delete", f"/console/orders/{order['id']}",
        "/console/categories", "/console/stock", "/console/stock/delivery", "/console/orders",
        "/console/orders/new",
        f"/console/orders/{order['id']}/cancel", "/console/events", "/console/keys",
        "/console/webhooks", f"/console/webhooks/{hook['id']}", "/console/nowhere",
    ]
    for path in pages:
        if path == "/console/":
            sign_in(page, server, server.admin_key)
            expect(page.get_by_role("heading", name="Today")).to_be_visible()
        else:
            page.goto(server.url + path)
        expect(page.locator("h1")).to_be_visible()
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= PHONE["width"], f"{path} is {wide} px wide on a {PHONE['width']} px screen"
        check_accessibility(page)
        if path == "/console/orders":
            screenshot(page, "orders-phone")
            complete = page.get_by_role("button", name=f"Complete order {order['id']}")
            box = complete.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box


def test_completing_an_order_by_keyboard_keeps_focus_on_its_row(server, page):
    _, pets = catalogue(server, (("Rex", 3),))
    placed = made(server, "/v1/store/orders", {"petId": pets["Rex"]["id"], "quantity": 1})
    signed_in(page, server)
    # A whole load, not a boosted link: htmx has bound the row's form by the time goto
    # returns, where a key pressed right after a swap may beat it.
    page.goto(server.url + "/console/orders")
    row = page.locator(f"#order-{placed['id']}")
    row.get_by_role("button", name=f"Complete order {placed['id']}").focus()
    page.keyboard.press("Enter")
    expect(row.get_by_role("status")).to_be_focused()
    expect(row.get_by_role("status")).to_have_text(f"Completed order {placed['id']}.")


def test_the_console_has_an_icon(server, page):
    signed_in(page, server)
    href = page.locator("link[rel=icon]").get_attribute("href")
    answer = page.request.get(server.url + href)
    assert answer.status == 200
    assert answer.headers["content-type"] == "image/svg+xml"
