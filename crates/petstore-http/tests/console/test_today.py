"""Today, the home page: what waits, what the day brought, what runs out, who did what."""

from playwright.sync_api import expect

from conftest import check_accessibility, screenshot
from steps import catalogue, made, sign_in


def test_today_sums_up_the_day_and_leads_to_its_lists(server, page):
    _, pets = catalogue(server, (("Rex", 0), ("Fido", 10)))
    fido = pets["Fido"]
    assert server.api.call("PUT", f"/v1/pets/{fido['id']}/price", {"amount": 500})[0] == 200
    kept = made(server, "/v1/store/orders", {"petId": fido["id"], "quantity": 2})
    gone = made(server, "/v1/store/orders", {"petId": fido["id"], "quantity": 1})
    assert server.api.call("DELETE", f"/v1/store/orders/{gone['id']}")[0] == 204
    # The default life (10 minutes) ends within Today's 15; one of 30 minutes does not.
    ending = made(server, "/v1/store/holds", {"lines": [{"petId": fido["id"], "quantity": 1}]})
    made(server, "/v1/store/holds",
         {"lines": [{"petId": fido["id"], "quantity": 2}], "ttlSeconds": 1800})
    sign_in(page, server, server.new_key("staff", "Sam"))
    expect(page.get_by_role("heading", name="Today")).to_be_visible()
    expect(page.get_by_role("link", name="1 Open orders")).to_be_visible()
    # The cancelled order is not among the day's: one order, worth 2 × 5.00.
    expect(page.get_by_role("link", name="1 worth 10.00 EUR Placed today")).to_be_visible()
    expect(page.get_by_role("link", name=f"Order {kept['id']}")).to_be_visible()
    expect(page.get_by_role("listitem").filter(has_text="Rex")).to_contain_text("0 out of stock")
    expect(page.get_by_text("2 active, 3 units set aside.")).to_be_visible()
    ends_at = ending["expiresAt"][11:19]
    expiring = page.get_by_role("heading", name="Ending in the next 15 minutes")
    expect(expiring).to_be_visible()
    listed = page.get_by_role("list").filter(has_text="back on sale").get_by_role("listitem")
    expect(listed).to_have_count(1)
    expect(listed).to_have_text(f"Hold {ending['id']} ends at {ends_at} UTC: 1 unit of Fido back on sale")
    expect(page.get_by_role("table", name="Last changes")).to_contain_text(
        f"placed order {kept['id']} for 2 × Fido")
    check_accessibility(page)
    screenshot(page, "today")
    # The level is the staff's to set, here as in the lists, and the tile's list keeps it:
    # at 5, Fido (5 left to order) runs low too.
    running_out = page.get_by_role("list").filter(has_text="out of stock")
    expect(running_out.get_by_role("listitem")).to_have_count(1)
    page.get_by_label("Low at or below").fill("5")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(server.url + "/console/?low_at=5")
    expect(page.get_by_role("link", name="2 Running low")).to_be_visible()
    expect(running_out.get_by_role("listitem")).to_have_count(2)
    page.get_by_role("link", name="Running low").click()
    expect(page.get_by_role("heading", name="Pets")).to_be_visible()
    expect(page.get_by_label("Stock level")).to_have_value("low")
    expect(page.get_by_label("Low at or below")).to_have_value("5")
    expect(page.get_by_role("link", name="Rex")).to_be_visible()
    expect(page.get_by_role("link", name="Fido")).to_be_visible()
    page.get_by_label("Low at or below").fill("3")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("link", name="Rex")).to_be_visible()
    expect(page.get_by_role("link", name="Fido")).to_have_count(0)
