package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/gavelhq/gavel/llm"
)

// Cache returns the store's model cache.
func (db *DB) Cache() llm.Cache { return (*cache)(db) }

// cache implements llm.Cache on the llm_cache table.
type cache DB

var (
	_ llm.Cache          = (*cache)(nil)
	_ llm.ResponseReader = (*cache)(nil)
	_ llm.Claimer        = (*cache)(nil)
	_ llm.ClaimHolder    = (*cache)(nil)
)

// Claim implements llm.Claimer: the row is taken when there is none, when
// it has expired, or when owner holds it already.
const claimSQL = `INSERT INTO llm_claims (key, owner, expires_ns) VALUES ($1, $2, $3)
	ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, expires_ns = excluded.expires_ns
	WHERE llm_claims.expires_ns < $4 OR llm_claims.owner = excluded.owner`

const releaseSQL = `DELETE FROM llm_claims WHERE key = $1 AND owner = $2`

const putSQL = `INSERT INTO llm_cache
	(key, provider, model, request, response, input_tokens, output_tokens, cached_tokens, cost_usd, latency_ms, created_at, answered_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
	ON CONFLICT (key) DO UPDATE SET response = excluded.response,
		input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens,
		cached_tokens = excluded.cached_tokens, cost_usd = excluded.cost_usd,
		latency_ms = excluded.latency_ms, answered_at = excluded.answered_at`

// putReleaseSQL is putSQL and releaseSQL as one PostgreSQL statement.
const putReleaseSQL = `WITH released AS (DELETE FROM llm_claims WHERE key = $1 AND owner = $13) ` + putSQL

func (c *cache) Claim(ctx context.Context, key, owner string, until time.Time) (bool, error) {
	var got bool
	err := (*DB)(c).retryBusy(ctx, func() error {
		res, err := c.claimStmt.ExecContext(ctx, key, owner, until.UnixNano(), time.Now().UnixNano())
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		got = n == 1
		return err
	})
	return got, err
}

// Holder implements llm.ClaimHolder.
func (c *cache) Holder(ctx context.Context, key string) (string, error) {
	var owner string
	err := c.db.QueryRowContext(ctx, `SELECT owner FROM llm_claims WHERE key = $1 AND expires_ns >= $2`,
		key, time.Now().UnixNano()).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return owner, err
}

// Release implements llm.Claimer.
func (c *cache) Release(ctx context.Context, key, owner string) error {
	return (*DB)(c).retryBusy(ctx, func() error {
		_, err := c.releaseStmt.ExecContext(ctx, key, owner)
		return err
	})
}

func (c *cache) Get(ctx context.Context, key string) (*llm.Entry, error) {
	var e llm.Entry
	var req string
	var resp sql.NullString
	var created string
	err := c.getEntry.QueryRowContext(ctx, key).Scan(&e.Key, &e.Provider, &e.Model, &req, &resp, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read cache entry %.12s: %w", key, err)
	}
	return decodeEntry(&e, req, resp, created)
}

// ReadResponse implements llm.ResponseReader: a hit reads and decodes the
// stored answer alone, not the request stored beside it.
func (c *cache) ReadResponse(ctx context.Context, key string) (*llm.Response, error) {
	var resp sql.NullString
	err := c.getAnswer.QueryRowContext(ctx, key).Scan(&resp)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !resp.Valid) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read cache entry %.12s: %w", key, err)
	}
	r := &llm.Response{}
	if err := decodeStored([]byte(resp.String), r); err != nil {
		return nil, fmt.Errorf("cache entry %.12s: response: %w", key, err)
	}
	return r, nil
}

// ReadResponses implements llm.ResponsesReader: the answers of many keys
// in one query per 500 keys.
func (c *cache) ReadResponses(ctx context.Context, keys []string) (map[string]*llm.Response, error) {
	out := make(map[string]*llm.Response, len(keys))
	const per = 500
	for len(keys) > 0 {
		n := min(per, len(keys))
		args := make([]any, n)
		for i, k := range keys[:n] {
			args[i] = k
		}
		keys = keys[n:]
		rows, err := c.db.QueryContext(ctx, `SELECT key, response FROM llm_cache WHERE response IS NOT NULL AND key IN (`+placeholders(n)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("read cache entries: %w", err)
		}
		for rows.Next() {
			var key string
			var resp []byte
			if err := rows.Scan(&key, &resp); err != nil {
				rows.Close()
				return nil, err
			}
			r := &llm.Response{}
			if err := decodeStored(resp, r); err != nil {
				rows.Close()
				return nil, fmt.Errorf("cache entry %.12s: response: %w", key, err)
			}
			out[key] = r
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// placeholders is "$1, $2, ..., $n".
func placeholders(n int) string { return placeholdersFrom(1, n) }

// placeholdersFrom is n placeholders from $first: "$first, ...".
func placeholdersFrom(first, n int) string {
	b := make([]byte, 0, n*6)
	for i := range n {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(first+i), 10)
	}
	return string(b)
}

func decodeEntry(e *llm.Entry, req string, resp sql.NullString, created string) (*llm.Entry, error) {
	e.Request = &llm.Request{}
	if err := json.Unmarshal([]byte(req), e.Request); err != nil {
		return nil, fmt.Errorf("cache entry %.12s: request: %w", e.Key, err)
	}
	if resp.Valid {
		e.Response = &llm.Response{}
		if err := json.Unmarshal([]byte(resp.String), e.Response); err != nil {
			return nil, fmt.Errorf("cache entry %.12s: response: %w", e.Key, err)
		}
	}
	e.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
	return e, nil
}

func (c *cache) Put(ctx context.Context, e *llm.Entry) error {
	return c.put(ctx, e, "")
}

// PutReleasing implements llm.AnswerReleaser: the answer stored and
// owner's claim dropped in one transaction.
func (c *cache) PutReleasing(ctx context.Context, e *llm.Entry, owner string) error {
	return c.put(ctx, e, owner)
}

// put stores an answer and, when owner is set, drops owner's claim on it
// in the same transaction.
func (c *cache) put(ctx context.Context, e *llm.Entry, owner string) error {
	if e.Response == nil {
		return errors.New("cache: Put without a response")
	}
	req, err := json.Marshal(e.Request)
	if err != nil {
		return err
	}
	resp, err := json.Marshal(e.Response)
	if err != nil {
		return err
	}
	now := (*DB)(c).timestamp()
	r := e.Response
	args := []any{e.Key, e.Provider, e.Model, string(req), string(resp), r.Usage.InputTokens, r.Usage.OutputTokens,
		r.Usage.CachedTokens, r.Cost, r.Latency.Milliseconds(), now, now}
	// An answer was paid for: wait out any lock rather than lose it.
	err = (*DB)(c).retryBusy(ctx, func() error {
		if owner == "" {
			_, err := c.putStmt.ExecContext(ctx, args...)
			return err
		}
		if c.putReleaseStmt != nil {
			// PostgreSQL: one statement (a data-modifying WITH), one round
			// trip, as atomic as the transaction.
			_, err := c.putReleaseStmt.ExecContext(ctx, append(args, owner)...)
			return err
		}
		return (*DB)(c).inTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.StmtContext(ctx, c.putStmt).ExecContext(ctx, args...); err != nil {
				return err
			}
			_, err := tx.StmtContext(ctx, c.releaseStmt).ExecContext(ctx, e.Key, owner)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("store answer %.12s: %w", e.Key, err)
	}
	return nil
}

// hitCounts are the cache hits not yet written: a hit is a read only, and
// the counts go to the store in one transaction at most once a second (or
// every 1,024 keys), before Stats reads them, and when the store closes. A
// process killed outright loses at most its last second of counts, which
// are statistics (the savings 'gavel cache stats' shows), not answers.
type hitCounts struct {
	mu   sync.Mutex
	n    map[string]int64
	last time.Time
}

// hitFlushEvery bounds how long a hit count waits in memory.
const hitFlushEvery = time.Second

func (c *cache) RecordHit(ctx context.Context, key string) error {
	db := (*DB)(c)
	if db.WriteHitsThrough {
		_, err := c.db.ExecContext(ctx, `UPDATE llm_cache SET hits = hits + 1 WHERE key = $1`, key)
		return err
	}
	h := &db.hits
	h.mu.Lock()
	if h.n == nil {
		h.n = map[string]int64{}
		if h.last.IsZero() {
			h.last = time.Now()
		}
	}
	h.n[key]++
	flush := len(h.n) >= 1024 || time.Since(h.last) >= hitFlushEvery
	h.mu.Unlock()
	if flush {
		return db.flushHits(ctx)
	}
	return nil
}

// flushHits writes the hit counts held in memory.
func (db *DB) flushHits(ctx context.Context) error {
	h := &db.hits
	h.mu.Lock()
	n := h.n
	h.n, h.last = nil, time.Now()
	h.mu.Unlock()
	if len(n) == 0 {
		return nil
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys) // one order for every process: no deadlock between two flushes
	err := db.retryBusy(ctx, func() error {
		tx, err := db.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		// Many keys a statement; a key the cache no longer holds (cleared
		// meanwhile) is skipped by the join.
		err = execRows(ctx, tx, `INSERT INTO llm_hits (key, hits) SELECT c.key, CAST(v.column2 AS BIGINT) FROM (VALUES `,
			`) AS v JOIN llm_cache c ON c.key = v.column1 WHERE true
			ON CONFLICT (key) DO UPDATE SET hits = llm_hits.hits + excluded.hits`, 2, len(keys), func(i int, args []any) []any {
				// The count as text: PostgreSQL types a VALUES column from its
				// first use, and the CAST reads it in both dialects.
				return append(args, keys[i], strconv.FormatInt(n[keys[i]], 10))
			})
		if err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		// Kept for the next flush.
		h.mu.Lock()
		if h.n == nil {
			h.n = map[string]int64{}
		}
		for k, v := range n {
			h.n[k] += v
		}
		h.mu.Unlock()
		return fmt.Errorf("cache: write hit counts: %w", err)
	}
	return nil
}

func (c *cache) AddPending(ctx context.Context, e *llm.Entry) error {
	req, err := json.Marshal(e.Request)
	if err != nil {
		return err
	}
	_, err = c.db.ExecContext(ctx, `INSERT INTO llm_cache (key, provider, model, request, created_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (key) DO NOTHING`,
		e.Key, e.Provider, e.Model, string(req), (*DB)(c).timestamp())
	if err != nil {
		return fmt.Errorf("store pending request %.12s: %w", e.Key, err)
	}
	return nil
}

func (c *cache) Pending(ctx context.Context, fn func(*llm.Entry) error) error {
	rows, err := c.db.QueryContext(ctx, `SELECT key, provider, model, request, created_at
		FROM llm_cache WHERE response IS NULL ORDER BY created_at, key`)
	if err != nil {
		return fmt.Errorf("list pending requests: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e llm.Entry
		var req, created string
		if err := rows.Scan(&e.Key, &e.Provider, &e.Model, &req, &created); err != nil {
			return err
		}
		if _, err := decodeEntry(&e, req, sql.NullString{}, created); err != nil {
			return err
		}
		if err := fn(&e); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (c *cache) Stats(ctx context.Context) (*llm.CacheStats, error) {
	if err := (*DB)(c).flushHits(ctx); err != nil {
		return nil, err
	}
	rows, err := c.db.QueryContext(ctx, `SELECT model,
			COUNT(response), COUNT(*) - COUNT(response), COALESCE(SUM(c.hits + COALESCE(h.hits, 0)), 0),
			COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
			COALESCE(SUM(cost_usd), 0), COALESCE(SUM((c.hits + COALESCE(h.hits, 0)) * cost_usd), 0)
		FROM llm_cache c LEFT JOIN llm_hits h ON h.key = c.key GROUP BY model ORDER BY model`)
	if err != nil {
		return nil, fmt.Errorf("cache stats: %w", err)
	}
	defer rows.Close()
	s := &llm.CacheStats{ByModel: []llm.ModelStats{}}
	for rows.Next() {
		var m llm.ModelStats
		var pending int
		if err := rows.Scan(&m.Model, &m.Entries, &pending, &m.Hits, &m.InputTokens, &m.OutputTokens, &m.Cost, &m.SavedCost); err != nil {
			return nil, err
		}
		m.Pending = pending
		s.Entries += m.Entries
		s.Pending += pending
		s.Hits += m.Hits
		s.InputTokens += m.InputTokens
		s.OutputTokens += m.OutputTokens
		s.Cost += m.Cost
		s.SavedCost += m.SavedCost
		s.ByModel = append(s.ByModel, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	return s, c.countInvalid(ctx, s)
}
