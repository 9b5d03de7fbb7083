-- Later outcomes of records. Records are immutable, their first outcome
-- included; an outcome that changed afterwards (a pull request closed,
-- then reopened and merged; checks run again on the same commit) is a new
-- version here, numbered from 2. A record's outcome is its latest version.
CREATE TABLE record_outcomes (
    record_id   TEXT    NOT NULL REFERENCES records (id),
    version     INTEGER NOT NULL CHECK (version >= 2),
    body        TEXT    NOT NULL,
    label       TEXT    NOT NULL CHECK (label IN ('pass', 'fail')),
    status      TEXT    NOT NULL CHECK (status IN ('passed', 'failed', 'landed', 'abandoned', 'draft')),
    source      TEXT    NOT NULL CHECK (source IN ('tests', 'review')),
    at_unix_ns  BIGINT,
    origin      TEXT    NOT NULL,
    recorded_at TEXT    NOT NULL,
    PRIMARY KEY (record_id, version)
);

CREATE FUNCTION record_outcomes_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'outcomes are immutable';
END
$$;
CREATE TRIGGER record_outcomes_immutable BEFORE UPDATE ON record_outcomes
    FOR EACH ROW EXECUTE FUNCTION record_outcomes_immutable();

-- Conditional requests to code hosts: the last answer to a URL with its
-- ETag and the headers that matter, so a re-import asks whether anything
-- changed and reads the answer it has on 304 Not Modified.
CREATE TABLE http_etags (
    url       TEXT PRIMARY KEY,
    etag      TEXT NOT NULL,
    header    TEXT NOT NULL,
    body      BYTEA NOT NULL,
    stored_at TEXT NOT NULL
);
