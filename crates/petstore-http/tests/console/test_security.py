"""Cross-site requests, and what every console answer carries."""

import http.server
import threading

from playwright.sync_api import expect

from steps import signed_in


def test_a_request_from_another_origin_without_the_form_token_changes_nothing(server, page):
    signed_in(page, server)
    # A page of another origin (another port is another origin) that posts to the console
    # as soon as it loads, as a malicious site would.
    attack = (f'<form id="f" method="post" action="{server.url}/console/categories">'
              '<input name="name" value="Hacked"></form>'
              '<script>document.getElementById("f").submit()</script>').encode()

    class Attacker(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(attack)

        def log_message(self, *args):
            pass

    evil = http.server.HTTPServer(("127.0.0.1", 0), Attacker)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    try:
        other = page.context.new_page()
        with other.expect_navigation(url=f"{server.url}/console/**"):
            other.goto(f"http://127.0.0.1:{evil.server_address[1]}/")
        # The browser says the form came from another site: refused before anything else
        # (its SameSite=Strict cookie was not sent either).
        expect(other.get_by_role("alert")).to_contain_text("forbidden")
    finally:
        evil.shutdown()
    # With the session's cookie but another origin and no form token (a client that is not
    # a browser page): refused too.
    answer = page.context.request.post(
        server.url + "/console/categories",
        headers={"Origin": "http://evil.example"},
        form={"name": "Hacked"})
    assert answer.status == 403
    answer = page.context.request.post(server.url + "/console/categories", form={"name": "Hacked"})
    assert answer.status == 403, "the form token is required from this origin too"
    assert server.api.call("GET", "/v1/categories")[1] == []


def test_every_console_answer_forbids_inline_script_framing_and_caching(server, page):
    signed_in(page, server, "admin")
    for path in ("/console/", "/console/categories", "/console/stock", "/console/orders",
                 "/console/events", "/console/keys", "/console/webhooks", "/console/sign-in"):
        answer = page.goto(server.url + path)
        headers = answer.headers
        policy = headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy, policy
        assert "frame-ancestors 'none'" in policy
        assert headers["cache-control"] == "no-store", path
    # The assets, named by their content's hash, are kept for a year.
    script = page.locator("script[src]").get_attribute("src")
    answer = page.context.request.get(server.url + script)
    assert answer.ok and "immutable" in answer.headers["cache-control"]
