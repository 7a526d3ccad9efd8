"""A delivery entered on one page: every row with units received at once, or none."""

from playwright.sync_api import expect

from conftest import check_accessibility, screenshot
from steps import alert, catalogue, said, signed_in, units


def test_a_delivery_is_received_at_once_and_a_stale_row_refuses_it_whole(server, page):
    _, pets = catalogue(server, (("Rex", 1), ("Fido", 0), ("Polly", 4)))
    signed_in(page, server)
    page.get_by_role("link", name="Stock").click()
    expect(page.get_by_role("heading", name="Stock")).to_be_visible()
    page.get_by_role("link", name="Enter a delivery").click()
    expect(page.get_by_role("heading", name="A delivery")).to_be_visible()
    check_accessibility(page)
    page.get_by_label("Units received of Fido").fill("3")
    page.get_by_label("Units received of Polly").fill("5")
    # Someone sets Fido's stock meanwhile: the whole delivery is refused, Fido's row named.
    status, _ = server.api.call("PATCH", f"/v1/inventory/{pets['Fido']['id']}", {"quantity": 2})
    assert status == 200
    page.get_by_label("Reason (kept with each pet's movement)").fill("Delivery 7")
    page.get_by_role("button", name="Receive the delivery").click()
    row = page.locator(f"#delivery-{pets['Fido']['id']}")
    expect(row.get_by_role("alert")).to_contain_text("Someone else changed Fido")
    expect(page.get_by_label("Units received of Polly")).to_have_value("5")
    expect(row).to_contain_text("2 units")
    assert (units(server, pets["Fido"]), units(server, pets["Polly"])) == (2, 4)
    check_accessibility(page)
    screenshot(page, "delivery-refused")
    # The row now carries Fido's new version: saved again, both rows are received.
    page.get_by_role("button", name="Receive the delivery").click()
    expect(said(page)).to_contain_text("Received 8 units for 2 pets: Delivery 7.")
    expect(page.get_by_label("Units of Fido")).to_have_value("5")
    assert (units(server, pets["Rex"]), units(server, pets["Polly"])) == (1, 9)


def test_a_delivery_with_no_units_is_refused_and_survives_a_reload(server, page):
    catalogue(server, (("Rex", 1),))
    signed_in(page, server)
    page.goto(server.url + "/console/stock/delivery")
    page.get_by_role("button", name="Receive the delivery").click()
    expect(alert(page)).to_contain_text("at least one pet")
    page.reload()
    expect(page.get_by_role("heading", name="A delivery")).to_be_visible()
