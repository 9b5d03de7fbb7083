-- Webhook deliveries the service handled, with its answer: a delivery
-- sent again (GitHub's redelivery, a replay) is answered from here and
-- changes nothing.
CREATE TABLE webhook_deliveries (
    id          TEXT PRIMARY KEY,
    event       TEXT NOT NULL,
    result      TEXT NOT NULL,
    received_at TEXT NOT NULL
);
