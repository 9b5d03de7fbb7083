-- Claims on model requests: a process sharing the store claims a request
-- before sending it, so that processes never send the same request twice.
CREATE TABLE llm_claims (
    key        TEXT    PRIMARY KEY,
    owner      TEXT    NOT NULL,
    expires_ns INTEGER NOT NULL
);
