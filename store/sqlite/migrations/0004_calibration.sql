-- Calibration: prompt versions get the edits that made them and their
-- metrics; the teacher's decisions are kept per (record, teacher prompt,
-- model); each calibration run is kept as its result.
ALTER TABLE prompt_versions ADD COLUMN edits TEXT;
ALTER TABLE prompt_versions ADD COLUMN metrics TEXT;

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
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    judge      TEXT NOT NULL,
    selected   TEXT NOT NULL,
    result     TEXT NOT NULL,
    created_at TEXT NOT NULL
);
