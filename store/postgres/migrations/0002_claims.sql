-- Claims on model requests (SQLite's 0007_claims.sql).
CREATE TABLE llm_claims (
    key        TEXT   PRIMARY KEY,
    owner      TEXT   NOT NULL,
    expires_ns BIGINT NOT NULL
);
