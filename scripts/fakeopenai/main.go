// Command fakeopenai serves the fake OpenAI chat completions API that
// gavel's tests use (llm/llmtest) on the loopback, for benchmarks that
// compare gavel with other tools on the same server: it prints its base
// URL and serves until killed. Every answer is the same judge verdict,
// after -latency.
//
//	go run ./scripts/fakeopenai -latency 20ms
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gavelhq/gavel/llm/llmtest"
)

func main() {
	latency := flag.Duration("latency", 20*time.Millisecond, "time before each answer")
	addr := flag.String("addr", "", "serve on this address too (host:port), through a proxy to the fake server: a fixed address that a tool's cache keys can keep")
	prints := flag.String("fingerprints", "", "on exit, write each call's fingerprint (a hash of its messages and schema), sorted, to this file")
	flag.Parse()
	srv := llmtest.NewOpenAI()
	defer srv.Close()
	srv.Latency = *latency
	srv.Answer = func(*llmtest.Call) string {
		return `{"reasoning":"The change does what the task asks on ordinary and boundary inputs.","verdict":"pass"}`
	}
	base := srv.URL
	if *addr != "" {
		lis, err := net.Listen("tcp", *addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakeopenai:", err)
			os.Exit(1)
		}
		target, _ := url.Parse(srv.URL)
		go http.Serve(lis, httputil.NewSingleHostReverseProxy(target))
		base = "http://" + lis.Addr().String()
	}
	fmt.Println(base + "/v1")
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	<-stop
	fmt.Fprintf(os.Stderr, "fakeopenai: %d calls\n", srv.Count())
	if *prints != "" {
		var lines []string
		for _, c := range srv.Calls() {
			h := sha256.Sum256([]byte(c.System + "\x00" + strings.Join(c.Users, "\x00") + "\x00" + c.SchemaName))
			lines = append(lines, hex.EncodeToString(h[:]))
		}
		sort.Strings(lines)
		if err := os.WriteFile(*prints, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "fakeopenai:", err)
			os.Exit(1)
		}
	}
}
