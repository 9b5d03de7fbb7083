package llmtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Batches plays a provider's live batch service on a fake Server: OpenAI's
// Files and Batches endpoints, or Anthropic's Message Batches, with the
// wire formats of their documentation.
type Batches struct {
	// PollsUntilEnd is how many status reads a batch answers as still
	// running before it ends (default 1).
	PollsUntilEnd int
	// ExpireAfter, when positive, ends each batch expired with only its
	// first ExpireAfter requests answered; the rest come back expired.
	ExpireAfter int
	// Options answer the requests, as for AnswerOpenAIBatch.
	Options BatchOptions

	mu      sync.Mutex
	kind    string
	files   map[string][]byte
	batches map[string]*fakeBatch
	n       int
}

type fakeBatch struct {
	id, input    string
	polls        int
	ended        bool
	lines        [][]byte
	output, errs string // file ids (OpenAI)
	results      []byte // result lines (Anthropic)
	ok, failed   int
	created      time.Time
}

// Submitted counts the batches created.
func (b *Batches) Submitted() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.batches)
}

func (b *Batches) next(prefix string) string {
	b.n++
	return fmt.Sprintf("%s%d", prefix, b.n)
}

func splitLines(data []byte) [][]byte {
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			out = append(out, append([]byte(nil), sc.Bytes()...))
		}
	}
	return out
}

// end runs a batch: the first ExpireAfter requests (all when zero) are
// answered; the rest expire.
func (b *Batches) end(fb *fakeBatch) error {
	answered := fb.lines
	var expired [][]byte
	if b.ExpireAfter > 0 && b.ExpireAfter < len(fb.lines) {
		answered, expired = fb.lines[:b.ExpireAfter], fb.lines[b.ExpireAfter:]
	}
	var out bytes.Buffer
	in := bytes.Join(answered, []byte("\n"))
	var err error
	if b.kind == "openai" {
		err = AnswerOpenAIBatch(bytes.NewReader(in), &out, b.Options)
	} else {
		err = AnswerAnthropicBatch(bytes.NewReader(in), &out, b.Options)
	}
	if err != nil {
		return err
	}
	fb.ok = len(answered)
	if b.Options.Fail != nil {
		for _, l := range answered {
			var x struct {
				CustomID string `json:"custom_id"`
			}
			json.Unmarshal(l, &x)
			if b.Options.Fail(x.CustomID) {
				fb.ok--
				fb.failed++
			}
		}
	}
	var errs bytes.Buffer
	for i, l := range expired {
		var x struct {
			CustomID string `json:"custom_id"`
		}
		json.Unmarshal(l, &x)
		var line any
		if b.kind == "openai" {
			line = map[string]any{"id": fmt.Sprintf("batch_req_x%d", i), "custom_id": x.CustomID, "response": nil,
				"error": map[string]string{"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}}
		} else {
			line = map[string]any{"custom_id": x.CustomID, "result": map[string]string{"type": "expired"}}
		}
		enc, _ := json.Marshal(line)
		errs.Write(enc)
		errs.WriteByte('\n')
		fb.failed++
	}
	if b.kind == "openai" {
		fb.output = b.next("file-out-")
		b.files[fb.output] = out.Bytes()
		if errs.Len() > 0 {
			fb.errs = b.next("file-err-")
			b.files[fb.errs] = errs.Bytes()
		}
	} else {
		fb.results = append(out.Bytes(), errs.Bytes()...)
	}
	fb.ended = true
	return nil
}

func (b *Batches) poll(fb *fakeBatch) error {
	fb.polls++
	limit := b.PollsUntilEnd
	if limit <= 0 {
		limit = 1
	}
	if !fb.ended && fb.polls > limit {
		return b.end(fb)
	}
	return nil
}

func writeObject(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	writeJSON(w, status, b)
}

// OpenAI: POST /v1/files, POST /v1/batches, GET /v1/batches/{id},
// GET /v1/files/{id}/content.
func (b *Batches) openAIRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/files", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(64 << 20); err != nil {
			w.WriteHeader(400)
			w.Write(OpenAIError(400, "invalid_request_error", "Expected a multipart upload.", "file"))
			return
		}
		if r.FormValue("purpose") != "batch" {
			w.WriteHeader(400)
			w.Write(OpenAIError(400, "invalid_request_error", "Invalid purpose.", "purpose"))
			return
		}
		f, h, err := r.FormFile("file")
		if err != nil {
			w.WriteHeader(400)
			w.Write(OpenAIError(400, "invalid_request_error", "Missing file.", "file"))
			return
		}
		data, _ := io.ReadAll(f)
		b.mu.Lock()
		id := b.next("file-")
		b.files[id] = data
		b.mu.Unlock()
		writeObject(w, 200, map[string]any{"id": id, "object": "file", "bytes": len(data), "created_at": time.Now().Unix(),
			"filename": h.Filename, "purpose": "batch", "status": "processed"})
	})
	mux.HandleFunc("POST /v1/batches", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			InputFileID      string `json:"input_file_id"`
			Endpoint         string `json:"endpoint"`
			CompletionWindow string `json:"completion_window"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		b.mu.Lock()
		defer b.mu.Unlock()
		data, ok := b.files[req.InputFileID]
		if !ok || req.Endpoint != "/v1/chat/completions" || req.CompletionWindow != "24h" {
			w.WriteHeader(400)
			w.Write(OpenAIError(400, "invalid_request_error", "Bad batch: unknown file, endpoint or window.", "input_file_id"))
			return
		}
		fb := &fakeBatch{id: b.next("batch_"), input: req.InputFileID, lines: splitLines(data), created: time.Now()}
		b.batches[fb.id] = fb
		writeObject(w, 200, b.openAIBatch(fb))
	})
	mux.HandleFunc("GET /v1/batches/{id}", func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		defer b.mu.Unlock()
		fb, ok := b.batches[r.PathValue("id")]
		if !ok {
			w.WriteHeader(404)
			w.Write(OpenAIError(404, "invalid_request_error", "No such batch.", ""))
			return
		}
		if err := b.poll(fb); err != nil {
			w.WriteHeader(500)
			return
		}
		writeObject(w, 200, b.openAIBatch(fb))
	})
	mux.HandleFunc("GET /v1/files/{id}/content", func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		data, ok := b.files[r.PathValue("id")]
		b.mu.Unlock()
		if !ok {
			w.WriteHeader(404)
			w.Write(OpenAIError(404, "invalid_request_error", "No such file.", ""))
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(data)
	})
}

func (b *Batches) openAIBatch(fb *fakeBatch) map[string]any {
	status := "in_progress"
	if fb.polls == 0 {
		status = "validating"
	}
	o := map[string]any{"id": fb.id, "object": "batch", "endpoint": "/v1/chat/completions", "input_file_id": fb.input,
		"completion_window": "24h", "created_at": fb.created.Unix(), "expires_at": fb.created.Add(24 * time.Hour).Unix(),
		"request_counts": map[string]int{"total": len(fb.lines), "completed": fb.ok, "failed": fb.failed}}
	if fb.ended {
		status = "completed"
		if b.ExpireAfter > 0 && b.ExpireAfter < len(fb.lines) {
			status = "expired"
			o["expired_at"] = time.Now().Unix()
		} else {
			o["completed_at"] = time.Now().Unix()
		}
		o["output_file_id"] = fb.output
		if fb.errs != "" {
			o["error_file_id"] = fb.errs
		}
	}
	o["status"] = status
	return o
}

// Anthropic: POST /v1/messages/batches, GET /v1/messages/batches/{id},
// GET /v1/messages/batches/{id}/results.
func (b *Batches) anthropicRoutes(mux *http.ServeMux, base func() string) {
	mux.HandleFunc("POST /v1/messages/batches", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Requests []json.RawMessage `json:"requests"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Requests) == 0 {
			w.WriteHeader(400)
			w.Write(AnthropicError("invalid_request_error", "requests: at least one request is required"))
			return
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		fb := &fakeBatch{id: b.next("msgbatch_"), created: time.Now()}
		for _, q := range req.Requests {
			fb.lines = append(fb.lines, q)
		}
		b.batches[fb.id] = fb
		writeObject(w, 200, b.anthropicBatch(fb, base()))
	})
	mux.HandleFunc("GET /v1/messages/batches/{id}", func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		defer b.mu.Unlock()
		fb, ok := b.batches[r.PathValue("id")]
		if !ok {
			w.WriteHeader(404)
			w.Write(AnthropicError("not_found_error", "No such batch."))
			return
		}
		if err := b.poll(fb); err != nil {
			w.WriteHeader(500)
			return
		}
		writeObject(w, 200, b.anthropicBatch(fb, base()))
	})
	mux.HandleFunc("GET /v1/messages/batches/{id}/results", func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		defer b.mu.Unlock()
		fb, ok := b.batches[r.PathValue("id")]
		if !ok || !fb.ended {
			w.WriteHeader(404)
			w.Write(AnthropicError("not_found_error", "The batch has no results yet."))
			return
		}
		w.Header().Set("Content-Type", "application/binary")
		w.Write(fb.results)
	})
}

func (b *Batches) anthropicBatch(fb *fakeBatch, base string) map[string]any {
	counts := map[string]int{"processing": len(fb.lines), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
	o := map[string]any{"id": fb.id, "type": "message_batch", "processing_status": "in_progress",
		"created_at": fb.created.Format(time.RFC3339), "expires_at": fb.created.Add(24 * time.Hour).Format(time.RFC3339),
		"ended_at": nil, "archived_at": nil, "cancel_initiated_at": nil, "results_url": nil, "request_counts": counts}
	if fb.ended {
		expired := 0
		if b.ExpireAfter > 0 && b.ExpireAfter < len(fb.lines) {
			expired = len(fb.lines) - b.ExpireAfter
		}
		counts["processing"], counts["succeeded"], counts["expired"] = 0, fb.ok, expired
		counts["errored"] = fb.failed - expired
		o["processing_status"] = "ended"
		o["ended_at"] = time.Now().Format(time.RFC3339)
		o["results_url"] = strings.TrimSuffix(base, "/") + "/v1/messages/batches/" + fb.id + "/results"
	}
	return o
}
