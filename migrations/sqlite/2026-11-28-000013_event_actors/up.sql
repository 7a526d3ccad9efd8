-- Who caused each event (an API key through a door, the operator, or one of the service's
-- chores), as JSON: `{"kind": "key", "id": 12, "name": "desk", "role": "staff", "door":
-- "console"}`. Events recorded before this, and by an older version's nodes, have none.
ALTER TABLE events ADD COLUMN actor TEXT;
