-- Batches submitted to a provider's batch API, and the requests in each:
-- a request in a batch not yet collected is not submitted again.
CREATE TABLE batches (
    id           TEXT    PRIMARY KEY,
    provider     TEXT    NOT NULL,
    state        TEXT    NOT NULL,
    submitted_at TEXT    NOT NULL,
    collected_at TEXT
);
CREATE TABLE batch_requests (
    batch_id TEXT NOT NULL REFERENCES batches (id),
    key      TEXT NOT NULL,
    PRIMARY KEY (batch_id, key)
);
CREATE INDEX batch_requests_key ON batch_requests (key);
