-- The service (gavel serve): changes judged before their outcome is known,
-- the verdicts given on them, which prompt version of each judge is active
-- (every change an audit entry), API tokens, and blind human reviews.

-- What calibration used: promotion evaluates on the split's test part.
ALTER TABLE calibrations ADD COLUMN split TEXT NOT NULL DEFAULT '';
ALTER TABLE calibrations ADD COLUMN model TEXT NOT NULL DEFAULT '';

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
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
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
