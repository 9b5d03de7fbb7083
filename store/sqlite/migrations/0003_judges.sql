-- Prompt versions by content hash, with their lineage (calibration fills
-- parent, iteration and note), and verdicts per (record, prompt, model).
CREATE TABLE prompt_versions (
    hash       TEXT    PRIMARY KEY,
    judge      TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    spec       TEXT    NOT NULL,
    parent     TEXT    REFERENCES prompt_versions (hash),
    iteration  INTEGER NOT NULL DEFAULT 0,
    note       TEXT    NOT NULL DEFAULT '',
    created_at TEXT    NOT NULL
);
CREATE INDEX prompt_versions_judge ON prompt_versions (judge, created_at);

CREATE TABLE verdicts (
    record_id   TEXT    NOT NULL REFERENCES records (id),
    prompt      TEXT    NOT NULL REFERENCES prompt_versions (hash),
    model       TEXT    NOT NULL,
    outcome     TEXT    NOT NULL CHECK (outcome IN ('pass', 'fail', 'invalid')),
    score       REAL    NOT NULL,
    body        TEXT    NOT NULL,
    request_key TEXT    NOT NULL,
    created_at  TEXT    NOT NULL,
    PRIMARY KEY (record_id, prompt, model)
);
CREATE INDEX verdicts_prompt ON verdicts (prompt, model);
