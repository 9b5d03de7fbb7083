package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gavelhq/gavel/llm"
)

var _ llm.Clearer = (*cache)(nil)

// invalidMark is in every unreadable answer's stored JSON (Response's
// "invalid" field); an answer that holds it is decoded to be sure.
const invalidMark = `"invalid":true`

// isInvalid reports whether a stored answer is an unreadable one.
func isInvalid(resp string) bool {
	if !strings.Contains(resp, invalidMark) {
		return false
	}
	var r struct {
		Invalid bool `json:"invalid"`
	}
	return json.Unmarshal([]byte(resp), &r) == nil && r.Invalid
}

// Clear implements llm.Clearer: in one transaction it finds the entries
// that meet every condition given and, unless dry, removes them with
// their hit counts.
func (c *cache) Clear(ctx context.Context, f llm.CacheClear) (*llm.CacheCleared, error) {
	db := (*DB)(c)
	if err := db.flushHits(ctx); err != nil {
		return nil, err
	}
	where, args := []string{"1 = 1"}, []any{}
	if f.Model != "" {
		args = append(args, f.Model)
		where = append(where, "model = $"+strconv.Itoa(len(args)))
	}
	if !f.Before.IsZero() {
		args = append(args, f.Before.UTC().Format(time.RFC3339Nano))
		where = append(where, "created_at < $"+strconv.Itoa(len(args)))
	}
	if f.Invalid {
		where = append(where, `response LIKE '%`+invalidMark+`%'`)
	}
	var out *llm.CacheCleared
	err := db.retryBusy(ctx, func() error {
		return db.inTx(ctx, func(tx *sql.Tx) error {
			out = &llm.CacheCleared{DryRun: f.DryRun, ByModel: []llm.ClearedModel{}}
			keys, err := clearable(ctx, tx, strings.Join(where, " AND "), args, f.Invalid, out)
			if err != nil || f.DryRun {
				return err
			}
			for len(keys) > 0 {
				n := min(500, len(keys))
				part := make([]any, n)
				for i, k := range keys[:n] {
					part[i] = k
				}
				keys = keys[n:]
				for _, table := range []string{"llm_hits", "llm_cache"} {
					if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE key IN (`+placeholders(n)+`)`, part...); err != nil {
						return fmt.Errorf("clear the cache: %w", err)
					}
				}
			}
			return nil
		})
	})
	return out, err
}

// clearable lists the keys a clear removes and counts them into out.
func clearable(ctx context.Context, tx *sql.Tx, where string, args []any, onlyInvalid bool, out *llm.CacheCleared) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT key, model, response FROM llm_cache WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("clear the cache: %w", err)
	}
	defer rows.Close()
	var keys []string
	by := map[string]*llm.ClearedModel{}
	for rows.Next() {
		var key, model string
		var resp sql.NullString
		if err := rows.Scan(&key, &model, &resp); err != nil {
			return nil, err
		}
		invalid := resp.Valid && isInvalid(resp.String)
		if onlyInvalid && !invalid {
			continue
		}
		m := by[model]
		if m == nil {
			m = &llm.ClearedModel{Model: model}
			by[model] = m
		}
		switch {
		case !resp.Valid:
			m.Pending++
			out.Pending++
		case invalid:
			m.Invalid++
			out.Invalid++
			fallthrough
		default:
			m.Answers++
			out.Answers++
		}
		keys = append(keys, key)
	}
	for _, m := range by {
		out.ByModel = append(out.ByModel, *m)
	}
	sort.Slice(out.ByModel, func(i, j int) bool { return out.ByModel[i].Model < out.ByModel[j].Model })
	return keys, rows.Err()
}

// countInvalid adds each model's unreadable answers to s.
func (c *cache) countInvalid(ctx context.Context, s *llm.CacheStats) error {
	rows, err := c.db.QueryContext(ctx, `SELECT model, response FROM llm_cache WHERE response LIKE '%`+invalidMark+`%'`)
	if err != nil {
		return fmt.Errorf("cache stats: %w", err)
	}
	defer rows.Close()
	by := map[string]int{}
	for rows.Next() {
		var model, resp string
		if err := rows.Scan(&model, &resp); err != nil {
			return err
		}
		if isInvalid(resp) {
			by[model]++
		}
	}
	for i := range s.ByModel {
		s.ByModel[i].Invalid = by[s.ByModel[i].Model]
		s.Invalid += s.ByModel[i].Invalid
	}
	return rows.Err()
}
