package llm

import (
	"context"
	"time"
)

// Cache keeps answers by request key, and the requests that offline runs
// could not send. It is defined here, where it is used; store/sqldb
// implements it. Errors are never cached: only answers (valid or invalid)
// are put.
type Cache interface {
	// Get returns the entry for key, or nil when there is none. A pending
	// request is an entry whose Response is nil.
	Get(ctx context.Context, key string) (*Entry, error)
	// Put stores an answer, and removes a pending request of the same key.
	Put(ctx context.Context, e *Entry) error
	// RecordHit counts one use of a stored answer, for the savings shown
	// by `gavel cache stats`.
	RecordHit(ctx context.Context, key string) error
	// AddPending stores a request to be answered later (e.Response is nil).
	AddPending(ctx context.Context, e *Entry) error
	// Pending calls fn for each pending request, oldest first.
	Pending(ctx context.Context, fn func(*Entry) error) error
	// Stats summarises the cache.
	Stats(ctx context.Context) (*CacheStats, error)
}

// ResponseReader is a cache that can read a stored answer alone, without
// the request stored beside it: what a cache hit needs.
type ResponseReader interface {
	// ReadResponse returns the answer stored for key, or nil when there is
	// none (or only a pending request).
	ReadResponse(ctx context.Context, key string) (*Response, error)
}

// ResponsesReader is a cache that reads the stored answers of many keys at
// once (one query instead of one per key): Service.Prepare uses it.
type ResponsesReader interface {
	// ReadResponses returns the stored answer of each key that has one.
	ReadResponses(ctx context.Context, keys []string) (map[string]*Response, error)
}

// Claimer is a cache shared by several processes (a team's database) that
// lets one of them claim a request before sending it, so that the same
// request is never sent twice: the others wait for its answer.
type Claimer interface {
	// Claim takes key for owner until the time given, when no other
	// owner holds an unexpired claim on it (owner may renew its own); it
	// reports whether owner now holds it.
	Claim(ctx context.Context, key, owner string, until time.Time) (bool, error)
	// Release drops owner's claim on key.
	Release(ctx context.Context, key, owner string) error
}

// AnswerReleaser is a Claimer that stores an answer and drops owner's
// claim on its key in one write (one transaction), where a Put and a
// Release would be two.
type AnswerReleaser interface {
	PutReleasing(ctx context.Context, e *Entry, owner string) error
}

// ClaimHolder is a Claimer that tells who holds a claim, so that the claim
// of a process that died on this machine (a killed run) is released at
// once rather than after ClaimTTL.
type ClaimHolder interface {
	// Holder returns the owner of key's unexpired claim, or "".
	Holder(ctx context.Context, key string) (string, error)
}

// Entry is a request with its answer (nil while pending).
type Entry struct {
	Key string
	// Provider and Model ("provider:name") of the request.
	Provider  string
	Model     string
	Request   *Request
	Response  *Response
	CreatedAt time.Time
}

// CacheStats summarises a cache.
type CacheStats struct {
	Entries int `json:"entries"`
	// Invalid counts the stored answers that did not match their schema
	// (gavel cache clear --invalid removes them).
	Invalid int   `json:"invalid"`
	Pending int   `json:"pending"`
	Hits    int64 `json:"hits"`
	// Tokens and cost of the stored answers, as first paid for.
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	Cost         float64 `json:"cost_usd"`
	// SavedCost is what the cache hits would have cost if sent again.
	SavedCost float64      `json:"saved_cost_usd"`
	ByModel   []ModelStats `json:"by_model"`
}

// ModelStats is one model's line in CacheStats.
type ModelStats struct {
	Model        string  `json:"model"`
	Entries      int     `json:"entries"`
	Invalid      int     `json:"invalid"`
	Pending      int     `json:"pending"`
	Hits         int64   `json:"hits"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	Cost         float64 `json:"cost_usd"`
	SavedCost    float64 `json:"saved_cost_usd"`
}

// CacheClear says which entries `gavel cache clear` removes: every entry,
// or those that meet every condition given (the model's, those created
// before Before, only unreadable answers).
type CacheClear struct {
	Model string
	// Invalid keeps only answers that did not match their schema (after
	// the repair call): a rerun asks for those again.
	Invalid bool
	Before  time.Time
	// DryRun counts what would go and removes nothing.
	DryRun bool
}

// CacheCleared is what a clear removed (or, dry, would remove).
type CacheCleared struct {
	DryRun bool `json:"dry_run"`
	// Answers counts stored answers, Invalid those of them that were
	// unreadable, Pending requests waiting for a batch.
	Answers int            `json:"answers"`
	Invalid int            `json:"invalid"`
	Pending int            `json:"pending"`
	ByModel []ClearedModel `json:"by_model"`
}

// ClearedModel is one model's line in CacheCleared.
type ClearedModel struct {
	Model   string `json:"model"`
	Answers int    `json:"answers"`
	Invalid int    `json:"invalid"`
	Pending int    `json:"pending"`
}

// Clearer is a cache whose entries can be removed: nothing else in the
// store (records, verdicts) refers to them, so a removed answer is asked
// for again the next time it is needed.
type Clearer interface {
	Clear(ctx context.Context, c CacheClear) (*CacheCleared, error)
}
