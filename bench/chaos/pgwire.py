"""The frontend side of the PostgreSQL wire protocol, as much as a proxy needs to find the
simple queries that are a COMMIT (protocol 3: an untyped startup message, then messages of
a type byte and an int32 length that counts itself). The nodes connect with
`sslmode=disable` (pg.url_for), so the stream is plain; anything that does not parse (TLS
after all) is passed on untouched."""

SSL_REQUEST, GSSENC_REQUEST = 80877103, 80877104
COMMITS = {"COMMIT", "COMMIT TRANSACTION", "COMMIT WORK", "END", "END TRANSACTION"}


def is_commit_query(text):
    """True when a simple query's text holds a COMMIT statement ("SET LOCAL ...; COMMIT")."""
    return any(" ".join(part.split()).upper() in COMMITS for part in text.split(";"))


class FrontendStream:
    """Splits what a client sends into messages: feed(bytes) -> [(message bytes, is a
    COMMIT)], whole messages only; a partial one waits for the rest."""

    def __init__(self):
        self.buffer = bytearray()
        self.startup = True
        self.opaque = False

    def feed(self, data):
        if self.opaque:
            return [(bytes(data), False)]
        self.buffer += data
        out = []
        while True:
            if self.startup:
                if len(self.buffer) < 8:
                    break
                length = int.from_bytes(self.buffer[0:4], "big")
                if not 8 <= length <= 1 << 20:
                    return self._give_up(out)
                if len(self.buffer) < length:
                    break
                code = int.from_bytes(self.buffer[4:8], "big")
                out.append((bytes(self.buffer[:length]), False))
                del self.buffer[:length]
                # After an SSL or GSS request the server says no ('N') and a real startup
                # message follows; anything else starts the typed messages.
                self.startup = code in (SSL_REQUEST, GSSENC_REQUEST)
            else:
                if len(self.buffer) < 5:
                    break
                length = int.from_bytes(self.buffer[1:5], "big")
                if not 4 <= length <= 1 << 30:
                    return self._give_up(out)
                if len(self.buffer) < length + 1:
                    break
                message = bytes(self.buffer[:length + 1])
                del self.buffer[:length + 1]
                commit = message[:1] == b"Q" and is_commit_query(
                    message[5:].rstrip(b"\0").decode("utf-8", "replace"))
                out.append((message, commit))
        return out

    def _give_up(self, out):
        self.opaque = True
        out.append((bytes(self.buffer), False))
        self.buffer.clear()
        return out
