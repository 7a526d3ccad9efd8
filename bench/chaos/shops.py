"""One shop's clients (the PostgreSQL shop's nodes, or the SQLite shop's node): keys, the
seeded catalogue, writers, a feed reader per node, an SSE listener; and its final state."""

import dump
from api import Recorder, send
from clients import FeedReader, Shop, Writer
from nodes import CURRENCY
from sse import SseListener


def create_key(address, admin_key, role, name):
    """A new key (the answer: its secret, id, name and role)."""
    answer = send(address, "POST", "/v1/keys", key=admin_key, body={"name": name, "role": role})
    if answer.status != 201:
        raise RuntimeError(f"creating a {role} key: {answer.status} {answer.error} "
                           f"{answer.body}")
    return answer.body


class ShopClients:
    def __init__(self, name, nodes, history, admin_key, args, writers, run_id, rng, stop,
                 plant=None, read_modes=False):
        self.name = name
        self.read_modes = read_modes  # reads sent three ways (clients.READ_MODES)
        self.nodes = nodes
        self.history = history
        self.admin_key = admin_key
        self.args = args
        self.writer_count = writers
        self.run_id = run_id
        self.rng = rng
        self.stop = stop
        self.plant = plant
        self.recorder = Recorder([node.address for node in nodes], history,
                                 timeout=args.deadline + 5)
        self.threads = []
        self.writers = []
        self.listeners = []
        # Thread names stay unique over both shops: the SQLite shop's start with "lite-".
        self.prefix = "" if name == "pg" else "lite-"

    def _key(self, role, client):
        """A key of `role` for `client` alone (a thread's name), named after both; the
        history says whose it is (a "key" line), and each call line which one it was sent
        with, so the checker knows the actor every event must name (checks_actors.py)."""
        made = create_key(self.nodes[0].address, self.admin_key, role,
                          f"chaos {self.name} {role} {client}")
        self.history.write({"t": "key", "id": made["id"], "name": made["name"],
                            "role": made["role"], "client": client})
        self.recorder.key_ids[made["key"]] = made["id"]
        return made["key"]

    def check_currency(self):
        """Every node prices in CURRENCY, the one the nodes were started with (a shop's
        currency is chosen once, by the first start on its database)."""
        for node in self.nodes:
            answer = send(node.address, "GET", "/v1", key=self.admin_key)
            currency = answer.body.get("currency") if isinstance(answer.body, dict) else None
            if currency != CURRENCY:
                raise RuntimeError(f"{self.name}: {node.name} prices in {currency!r} "
                                   f"({answer.status}), not {CURRENCY}")

    def seed(self):
        """Keys, a category, pets with stock and a price: through the recorder, so the
        checker sees them. Every client has keys of its own: the setup a staff key, each
        writer a staff and a customer key, the feed readers and the SSE listener a staff key
        for reading."""
        self.check_currency()
        self.staff = self._key("staff", f"{self.prefix}followers")
        self.keys = {}  # writer index or "setup" -> (customer key, staff key)
        self.keys["setup"] = (None, self._key("staff", f"{self.prefix}setup"))
        for i in range(self.writer_count):
            client = f"{self.prefix}w{i}"
            self.keys[i] = (self._key("customer", client), self._key("staff", client))
        self.shop = Shop(None, [])
        setup = self._writer(0, "setup")
        answer = setup.create_category()
        if answer is None or answer.status != 201:
            raise RuntimeError(f"{self.name}: creating the category: {answer and answer.body}")
        self.shop.category_id = answer.body["id"]
        for _ in range(self.args.pets):
            answer = setup.create_pet()
            if answer is None or answer.status != 201:
                raise RuntimeError(f"{self.name}: creating a pet: {answer and answer.body}")
            pet = answer.body["id"]
            answer = setup.set_stock(pet, self.rng.randint(5, 12))
            if answer is None or answer.status != 200:
                raise RuntimeError(f"{self.name}: setting a pet's stock: "
                                   f"{answer and answer.body}")
            # Every seeded pet is priced, so checkouts can sell it.
            answer = setup.set_price(pet, self.rng.randint(500, 20_000))
            if answer is None or answer.status != 200:
                raise RuntimeError(f"{self.name}: setting a pet's price: "
                                   f"{answer and answer.body}")
        self.shop.seeded = len(self.shop.pets)

    def _writer(self, i, name=None):
        customer, staff = self.keys[name or i]
        writer = Writer(i, self.recorder, self.history, self.shop, customer,
                        staff, self.run_id, self.rng.random(), self.stop,
                        self.args.retry_budget, prefix=f"{self.prefix}w", plant=self.plant,
                        read_modes=self.read_modes)
        if name:
            writer.name = f"{self.prefix}{name}"
        return writer

    def start(self, sse_nodes):
        self.writers = [self._writer(i) for i in range(self.writer_count)]
        readers = [FeedReader(i, self.recorder, self.history, self.staff, self.stop,
                              prefix=f"{self.prefix}feed") for i in range(len(self.nodes))]
        self.listeners = [SseListener(f"{self.prefix}sse{i}", self.nodes[i].address, i,
                                      self.history, self.staff, self.stop)
                          for i in sse_nodes]
        self.threads = self.writers + readers
        for thread in self.threads + self.listeners:
            thread.start()

    @property
    def hold_horizon(self):
        """The latest moment a hold placed by this shop's writers may expire."""
        return self.shop.hold_horizon if self.writers else 0.0

    @property
    def ops(self):
        return sum(writer.ops for writer in self.writers)

    def join(self, timeout):
        """Writers and readers (set `stop` first); True when all ended."""
        for thread in self.threads:
            thread.join(timeout=timeout)
        return not any(thread.is_alive() for thread in self.threads)

    def end_listeners(self):
        for listener in self.listeners:
            listener.close()
        for listener in self.listeners:
            listener.join(timeout=30)

    def final_state(self, database_url, binary, log):
        """The final state through a node that is ready, and `petstore check`. The node runs
        `binary`, this version: the previous version's feed has no actors (a node the
        nemesis left on it serves no event's actor), so when every ready node runs the
        previous one, the first is restarted on this one first, as a rolling upgrade
        ends."""
        ready = [node for node in self.nodes if node.wait_ready(timeout=60)]
        if not ready:
            raise RuntimeError(f"{self.name}: no node is ready at the end: the final state "
                               "cannot be read")
        reader = next((node for node in ready if node.binary == binary), None)
        rolled = reader is None
        if rolled:
            reader = ready[0]
            log(f"{self.name}: every ready node runs the previous version; {reader.name} "
                "restarted on this one to read the final state")
            reader.terminate()
            reader.binary = binary
            reader.start()
            if not reader.wait_ready(timeout=90):
                raise RuntimeError(f"{self.name}: {reader.name} did not become ready on this "
                                   "version")
        log(f"{self.name}: reading the final state through {reader.name}")
        final = dump.read_final_state(reader.address, self.admin_key)
        final["read_through"] = {"node": reader.index, "rolled_forward": rolled}
        final["not_ready"] = [node.index for node in self.nodes if node not in ready]
        final["check"] = dump.petstore_check(binary, database_url)
        # The previous version made a database its nodes share with this one's: its upgrade
        # is not finished, and no node may have written a movement of the stock ledger.
        final["ledger_begun"] = not any(node.legacy_binary for node in self.nodes)
        return final
