-- gavel's schema on PostgreSQL: the tables of SQLite's migrations 0001 to
-- 0006 (store/sqlite/migrations), in PostgreSQL's types. A later change to
-- the schema is a new migration here and one there.

CREATE TABLE records (
    seq          BIGSERIAL PRIMARY KEY,
    id           TEXT   NOT NULL UNIQUE,
    content_hash TEXT   NOT NULL,
    body         TEXT   NOT NULL,
    label        TEXT   NOT NULL CHECK (label IN ('pass', 'fail')),
    status       TEXT   NOT NULL CHECK (status IN ('passed', 'failed', 'landed', 'abandoned', 'draft')),
    source       TEXT   NOT NULL CHECK (source IN ('tests', 'review')),
    grp          TEXT   NOT NULL DEFAULT '',
    at_unix_ns   BIGINT,
    imported_at  TEXT   NOT NULL
);
CREATE INDEX records_grp ON records (grp);

CREATE FUNCTION records_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'records are immutable';
END
$$;
CREATE TRIGGER records_immutable BEFORE UPDATE ON records
    FOR EACH ROW EXECUTE FUNCTION records_immutable();

CREATE TABLE splits (
    name       TEXT PRIMARY KEY,
    spec       TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE split_members (
    split     TEXT NOT NULL REFERENCES splits (name) ON DELETE CASCADE,
    record_id TEXT NOT NULL REFERENCES records (id),
    part      TEXT NOT NULL CHECK (part IN ('train', 'val', 'test')),
    PRIMARY KEY (split, record_id)
);
CREATE INDEX split_members_part ON split_members (split, part);

CREATE TABLE llm_cache (
    key           TEXT   PRIMARY KEY,
    provider      TEXT   NOT NULL,
    model         TEXT   NOT NULL,
    request       TEXT   NOT NULL,
    response      TEXT,
    input_tokens  BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    cached_tokens BIGINT NOT NULL DEFAULT 0,
    cost_usd      DOUBLE PRECISION NOT NULL DEFAULT 0,
    latency_ms    BIGINT NOT NULL DEFAULT 0,
    hits          BIGINT NOT NULL DEFAULT 0,
    created_at    TEXT   NOT NULL,
    answered_at   TEXT
);
CREATE INDEX llm_cache_pending ON llm_cache (created_at) WHERE response IS NULL;

CREATE TABLE prompt_versions (
    hash       TEXT    PRIMARY KEY,
    judge      TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    spec       TEXT    NOT NULL,
    parent     TEXT    REFERENCES prompt_versions (hash),
    iteration  INTEGER NOT NULL DEFAULT 0,
    note       TEXT    NOT NULL DEFAULT '',
    created_at TEXT    NOT NULL,
    edits      TEXT,
    metrics    TEXT
);
CREATE INDEX prompt_versions_judge ON prompt_versions (judge, created_at);

CREATE TABLE verdicts (
    record_id   TEXT NOT NULL REFERENCES records (id),
    prompt      TEXT NOT NULL REFERENCES prompt_versions (hash),
    model       TEXT NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('pass', 'fail', 'invalid')),
    score       DOUBLE PRECISION NOT NULL,
    body        TEXT NOT NULL,
    request_key TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (record_id, prompt, model)
);
CREATE INDEX verdicts_prompt ON verdicts (prompt, model);

CREATE TABLE teacher_decisions (
    record_id   TEXT NOT NULL REFERENCES records (id),
    prompt      TEXT NOT NULL,
    model       TEXT NOT NULL,
    action      TEXT NOT NULL CHECK (action IN ('keep', 'abstain', 'correct')),
    label       TEXT NOT NULL CHECK (label IN ('pass', 'fail')),
    body        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (record_id, prompt, model)
);

CREATE TABLE calibrations (
    id         BIGSERIAL PRIMARY KEY,
    judge      TEXT NOT NULL,
    selected   TEXT NOT NULL,
    result     TEXT NOT NULL,
    created_at TEXT NOT NULL,
    split      TEXT NOT NULL DEFAULT '',
    model      TEXT NOT NULL DEFAULT ''
);

CREATE TABLE executions (
    key        TEXT PRIMARY KEY,
    result     TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE changes (
    id          TEXT PRIMARY KEY,
    inputs      TEXT NOT NULL,
    inputs_hash TEXT NOT NULL,
    grp         TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL
);

CREATE TABLE change_verdicts (
    change_id  TEXT NOT NULL REFERENCES changes (id),
    judge      TEXT NOT NULL,
    prompt     TEXT NOT NULL REFERENCES prompt_versions (hash),
    model      TEXT NOT NULL,
    outcome    TEXT NOT NULL CHECK (outcome IN ('pass', 'fail', 'invalid')),
    body       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (change_id, prompt, model)
);
CREATE INDEX change_verdicts_judge ON change_verdicts (judge, prompt, model);

CREATE TABLE activations (
    seq        BIGSERIAL PRIMARY KEY,
    judge      TEXT NOT NULL,
    version    TEXT NOT NULL REFERENCES prompt_versions (hash),
    previous   TEXT NOT NULL DEFAULT '',
    action     TEXT NOT NULL CHECK (action IN ('initial', 'promote', 'force', 'rollback')),
    actor      TEXT NOT NULL,
    reason     TEXT NOT NULL DEFAULT '',
    evidence   TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX activations_judge ON activations (judge, seq);

CREATE TABLE tokens (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL DEFAULT '',
    scope      TEXT NOT NULL CHECK (scope IN ('judge', 'feedback', 'admin', 'review')),
    hash       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);

CREATE TABLE reviews (
    change_id  TEXT NOT NULL REFERENCES changes (id),
    reviewer   TEXT NOT NULL,
    verdict    TEXT NOT NULL CHECK (verdict IN ('pass', 'fail')),
    note       TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    PRIMARY KEY (change_id, reviewer)
);
