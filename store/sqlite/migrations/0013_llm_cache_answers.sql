-- The answers, beside their keys. A cache hit reads only the answer, but
-- in llm_cache it lies after the stored request (kilobytes, in overflow
-- pages), so reading it walked the request's pages; this index holds the
-- key and the answer alone, and a hit is read from it (a tenth of a
-- millisecond less a hit, BENCHMARKS.md). PostgreSQL keeps a long request
-- out of the row (TOAST) and needs no such index.
CREATE INDEX llm_cache_answers ON llm_cache (key, response) WHERE response IS NOT NULL;
