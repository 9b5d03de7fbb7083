-- Records are immutable: the canonical JSON body is what gavel exports and
-- hashes; the other columns are copies of its fields for filtering.
CREATE TABLE records (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT    NOT NULL UNIQUE,
    content_hash TEXT    NOT NULL,
    body         TEXT    NOT NULL,
    label        TEXT    NOT NULL CHECK (label IN ('pass', 'fail')),
    status       TEXT    NOT NULL CHECK (status IN ('passed', 'failed', 'landed', 'abandoned', 'draft')),
    source       TEXT    NOT NULL CHECK (source IN ('tests', 'review')),
    grp          TEXT    NOT NULL DEFAULT '',
    at_unix_ns   INTEGER,
    imported_at  TEXT    NOT NULL
);
CREATE INDEX records_grp ON records (grp);

CREATE TRIGGER records_immutable BEFORE UPDATE ON records
BEGIN
    SELECT RAISE(ABORT, 'records are immutable');
END;

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
