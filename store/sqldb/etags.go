package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gavelhq/gavel/codehost"
)

var _ codehost.AnswerStore = (*DB)(nil)

// ETag returns the stored answer to a URL, if there is one.
func (db *DB) ETag(ctx context.Context, url string) (*codehost.Answer, bool, error) {
	var a codehost.Answer
	var header string
	err := db.db.QueryRowContext(ctx, `SELECT etag, header, body FROM http_etags WHERE url = $1`, url).Scan(&a.ETag, &header, &a.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if err := json.Unmarshal([]byte(header), &a.Header); err != nil {
		return nil, false, err
	}
	return &a, true, nil
}

// PutETag stores the answer to a URL, replacing the one before.
func (db *DB) PutETag(ctx context.Context, url, etag string, header http.Header, body []byte) error {
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	if body == nil {
		body = []byte{}
	}
	_, err = db.db.ExecContext(ctx, `INSERT INTO http_etags (url, etag, header, body, stored_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (url) DO UPDATE SET etag = excluded.etag, header = excluded.header, body = excluded.body, stored_at = excluded.stored_at`,
		url, etag, string(h), body, db.timestamp())
	return err
}

// WebhookDelivery returns the answer given to a webhook delivery, if it
// was handled.
func (db *DB) WebhookDelivery(ctx context.Context, id string) ([]byte, bool, error) {
	var result string
	err := db.db.QueryRowContext(ctx, `SELECT result FROM webhook_deliveries WHERE id = $1`, id).Scan(&result)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	return []byte(result), err == nil, err
}

// SaveWebhookDelivery keeps a handled delivery's answer; the first answer
// to an id stays.
func (db *DB) SaveWebhookDelivery(ctx context.Context, id, event string, result []byte) error {
	_, err := db.db.ExecContext(ctx, `INSERT INTO webhook_deliveries (id, event, result, received_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO NOTHING`, id, event, string(result), db.timestamp())
	return err
}
