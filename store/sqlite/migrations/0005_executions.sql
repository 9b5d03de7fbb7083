-- Results of running programs in the sandbox, by content-addressed key
-- (language, code, tests, limits), so that a rerun or a resumed run does
-- not run the same program again. Only outcomes that do not depend on the
-- machine's load are stored (not timeouts or resource limits).
CREATE TABLE executions (
    key        TEXT PRIMARY KEY,
    result     TEXT NOT NULL,
    created_at TEXT NOT NULL
);
