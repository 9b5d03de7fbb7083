package server

import (
	"context"

	"github.com/gavelhq/gavel/codehost"
	"github.com/gavelhq/gavel/deploy"
	"github.com/gavelhq/gavel/runlog"
)

// Store is what the service keeps: a judge's life in service (deploy's
// Store), what code hosts report, and the webhook deliveries it handled.
// The server is given one; store/sqldb implements it.
type Store interface {
	deploy.Store
	codehost.Store
	codehost.AnswerStore
	runlog.Store

	// WebhookDelivery returns the answer given to a handled webhook
	// delivery; SaveWebhookDelivery keeps it (the first answer stays).
	WebhookDelivery(ctx context.Context, id string) ([]byte, bool, error)
	SaveWebhookDelivery(ctx context.Context, id, event string, result []byte) error
}
