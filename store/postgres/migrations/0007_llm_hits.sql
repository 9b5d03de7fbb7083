-- Cache hit counts, apart from the answers. A count kept in llm_cache
-- rewrote the whole row for one integer (the stored request, kilobytes of
-- overflow pages, into the write-ahead log); here it is a small row of its
-- own. llm_cache.hits keeps the counts written before this table existed;
-- a count is the sum of both.
CREATE TABLE llm_hits (
    key  TEXT    PRIMARY KEY REFERENCES llm_cache (key) ON DELETE CASCADE,
    hits BIGINT  NOT NULL
);
