-- Runs: the history of the commands that judged, evaluated, taught,
-- calibrated, benchmarked or built data (gavel runs, gavel view), one row
-- a run with its command line (secrets redacted), figures and text, and
-- one row for every record it decided about.
CREATE TABLE runs (
    id         TEXT PRIMARY KEY,
    command    TEXT NOT NULL,
    judge      TEXT NOT NULL,
    body       TEXT NOT NULL,
    started_at TEXT NOT NULL
);
CREATE INDEX runs_command ON runs (command, id);

CREATE TABLE run_records (
    run_id    TEXT    NOT NULL REFERENCES runs (id),
    seq       INTEGER NOT NULL,
    record_id TEXT    NOT NULL,
    role      TEXT    NOT NULL,
    outcome   TEXT    NOT NULL,
    verdict   TEXT    NOT NULL,
    reasoning TEXT    NOT NULL,
    body      TEXT    NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX run_records_record ON run_records (run_id, record_id);
