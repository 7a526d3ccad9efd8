"""The checker: reads a saved history and the final state, prints every anomaly and the
report, and exits 1 if there is any anomaly (0 otherwise, 2 if it could not check).

    python3 bench/chaos/checker.py RUN_DIR [--deadline 10]

RUN_DIR holds history.jsonl and final.json, as bench/chaos/run.py leaves them; the report
is written to RUN_DIR/report.json. Each shop (PostgreSQL, SQLite) is checked alone: its
own lines of the history against its own final state.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checks_actors  # noqa: E402
import checks_checkout  # noqa: E402
import checks_events  # noqa: E402
import checks_feed  # noqa: E402
import checks_holds  # noqa: E402
import checks_ledger  # noqa: E402
import checks_prices  # noqa: E402
import checks_reads  # noqa: E402
import checks_standbys  # noqa: E402
import checks_writes  # noqa: E402
import history as history_file  # noqa: E402
import report as reporting  # noqa: E402
from model import Anomalies, History, attempt_class  # noqa: E402


# Refusals no request of the soak should ever get: its requests are well formed and its
# keys valid, so one of these is a lost key, a lost route, or a bug of the tool itself.
UNEXPECTED = {400, 401, 403, 405, 413, 415, 422}


def check_calls(history, deadline, anomalies, ledger_begun=True):
    """No 500, every request answered within the deadline, no key reused with another body
    (the clients always resend the same body), no refusal a valid request cannot get (but
    the `pet_repeated` a basket naming a pet twice asks for), no `upgrade_unfinished` once
    the ledger has begun."""
    for call in history.all_calls:
        took = call["answered"] - call["sent"]
        where = f"{call['method']} {call['path']} on node{call['node']} (op {call['op']})"
        if call.get("status") == 500:
            anomalies.add("no-500", f"500 to {where}", call=call)
        if took > deadline or call.get("error") == "timeout":
            anomalies.add("deadline", f"{where} took {took:.1f} s "
                          f"({call.get('status') or call.get('error')})", call=call)
        if call.get("status") in UNEXPECTED and call.get("code") != "idempotency_key_reused" \
                and not checks_checkout.expected_refusal(history, call):
            anomalies.add("unexpected-refusal", f"{call['status']} {call.get('code')} to "
                          f"{where}: {call.get('resp')}", call=call)
        if call.get("code") == "upgrade_unfinished" and ledger_begun:
            anomalies.add("unexpected-refusal", f"503 upgrade_unfinished to {where}, on a "
                          "database whose stock ledger had begun", call=call)
        if call.get("code") == "idempotency_key_reused":
            anomalies.add("one-effect-per-key", f"422 idempotency_key_reused to a retry with "
                          f"the same body: {where}", call=call)


WRITES = ("place_order", "checkout", "cancel_order", "complete_order", "set_stock", "adjust",
          "set_price", "create_pet", "create_category", "place_hold", "release_hold",
          "hold_checkout")


def check_liveness(history, anomalies):
    """Reads alone do not show a node serves: after a failover reads work well before
    writes do. Every write op must end with a definite answer within its retry budget, and
    every node must take a write after the last fault ended."""
    for kind in WRITES:
        for op in history.ops_of(kind):
            calls = history.calls.get(op["op"], [])
            if calls and attempt_class(calls[-1]) not in ("ok", "refused"):
                anomalies.add("write-gave-up", f"{kind} op {op['op']} got no definite answer "
                              f"in {len(calls)} attempts over "
                              f"{calls[-1]['answered'] - calls[0]['sent']:.0f} s",
                              op=op["op"], last=calls[-1])
    calm = max((fault["end"] for fault in history.faults), default=0)
    nodes = {call["node"] for call in history.all_calls}
    for node in sorted(nodes):
        if not any(call["node"] == node and call["method"] != "GET" and call["sent"] >= calm
                   and attempt_class(call) == "ok" for call in history.all_calls):
            anomalies.add("write-gave-up", f"node{node} took no write after the last fault "
                          "ended")


def check(records, final, deadline, settings=None):
    """The report (a dict) of a history and a final state."""
    history = History(records)
    state = checks_writes.Final(final)
    anomalies = Anomalies()
    run_id = history.meta.get("run_id", "")
    check_calls(history, deadline, anomalies, state.ledger_begun)
    check_liveness(history, anomalies)
    checks_writes.check_orders(history, state, anomalies)
    checks_writes.check_creates(history, state, anomalies, run_id)
    checks_feed.check_feed_order(state, anomalies)
    checks_feed.check_readers(history, state, anomalies)
    checks_feed.check_stock(history, state, anomalies)
    checks_feed.check_statuses(state, anomalies)
    checks_ledger.check_ledger(state, anomalies)
    checks_ledger.check_adjustments(history, state, anomalies)
    checks_checkout.check_checkouts(history, state, anomalies)
    checks_checkout.check_totals(state, anomalies)
    checks_checkout.check_order_movements(state, anomalies)
    checks_prices.check_line_prices(history, state, anomalies)
    checks_prices.check_price_changes(history, state, anomalies)
    checks_prices.check_currency(state, anomalies)
    holds = checks_holds.check_holds(history, state, anomalies)
    actors = checks_actors.check_actors(history, state, anomalies)
    catch_up = checks_events.check_webhooks(history, state, anomalies)
    checks_events.check_sse(history, state, anomalies)
    reads = checks_reads.check_reads(history, state, anomalies)
    reads["by_server"] = checks_standbys.check_standby_reads(history, anomalies)
    for node in final.get("not_ready", []):
        anomalies.add("never-healed", f"node{node} was not ready a minute after the faults "
                      "ended")
    integrity = final.get("check")
    if integrity is not None and integrity.get("rc") != 0:
        anomalies.add("petstore-check", f"`petstore check` exited {integrity.get('rc')}: "
                      f"{integrity.get('output', '').strip()[:2000]}")
    healed = reporting.healing_times(history, anomalies)
    merged = {**history.meta.get("settings", {}), **(settings or {}), "deadline": deadline}
    if history.meta.get("sqlite_skipped"):
        merged["sqlite_skipped"] = history.meta["sqlite_skipped"]
    return reporting.build(history, anomalies, healed, merged, catch_up, reads, actors, holds)


def split_by_shop(records, final):
    """{shop: (its records, its final state)}; a run saved before there were shops is one
    shop, "pg"."""
    finals = final.get("shops") if "shops" in final else {"pg": final}
    split = {shop: [] for shop in finals}
    for record in records:
        if record.get("t") == "meta":
            for lines in split.values():
                lines.append(record)
        else:
            split.setdefault(record.get("shop", "pg"), []).append(record)
    return {shop: (lines, finals.get(shop)) for shop, lines in split.items()}


def check_all(records, final, deadline):
    """Every shop's report, and their anomalies together (each names its shop)."""
    reports = {}
    for shop, (lines, shop_final) in split_by_shop(records, final).items():
        if shop_final is None:
            reports[shop] = check(lines, {}, deadline)
            reports[shop]["anomalies"].insert(0, {
                "check": "final-state", "message": "no final state was read", "evidence": {}})
            reports[shop]["anomaly_count"] += 1
        else:
            reports[shop] = check(lines, shop_final, deadline)
        for anomaly in reports[shop]["anomalies"]:
            anomaly["shop"] = shop
    anomalies = [a for report in reports.values() for a in report["anomalies"]]
    first = next(iter(reports.values()))
    return {"settings": first["settings"], "shops": reports, "anomalies": anomalies,
            "anomaly_count": len(anomalies),
            "requests": {"total": sum(r["requests"]["total"] for r in reports.values())}}


def check_run_dir(run_dir, deadline):
    records = history_file.read_history(os.path.join(run_dir, "history.jsonl"))
    with open(os.path.join(run_dir, "final.json"), encoding="utf-8") as file:
        final = json.load(file)
    result = check_all(records, final, deadline)
    with open(os.path.join(run_dir, "report.json"), "w", encoding="utf-8") as file:
        json.dump(result, file, indent=2)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir")
    parser.add_argument("--deadline", type=float, default=10.0,
                        help="seconds within which every request must be answered")
    args = parser.parse_args(argv)
    try:
        result = check_run_dir(args.run_dir, args.deadline)
    except (OSError, ValueError, KeyError) as err:
        print(f"checker: cannot check {args.run_dir}: {err}", file=sys.stderr)
        return 2
    print(reporting.render_all(result))
    print(f"result: {result['anomaly_count']} anomalies "
          f"(checker over {result['requests']['total']} requests)")
    return 1 if result["anomaly_count"] else 0


if __name__ == "__main__":
    sys.exit(main())
