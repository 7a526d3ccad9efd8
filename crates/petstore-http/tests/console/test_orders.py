"""Orders placed through the API, completed and cancelled in the console."""

from playwright.sync_api import expect

from conftest import check_accessibility, screenshot
from steps import alert, catalogue, confirmed, made, said, signed_in, units


def order(server, pet, quantity):
    return made(server, "/v1/store/orders", {"petId": pet["id"], "quantity": quantity})


def test_an_order_from_the_api_appears_and_is_completed(server, page):
    _, pets = catalogue(server, (("Rex", 3),))
    placed = order(server, pets["Rex"], 2)
    signed_in(page, server)
    page.get_by_role("link", name="Orders").click()
    expect(page.get_by_role("heading", name="Orders")).to_be_visible()
    row = page.locator(f"#order-{placed['id']}")
    expect(row).to_contain_text("Rex")
    expect(row).to_contain_text("open")
    check_accessibility(page)
    screenshot(page, "orders")
    row.get_by_role("button", name=f"Complete order {placed['id']}").click()
    expect(row.get_by_role("status")).to_contain_text(f"Completed order {placed['id']}.")
    expect(row).to_contain_text("complete")
    status, now = server.api.call("GET", f"/v1/store/orders/{placed['id']}")
    assert now["complete"] is True


def test_a_cancelled_order_puts_its_units_back(server, page):
    _, pets = catalogue(server, (("Rex", 3),))
    placed = order(server, pets["Rex"], 2)
    assert units(server, pets["Rex"]) == 1
    signed_in(page, server)
    page.get_by_role("link", name="Orders").click()
    # Not beside Complete as a button: a link to the question.
    expect(page.get_by_role("button", name=f"Cancel order {placed['id']}")).to_have_count(0)
    confirmed(page, f"Cancel order {placed['id']}…", f"Cancel order {placed['id']}")
    expect(said(page)).to_contain_text("its units are back in stock")
    assert server.api.call("GET", f"/v1/store/orders/{placed['id']}")[0] == 404
    assert units(server, pets["Rex"]) == 3
    page.get_by_role("link", name="Stock").click()
    expect(page.get_by_label("Units of Rex")).to_have_value("3")


def test_orders_are_filtered_by_status(server, page):
    _, pets = catalogue(server, (("Rex", 5),))
    first, second = order(server, pets["Rex"], 1), order(server, pets["Rex"], 1)
    assert server.api.call("PATCH", f"/v1/store/orders/{first['id']}", {"complete": True})[0] == 200
    signed_in(page, server)
    page.goto(server.url + "/console/orders?status=open")
    expect(page.locator(f"#order-{second['id']}")).to_be_visible()
    expect(page.locator(f"#order-{first['id']}")).to_have_count(0)
    page.get_by_label("Status").select_option("complete")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator(f"#order-{first['id']}")).to_be_visible()
    expect(page.locator(f"#order-{second['id']}")).to_have_count(0)


def test_a_completed_order_cannot_be_cancelled_behind_the_page_s_back(server, page):
    _, pets = catalogue(server, (("Rex", 3),))
    placed = order(server, pets["Rex"], 1)
    signed_in(page, server)
    page.get_by_role("link", name="Orders").click()
    page.get_by_role("link", name=f"Cancel order {placed['id']}…").click()
    cancel = page.get_by_role("button", name=f"Cancel order {placed['id']}")
    expect(cancel).to_be_visible()
    assert server.api.call("PATCH", f"/v1/store/orders/{placed['id']}", {"complete": True})[0] == 200
    cancel.click()
    expect(alert(page)).to_be_visible()
    assert server.api.call("GET", f"/v1/store/orders/{placed['id']}")[1]["complete"] is True


def test_the_events_page_shows_the_changes(server, page):
    _, pets = catalogue(server, (("Rex", 3),))
    order(server, pets["Rex"], 1)
    signed_in(page, server)
    page.get_by_role("link", name="Events").click()
    table = page.get_by_role("table", name="Events")
    for said in ("added the category", "added the pet Rex", "placed order", "for 1 × Rex"):
        expect(table).to_contain_text(said)
    check_accessibility(page)
    screenshot(page, "events")
    # What was done to Rex alone: its pet, stock and order events, not the category's.
    page.get_by_label("Pet id").fill(str(pets["Rex"]["id"]))
    page.get_by_role("button", name="Filter").click()
    expect(table).to_contain_text("placed order")
    expect(table).not_to_contain_text("added the category")
    check_accessibility(page)


def test_an_order_s_page_shows_its_lines_and_history_and_sets_its_ship_date(server, page):
    _, pets = catalogue(server, (("Rex", 5), ("Fido", 5)))
    rex, fido = pets["Rex"], pets["Fido"]
    for pet, amount in ((rex, 1999), (fido, 500)):
        assert server.api.call("PUT", f"/v1/pets/{pet['id']}/price", {"amount": amount})[0] == 200
    placed = made(server, "/v1/store/checkout", {
        "lines": [{"petId": fido["id"], "quantity": 2}, {"petId": rex["id"], "quantity": 3}]})
    signed_in(page, server)
    page.get_by_role("link", name="Orders").click()
    page.get_by_role("link", name=str(placed["id"]), exact=True).click()
    expect(page.get_by_role("heading", name=f"Order {placed['id']}")).to_be_visible()
    lines = page.get_by_role("table", name="Lines")
    expect(lines.locator("tbody tr").first).to_contain_text("Fido")
    expect(lines.locator("tbody tr").first).to_contain_text("5.00 EUR")
    expect(lines.locator("tbody tr").last).to_contain_text("59.97 EUR")
    expect(page.get_by_text("Total: 69.97 EUR for 5 units.")).to_be_visible()
    history = page.get_by_role("table", name="History")
    expect(history).to_contain_text(f"placed order {placed['id']} for 2 × Fido, 3 × Rex")
    check_accessibility(page)
    screenshot(page, "order")

    page.get_by_label("Ships on").fill("2026-12-24")
    page.get_by_role("button", name="Set the ship date").click()
    expect(said(page)).to_have_text(f"Order {placed['id']} ships on 2026-12-24.")
    status, now = server.api.call("GET", f"/v1/store/orders/{placed['id']}")
    assert now["shipDate"].startswith("2026-12-24"), now
    expect(page.get_by_role("table", name="History")).to_contain_text("ship")
    # Completed from its page, which says so there.
    page.get_by_role("button", name=f"Complete order {placed['id']}").click()
    expect(said(page)).to_have_text(f"Completed order {placed['id']}.")
    expect(page.get_by_text("Complete.", exact=True)).to_be_visible()
    assert server.api.call("GET", f"/v1/store/orders/{placed['id']}")[1]["complete"] is True


def test_orders_list_newest_first_paged_both_ways_and_searched_by_pet(server, page):
    _, pets = catalogue(server, (("Rex", 200), ("Rexford", 200), ("Fido", 200)))
    names = ("Rex", "Rexford", "Fido")
    placed = [(order(server, pets[names[n % 3]], 1)["id"], names[n % 3]) for n in range(105)]
    newest = [id for id, _ in reversed(placed)]
    signed_in(page, server)
    page.get_by_role("link", name="Orders").click()
    expect(page.get_by_role("heading", name="Orders")).to_be_visible()
    rows = page.locator("table tbody tr")
    expect(rows.first).to_have_id(f"order-{newest[0]}")
    pages = page.get_by_role("navigation", name="Pages")
    expect(pages).to_contain_text("1–100 of 105")
    expect(pages.get_by_role("link", name="Previous page")).to_have_count(0)
    check_accessibility(page)
    pages.get_by_role("link", name="Next page").click()
    expect(pages).to_contain_text("101–105 of 105")
    expect(rows).to_have_count(5)
    expect(rows.first).to_have_id(f"order-{newest[100]}")
    pages.get_by_role("link", name="Previous page").click()
    expect(pages).to_contain_text("1–100 of 105")
    expect(rows.first).to_have_id(f"order-{newest[0]}")
    # The order column sorts: oldest first, and back.
    page.get_by_role("columnheader", name="Order").get_by_role("link").click()
    expect(rows.first).to_have_id(f"order-{placed[0][0]}")
    expect(page.get_by_label("Order", exact=True)).to_have_value("oldest")
    page.get_by_role("columnheader", name="Order").get_by_role("link").click()
    expect(rows.first).to_have_id(f"order-{newest[0]}")

    fidos = [id for id, name in reversed(placed) if name == "Fido"]
    page.get_by_label("Pet (name or id)").fill("fido")
    page.get_by_role("button", name="Filter").click()
    expect(pages).to_contain_text(f"1–{len(fidos)} of {len(fidos)}")
    expect(rows.first).to_have_id(f"order-{fidos[0]}")
    expect(rows).to_have_count(len(fidos))
    # A name more than one pet has: staff choose whose orders.
    page.get_by_label("Pet (name or id)").fill("Rex")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_text("More than one pet")).to_be_visible()
    check_accessibility(page)
    page.get_by_role("link", name=f"Rex (pet {pets['Rex']['id']})").click()
    rexes = [id for id, name in reversed(placed) if name == "Rex"]
    expect(pages).to_contain_text(f"1–{len(rexes)} of {len(rexes)}")
    expect(rows.first).to_have_id(f"order-{rexes[0]}")
    expect(page.get_by_label("Pet (name or id)")).to_have_value(str(pets["Rex"]["id"]))


def test_an_order_at_the_counter_shows_its_total_then_is_placed_at_it(server, page):
    _, pets = catalogue(server, (("Rex", 5), ("Fido", 2)))
    for name, amount in (("Rex", 1000), ("Fido", 250)):
        status, _ = server.api.call("PUT", f"/v1/pets/{pets[name]['id']}/price", {"amount": amount})
        assert status == 200
    signed_in(page, server)
    page.get_by_role("link", name="Orders").click()
    page.get_by_role("link", name="Place an order at the counter").click()
    expect(page.get_by_role("heading", name="An order at the counter")).to_be_visible()
    page.get_by_label("Pet of line 1").fill("Nobody")
    page.get_by_label("Units of line 1").fill("1")
    page.get_by_role("button", name="Show the total").click()
    expect(alert(page)).to_contain_text("No pet's name contains")
    page.reload()
    expect(page.get_by_role("heading", name="An order at the counter")).to_be_visible()
    page.get_by_label("Pet of line 1").fill("rex")
    page.get_by_label("Units of line 1").fill("2")
    page.get_by_label("Pet of line 2").fill(str(pets["Fido"]["id"]))
    page.get_by_label("Units of line 2").fill("1")
    page.get_by_role("button", name="Show the total").click()
    place = page.get_by_role("button", name="Place the order for 22.50 EUR")
    expect(place).to_be_visible()
    check_accessibility(page)
    screenshot(page, "counter")
    assert server.api.call("GET", "/v1/store/orders")[1] == []
    place.click()
    expect(said(page)).to_contain_text("for 22.50 EUR.")
    status, orders = server.api.call("GET", "/v1/store/orders")
    assert [len(order["lines"]) for order in orders] == [2]
    assert orders[0]["totalAmount"] == 2250
    assert (units(server, pets["Rex"]), units(server, pets["Fido"])) == (3, 1)
