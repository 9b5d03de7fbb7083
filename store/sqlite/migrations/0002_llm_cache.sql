-- Model answers by content-addressed request key. A row whose response is
-- NULL is a pending request (recorded offline, to be answered through a
-- batch file). Errors are never stored.
CREATE TABLE llm_cache (
    key           TEXT    PRIMARY KEY,
    provider      TEXT    NOT NULL,
    model         TEXT    NOT NULL,
    request       TEXT    NOT NULL,
    response      TEXT,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd      REAL    NOT NULL DEFAULT 0,
    latency_ms    INTEGER NOT NULL DEFAULT 0,
    hits          INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT    NOT NULL,
    answered_at   TEXT
);
CREATE INDEX llm_cache_pending ON llm_cache (created_at) WHERE response IS NULL;
