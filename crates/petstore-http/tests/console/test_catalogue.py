"""The catalogue and its stock, as staff run them."""

from playwright.sync_api import expect

from conftest import check_accessibility, screenshot
from steps import alert, catalogue, confirmed, made, said, signed_in, units


def test_the_whole_catalogue_and_stock_flow(server, page):
    signed_in(page, server)
    page.get_by_role("link", name="Categories").click()
    expect(page.get_by_role("heading", name="Categories")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("Cats")
    page.get_by_label("Description", exact=True).fill("Small and independent")
    page.get_by_role("button", name="Add the category").click()
    expect(said(page)).to_have_text("Added the category Cats.")
    expect(page.get_by_role("link", name="Delete Cats…")).to_be_visible()
    check_accessibility(page)
    screenshot(page, "categories")

    page.get_by_role("link", name="Pets", exact=True).click()
    # Each page has a "Name" field: fill the next page's only once it is there.
    expect(page.get_by_role("heading", name="Pets")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("Tom")
    # The second "Category" is the new pet's (the first filters the list).
    page.get_by_label("Category", exact=True).last.select_option(label="Cats")
    page.get_by_role("button", name="Add the pet").click()
    expect(said(page)).to_have_text("Added Tom.")
    expect(page.get_by_role("link", name="Tom")).to_be_visible()
    check_accessibility(page)

    page.get_by_role("link", name="Stock").click()
    page.get_by_label("Units of Tom").fill("4")
    page.get_by_role("button", name="Set").click()
    expect(page.get_by_role("status")).to_contain_text("Saved.")
    check_accessibility(page)
    screenshot(page, "stock")
    status, pets = server.api.call("GET", "/v1/pets?name=Tom")
    assert [p["name"] for p in pets] == ["Tom"]
    assert units(server, pets[0]) == 4

    # Edited: renamed, and set pending by hand.
    page.get_by_role("link", name="Pets", exact=True).click()
    page.get_by_role("link", name="Tom").click()
    expect(page.get_by_role("heading", name="Pet Tom")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("Thomas")
    page.get_by_label("Status", exact=True).select_option("pending")
    page.get_by_role("button", name="Save the pet").click()
    expect(page.get_by_role("heading", name="Pet Thomas")).to_be_visible()
    expect(said(page)).to_have_text("Saved Thomas.")
    check_accessibility(page)
    screenshot(page, "pet")
    status, pet = server.api.call("GET", f"/v1/pets?id={pets[0]['id']}")
    assert (pet[0]["name"], pet[0]["status"]) == ("Thomas", "pending")

    # Deleted, with its stock entry, once the question is answered.
    confirmed(page, "Delete Thomas…", "Delete Thomas")
    expect(page.get_by_role("heading", name="Pets")).to_be_visible()
    expect(said(page)).to_have_text("Deleted Thomas.")
    assert server.api.call("GET", f"/v1/pets?id={pets[0]['id']}")[1] == []
    page.get_by_role("link", name="Categories").click()
    confirmed(page, "Delete Cats…", "Delete Cats")
    expect(said(page)).to_have_text("Deleted the category Cats.")
    expect(page.get_by_role("link", name="Delete Cats…")).to_have_count(0)
    assert server.api.call("GET", "/v1/categories")[1] == []


def test_pets_are_filtered_by_status_category_and_name(server, page):
    dogs, pets = catalogue(server, (("Rex", 2), ("Fido", 0), ("Rover", 1)))
    fido = pets["Fido"]
    status, _ = server.api.call(
        "PUT", f"/v1/pets/{fido['id']}", {"name": "Fido", "categoryId": dogs["id"], "status": "sold"})
    assert status == 200
    made(server, "/v1/categories", {"name": "Cats"})
    signed_in(page, server)
    page.get_by_label("Status", exact=True).first.select_option("available")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("link", name="Rex")).to_be_visible()
    expect(page.get_by_role("link", name="Rover")).to_be_visible()
    expect(page.get_by_role("link", name="Fido")).to_have_count(0)
    page.get_by_label("Name contains").fill("rov")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("link", name="Rover")).to_be_visible()
    expect(page.get_by_role("link", name="Rex")).to_have_count(0)
    page.get_by_label("Status", exact=True).first.select_option("")
    page.get_by_label("Name contains").fill("")
    page.get_by_label("Category", exact=True).first.select_option(label="Cats")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_text("No pet matches.")).to_be_visible()
    check_accessibility(page)


def test_a_category_with_pets_is_not_deleted(server, page):
    catalogue(server)
    signed_in(page, server)
    page.get_by_role("link", name="Categories").click()
    confirmed(page, "Delete Dogs…", "Delete Dogs")
    expect(alert(page)).to_contain_text("category_in_use")
    expect(alert(page)).to_contain_text("The category Dogs still has pets")
    check_accessibility(page)
    assert [c["name"] for c in server.api.call("GET", "/v1/categories")[1]] == ["Dogs"]


def test_a_duplicate_category_and_a_blank_name_are_refused_with_the_api_s_error(server, page):
    catalogue(server)
    signed_in(page, server)
    page.get_by_role("link", name="Categories").click()
    expect(page.get_by_role("heading", name="Categories")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("DOGS")
    page.get_by_role("button", name="Add the category").click()
    expect(alert(page)).to_contain_text("category_exists")
    page.get_by_label("Name", exact=True).fill("   ")
    page.get_by_role("button", name="Add the category").click()
    expect(alert(page)).to_contain_text("validation_failed")
    assert len(server.api.call("GET", "/v1/categories")[1]) == 1


def test_a_stale_stock_edit_is_refused_and_keeps_the_other_change(server, page):
    _, pets = catalogue(server, (("Rex", 3),))
    rex = pets["Rex"]
    signed_in(page, server)
    page.get_by_role("link", name="Stock").click()
    expect(page.get_by_label("Units of Rex")).to_have_value("3")
    # Someone else sets the stock after this page was read.
    assert server.api.call("PATCH", f"/v1/inventory/{rex['id']}", {"quantity": 9})[0] == 200
    page.get_by_label("Units of Rex").fill("5")
    page.get_by_role("button", name="Set").click()
    expect(alert(page)).to_contain_text("precondition_failed")
    check_accessibility(page)
    screenshot(page, "stock-stale-edit")
    assert units(server, rex) == 9
    # The row now shows the other change; setting from there goes through.
    expect(page.get_by_label("Units of Rex")).to_have_value("9")
    page.get_by_label("Units of Rex").fill("5")
    page.get_by_role("button", name="Set").click()
    expect(page.get_by_role("status")).to_contain_text("Saved.")
    assert units(server, rex) == 5


def test_a_stale_pet_edit_is_refused(server, page):
    _, pets = catalogue(server, (("Rex", 0),))
    rex = pets["Rex"]
    signed_in(page, server)
    page.get_by_role("link", name="Rex").click()
    # The form must have been read before the other change, or it shows that change.
    expect(page.get_by_role("heading", name="Pet Rex", exact=True)).to_be_visible()
    status, _ = server.api.call(
        "PUT", f"/v1/pets/{rex['id']}",
        {"name": "Rex II", "categoryId": rex["categoryId"], "status": "available"})
    assert status == 200
    page.get_by_label("Name", exact=True).fill("Rexy")
    page.get_by_role("button", name="Save the pet").click()
    expect(alert(page)).to_contain_text("precondition_failed")
    assert server.api.call("GET", f"/v1/pets?id={rex['id']}")[1][0]["name"] == "Rex II"


def test_an_order_beyond_the_stock_is_refused_with_the_api_s_error(server, page):
    _, pets = catalogue(server, (("Rex", 2),))
    rex = pets["Rex"]
    signed_in(page, server)
    page.get_by_role("link", name="Rex").click()
    expect(page.get_by_role("heading", name="Pet Rex")).to_be_visible()
    page.get_by_label("Units", exact=True).fill("3")
    page.get_by_role("button", name="Place the order").click()
    expect(alert(page)).to_contain_text("insufficient_stock")
    check_accessibility(page)
    screenshot(page, "out-of-stock")
    assert server.api.call("GET", "/v1/store/orders")[1] == []
    assert units(server, rex) == 2
    page.get_by_label("Units", exact=True).fill("2")
    page.get_by_role("button", name="Place the order").click()
    expect(page.get_by_role("heading", name="Orders")).to_be_visible()
    assert units(server, rex) == 0


def test_a_pet_s_page_shows_its_units_and_sets_them(server, page):
    _, pets = catalogue(server, (("Rex", 3),))
    rex = pets["Rex"]
    made(server, "/v1/store/orders", {"petId": rex["id"], "quantity": 1})
    made(server, "/v1/store/holds", {"lines": [{"petId": rex["id"], "quantity": 1}]})
    signed_in(page, server)
    page.get_by_role("link", name="Rex").click()
    stock = page.locator("#stock + p")
    expect(stock).to_have_text(
        "1 unit can be ordered; 1 unit held for baskets; 1 unit in open orders.")
    page.get_by_label("Units that can be ordered").fill("0")
    page.get_by_role("button", name="Set the stock").click()
    expect(said(page)).to_have_text("Set the stock of Rex to 0 units.")
    expect(stock).to_contain_text("Out of stock.")
    assert units(server, rex) == 0
    check_accessibility(page)
    # Set by someone else meanwhile: refused, and the field shows their level.
    assert server.api.call("PATCH", f"/v1/inventory/{rex['id']}", {"quantity": 5})[0] == 200
    page.get_by_label("Units that can be ordered").fill("2")
    page.get_by_role("button", name="Set the stock").click()
    expect(alert(page)).to_contain_text("Someone else changed Rex")
    expect(page.get_by_label("Units that can be ordered")).to_have_value("5")
    assert units(server, rex) == 5


def test_the_lists_show_units_and_find_what_runs_low(server, page):
    _, pets = catalogue(server, (("Rex", 0), ("Rover", 2), ("Fido", 9)))
    cats = made(server, "/v1/categories", {"name": "Cats"})
    tom = made(server, "/v1/pets", {"name": "Tom", "categoryId": cats["id"]})
    assert server.api.call("PATCH", f"/v1/inventory/{tom['id']}", {"quantity": 1})[0] == 200
    signed_in(page, server)
    row = lambda name: page.locator("tbody tr", has_text=name)
    expect(row("Rex")).to_contain_text("0 out of stock")
    expect(row("Rover")).to_contain_text("2 low")
    expect(row("Fido").locator(".low, .out")).to_have_count(0)
    check_accessibility(page)

    def shown():
        return sorted(page.locator("tbody tr td[data-label=Name]").all_inner_texts())

    page.get_by_label("Stock level").select_option("out")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("tbody tr")).to_have_count(1)
    assert shown() == ["Rex"]
    page.get_by_label("Stock level").select_option("low")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("tbody tr")).to_have_count(3)
    assert shown() == ["Rex", "Rover", "Tom"]
    page.get_by_label("Low at or below").fill("1")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("tbody tr")).to_have_count(2)
    assert shown() == ["Rex", "Tom"]

    page.get_by_role("link", name="Stock").click()
    # Both lists have this filter: fill the Stock page's once it is there.
    expect(page.get_by_role("heading", name="Stock")).to_be_visible()
    page.get_by_label("Name contains").fill("ro")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("tbody tr")).to_have_count(1)
    expect(page.get_by_label("Units of Rover")).to_have_value("2")
    page.get_by_label("Name contains").fill("")
    page.get_by_label("Category").select_option(label="Cats")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("tbody tr")).to_have_count(1)
    expect(page.get_by_label("Units of Tom")).to_have_value("1")
    check_accessibility(page)


def test_the_pets_and_stock_lists_are_counted_paged_and_turned(server, page):
    dogs = made(server, "/v1/categories", {"name": "Dogs"})
    # Named in another order than they are added: by name is not by when added.
    names = [f"Pet {n * 37 % 104:03}" for n in range(104)]
    pets = [made(server, "/v1/pets", {"name": name, "categoryId": dogs["id"]})["id"]
            for name in names]
    by_name = [pet for _, pet in sorted(zip(names, pets))]
    signed_in(page, server)
    rows = page.locator("table tbody tr")
    pages = page.get_by_role("navigation", name="Pages")
    expect(pages).to_contain_text("1–100 of 104")
    expect(rows.first.locator("td[data-label=Id]")).to_have_text(str(pets[0]))
    pages.get_by_role("link", name="Next page").click()
    expect(pages).to_contain_text("101–104 of 104")
    expect(rows).to_have_count(4)
    pages.get_by_role("link", name="Previous page").click()
    expect(pages).to_contain_text("1–100 of 104")
    # The Id column turns the list: the newest pets first.
    page.get_by_role("columnheader", name="Id").get_by_role("link").click()
    expect(rows.first.locator("td[data-label=Id]")).to_have_text(str(pets[-1]))
    expect(page.get_by_label("Order", exact=True)).to_have_value("newest")
    check_accessibility(page)
    # The Name column sorts by name, A to Z, and its pages follow the names; again, Z to A.
    page.get_by_role("columnheader", name="Name").get_by_role("link").click()
    expect(page.get_by_label("Order", exact=True)).to_have_value("name")
    expect(rows.first.locator("td[data-label=Id]")).to_have_text(str(by_name[0]))
    pages.get_by_role("link", name="Next page").click()
    expect(pages).to_contain_text("101–104 of 104")
    expect(rows.last.locator("td[data-label=Id]")).to_have_text(str(by_name[-1]))
    page.get_by_role("columnheader", name="Name").get_by_role("link").click()
    expect(page.get_by_label("Order", exact=True)).to_have_value("name-desc")
    expect(rows.first.locator("td[data-label=Id]")).to_have_text(str(by_name[-1]))
    check_accessibility(page)

    page.get_by_role("link", name="Stock").click()
    expect(page.get_by_role("heading", name="Stock")).to_be_visible()
    expect(pages).to_contain_text("1–100 of 104")
    page.get_by_label("Order", exact=True).select_option("newest")
    page.get_by_role("button", name="Filter").click()
    expect(rows.first).to_have_id(f"stock-{pets[-1]}")
    pages.get_by_role("link", name="Next page").click()
    expect(pages).to_contain_text("101–104 of 104")
    expect(rows.last).to_have_id(f"stock-{pets[0]}")
    # By name from the form, Z to A, paged by name too.
    page.get_by_label("Order", exact=True).select_option("name-desc")
    page.get_by_role("button", name="Filter").click()
    expect(rows.first).to_have_id(f"stock-{by_name[-1]}")
    expect(page.get_by_role("columnheader", name="Pet")).to_have_attribute(
        "aria-sort", "descending")
    pages.get_by_role("link", name="Next page").click()
    expect(pages).to_contain_text("101–104 of 104")
    expect(rows.last).to_have_id(f"stock-{by_name[0]}")
    check_accessibility(page)
