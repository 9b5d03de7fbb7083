package codehost

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
)

// Answer is a stored answer to a GET: its ETag, the headers that matter
// to a client reading it again (pagination links, content type) and the
// body.
type Answer struct {
	ETag   string
	Header http.Header
	Body   []byte
}

// AnswerStore keeps the last answer to each URL that came with an ETag.
type AnswerStore interface {
	ETag(ctx context.Context, url string) (*Answer, bool, error)
	PutETag(ctx context.Context, url, etag string, header http.Header, body []byte) error
}

// keptHeaders are the stored headers given back with a stored body.
var keptHeaders = []string{"Content-Type", "Link"}

// Requests counts what a client sent and what came back unchanged.
type Requests struct {
	Sent        atomic.Int64 // requests sent to the host
	Conditional atomic.Int64 // of which carried If-None-Match
	NotModified atomic.Int64 // answered 304 Not Modified
}

// ETagTransport makes every GET conditional when an answer to its URL is
// stored: it sends If-None-Match, and on 304 Not Modified gives the client
// the stored answer as a 200 (with the 304's own headers, so rate-limit
// figures stay current). A 200 with an ETag is stored for next time. At
// GitHub, a 304 to an authorised request does not count against the rate
// limit, so a re-import costs little.
type ETagTransport struct {
	Base  http.RoundTripper
	Store AnswerStore
	Count *Requests
}

// RoundTrip implements http.RoundTripper.
func (t *ETagTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	count := t.Count
	if count == nil {
		count = &Requests{}
	}
	if req.Method != http.MethodGet {
		count.Sent.Add(1)
		return base.RoundTrip(req)
	}
	// The same URL asked for as a diff and as JSON are two answers.
	key := req.URL.String() + " " + req.Header.Get("Accept")
	stored, ok, err := t.Store.ETag(req.Context(), key)
	if err != nil {
		return nil, err
	}
	if ok {
		req = req.Clone(req.Context())
		req.Header.Set("If-None-Match", stored.ETag)
		count.Conditional.Add(1)
	}
	count.Sent.Add(1)
	resp, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	switch {
	case ok && resp.StatusCode == http.StatusNotModified:
		count.NotModified.Add(1)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		h := resp.Header.Clone()
		for _, k := range keptHeaders {
			h.Del(k)
			for _, v := range stored.Header.Values(k) {
				h.Add(k, v)
			}
		}
		h.Set("Content-Length", strconv.Itoa(len(stored.Body)))
		return &http.Response{Status: "200 OK", StatusCode: http.StatusOK, Proto: resp.Proto, ProtoMajor: resp.ProtoMajor,
			ProtoMinor: resp.ProtoMinor, Header: h, Body: io.NopCloser(bytes.NewReader(stored.Body)),
			ContentLength: int64(len(stored.Body)), Request: req}, nil
	case resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "":
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		keep := http.Header{}
		for _, k := range keptHeaders {
			for _, v := range resp.Header.Values(k) {
				keep.Add(k, v)
			}
		}
		if err := t.Store.PutETag(req.Context(), key, resp.Header.Get("ETag"), keep, body); err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	return resp, nil
}
