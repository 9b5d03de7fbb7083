package sim

import (
	"fmt"
	"regexp"
	"strings"
)

// Effect is what a signal does to a change's outcome in the simulated world.
type Effect int

// The effects.
const (
	// Fatal signals break the change: its tests fail or reviewers reject it.
	Fatal Effect = iota
	// Benign signals change nothing about the outcome, whatever a naive
	// reviewer makes of them.
	Benign
)

func (e Effect) String() string {
	if e == Fatal {
		return "fatal"
	}
	return "benign"
}

// Snippet is one way a signal shows in a patch: a file's text before and
// after, which becomes a unified diff hunk.
type Snippet struct {
	File          string
	Before, After string
}

// Signal is one visible trait of an agent's patch. The simulated world
// builds patches from signals, decides outcomes from them, and the
// simulated judge reads prompts for them.
type Signal struct {
	// Name identifies the signal in records' meta and in tests.
	Name string
	// Phrase is the world's plain-English description of the signal, for
	// tests and documentation; no simulated model keys on it.
	Phrase string
	// Prior is how likely the signal is fatal in a world: each world
	// draws which signals break its changes from these (a dependency bump
	// that breaks one codebase's build is harmless in another). Only the
	// world reads it; no simulated model does.
	Prior float64
	// Naive is the simulated judge's bias when its prompt does not say
	// what to make of the signal: the probability that a naive reviewer
	// who noticed it fails a patch for it (negative: the probability it
	// passes the patch for it, whatever else it saw).
	Naive float64
	// Visible is how often the simulated judge notices the signal without
	// a reference to compare with; against a reference, a hunk outside
	// the reference's scope always stands out.
	Visible float64
	// Check is the index of the rubric check (of five) this signal bears
	// on, for the simulated rubric judge.
	Check int
	// Taste marks a trait a reviewer may hold against a change that
	// alters no behaviour a test checks (formatting, logging, a version
	// bump, comments, a TODO): a judge asked to predict the outcome
	// rather than to review holds it against a change less often
	// (OutcomeTaste). Whether it fails changes is the world's (Prior).
	Taste bool
	// Snippets are the signal's forms; Detect finds the signal in a patch.
	Snippets []Snippet
	Detect   func(patch string) bool
}

// lines returns the added or removed lines of a patch (without the +/-),
// skipping file headers.
func lines(patch string, sign byte) []string {
	var out []string
	for _, l := range strings.Split(patch, "\n") {
		if len(l) == 0 || l[0] != sign || strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---") {
			continue
		}
		out = append(out, l[1:])
	}
	return out
}

// files splits a patch into its per-file diffs.
func files(patch string) []string {
	parts := strings.Split(patch, "diff --git ")
	out := parts[:0]
	for _, p := range parts {
		if strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	return out
}

func anyMatch(ls []string, re *regexp.Regexp) bool {
	for _, l := range ls {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

func countMatch(ls []string, re *regexp.Regexp) int {
	n := 0
	for _, l := range ls {
		if re.MatchString(l) {
			n++
		}
	}
	return n
}

var (
	reErrCheck   = regexp.MustCompile(`^\s*if err != nil`)
	reLeLen      = regexp.MustCompile(`<= len\(`)
	reTestFunc   = regexp.MustCompile(`^func Test\w*\(t \*testing\.T\)`)
	reExported   = regexp.MustCompile(`^func (\([^)]*\) )?([A-Z]\w*)\(`)
	reDiscard    = regexp.MustCompile(`^\s*_ = \w*[eE]rr\w*\b|^\s*_ = [\w.]+\(.*\)\s*$`)
	reNilMapDecl = regexp.MustCompile(`^\s*var \w+ map\[`)
	reMakeMap    = regexp.MustCompile(`make\(map\[`)
	reConstRet   = regexp.MustCompile(`^\s*return (\d+|"[^"]*"|true|false), nil\s*$`)
	reBackground = regexp.MustCompile(`context\.Background\(\)`)
	reLock       = regexp.MustCompile(`^\s*\w+(\.\w+)*\.(Lock|RLock)\(\)`)
	reLog        = regexp.MustCompile(`\blog\.(Printf|Println|Print)\(|\bslog\.(Info|Debug|Warn)\(`)
	reRequire    = regexp.MustCompile(`^\s*(require\s+)?[\w./-]+\s+v\d+\.\d+\.\d+`)
	reComment    = regexp.MustCompile(`^\s*//`)
	reTodo       = regexp.MustCompile(`//\s*(TODO|FIXME)\b`)
)

// DroppedErrorCheck deletes an error check: the error is then ignored.
var DroppedErrorCheck = &Signal{
	Name:   "dropped_error_check",
	Phrase: "drops an error check (deletes an `if err != nil` return)",
	Prior:  0.85, Naive: 0.3, Visible: 0.7, Check: 3,
	Snippets: []Snippet{
		{"store/save.go", "func (s *Store) Save(ctx context.Context, r Record) error {\n\tdata, err := json.Marshal(r)\n\tif err != nil {\n\t\treturn fmt.Errorf(\"encode record %s: %w\", r.ID, err)\n\t}\n\treturn s.db.Put(ctx, r.ID, data)\n}\n",
			"func (s *Store) Save(ctx context.Context, r Record) error {\n\tdata, err := json.Marshal(r)\n\treturn s.db.Put(ctx, r.ID, data)\n}\n"},
		{"config/load.go", "func Load(path string) (*Config, error) {\n\tb, err := os.ReadFile(path)\n\tif err != nil {\n\t\treturn nil, err\n\t}\n\tvar c Config\n\treturn &c, yaml.Unmarshal(b, &c)\n}\n",
			"func Load(path string) (*Config, error) {\n\tb, _ := os.ReadFile(path)\n\tvar c Config\n\treturn &c, yaml.Unmarshal(b, &c)\n}\n"},
	},
	Detect: func(p string) bool { return anyMatch(lines(p, '-'), reErrCheck) },
}

// OffByOne uses a loop bound one past the end.
var OffByOne = &Signal{
	Name:   "off_by_one",
	Phrase: "uses an off-by-one loop bound (`<= len(...)`)",
	Prior:  0.95, Naive: 0.25, Visible: 0.5, Check: 1,
	Snippets: []Snippet{
		{"inventory/total.go", "func Total(items []Item) int {\n\tsum := 0\n\tfor i := 0; i < len(items); i++ {\n\t\tsum += items[i].Qty\n\t}\n\treturn sum\n}\n",
			"func Total(items []Item) int {\n\tsum := 0\n\tfor i := 0; i <= len(items); i++ {\n\t\tsum += items[i].Qty\n\t}\n\treturn sum\n}\n"},
		{"text/window.go", "func Windows(s []string, n int) [][]string {\n\tvar out [][]string\n\tfor i := 0; i+n < len(s)+1; i++ {\n\t\tout = append(out, s[i:i+n])\n\t}\n\treturn out\n}\n",
			"func Windows(s []string, n int) [][]string {\n\tvar out [][]string\n\tfor i := 0; i+n <= len(s); i++ {\n\t\tout = append(out, s[i:i+n+1])\n\t}\n\treturn out\n}\n"},
	},
	Detect: func(p string) bool { return anyMatch(lines(p, '+'), reLeLen) },
}

// DeletedTest removes an existing test.
var DeletedTest = &Signal{
	Name:   "deleted_test",
	Phrase: "deletes an existing test",
	Prior:  0.5, Naive: 0.6, Visible: 0.9, Check: 2,
	Snippets: []Snippet{
		{"store/save_test.go", "func TestSaveRoundTrip(t *testing.T) {\n\ts := newStore(t)\n\tmustSave(t, s, Record{ID: \"a\"})\n}\n\nfunc TestSaveRejectsEmptyID(t *testing.T) {\n\ts := newStore(t)\n\tif err := s.Save(ctx, Record{}); err == nil {\n\t\tt.Fatal(\"empty ID accepted\")\n\t}\n}\n",
			"func TestSaveRoundTrip(t *testing.T) {\n\ts := newStore(t)\n\tmustSave(t, s, Record{ID: \"a\"})\n}\n"},
		{"api/handler_test.go", "func TestHandlerAuth(t *testing.T) {\n\trec := serve(t, \"GET\", \"/items\", \"\")\n\tif rec.Code != 401 {\n\t\tt.Fatalf(\"status %d\", rec.Code)\n\t}\n}\n\nfunc TestHandlerList(t *testing.T) {\n\trec := serve(t, \"GET\", \"/items\", token)\n\tcheckJSON(t, rec)\n}\n",
			"func TestHandlerList(t *testing.T) {\n\trec := serve(t, \"GET\", \"/items\", token)\n\tcheckJSON(t, rec)\n}\n"},
	},
	Detect: func(p string) bool { return anyMatch(lines(p, '-'), reTestFunc) },
}

// RenamedExportedAPI renames an exported function that callers use.
var RenamedExportedAPI = &Signal{
	Name:   "renamed_exported_api",
	Phrase: "renames an exported function that other packages call",
	Prior:  0.7, Naive: 0.35, Visible: 0.5, Check: 2,
	Snippets: []Snippet{
		{"auth/token.go", "// ParseToken reads a signed token.\nfunc ParseToken(s string) (*Token, error) {\n\treturn parse(s, keys)\n}\n",
			"// DecodeToken reads a signed token.\nfunc DecodeToken(s string) (*Token, error) {\n\treturn parse(s, keys)\n}\n"},
		{"queue/queue.go", "// Push adds a job at the back.\nfunc (q *Queue) Push(j Job) {\n\tq.jobs = append(q.jobs, j)\n}\n",
			"// Enqueue adds a job at the back.\nfunc (q *Queue) Enqueue(j Job) {\n\tq.jobs = append(q.jobs, j)\n}\n"},
	},
	Detect: func(p string) bool {
		// Within one file, an exported function (not a test) goes and
		// another appears.
		for _, f := range files(p) {
			removed := map[string]bool{}
			for _, l := range lines(f, '-') {
				if m := reExported.FindStringSubmatch(l); m != nil && !strings.HasPrefix(m[2], "Test") {
					removed[m[2]] = true
				}
			}
			for _, l := range lines(f, '+') {
				if m := reExported.FindStringSubmatch(l); m != nil && !strings.HasPrefix(m[2], "Test") && !removed[m[2]] && len(removed) > 0 {
					return true
				}
			}
		}
		return false
	},
}

// SwallowedError discards an error instead of handling it.
var SwallowedError = &Signal{
	Name:   "swallowed_error",
	Phrase: "discards an error with `_ =` instead of handling it",
	Prior:  0.6, Naive: 0.3, Visible: 0.8, Check: 3,
	Snippets: []Snippet{
		{"export/write.go", "func (w *Writer) Flush() error {\n\tif err := w.buf.Flush(); err != nil {\n\t\treturn err\n\t}\n\treturn w.f.Sync()\n}\n",
			"func (w *Writer) Flush() error {\n\terr := w.buf.Flush()\n\t_ = err\n\treturn w.f.Sync()\n}\n"},
		{"cache/evict.go", "func (c *Cache) Evict(key string) error {\n\treturn c.backend.Delete(key)\n}\n",
			"func (c *Cache) Evict(key string) error {\n\t_ = c.backend.Delete(key)\n\treturn nil\n}\n"},
	},
	Detect: func(p string) bool { return anyMatch(lines(p, '+'), reDiscard) },
}

// NilMapWrite writes to a map that is never made.
var NilMapWrite = &Signal{
	Name:   "nil_map_write",
	Phrase: "writes to a map that is never initialised (a nil map)",
	Prior:  0.95, Naive: 0.25, Visible: 0.5, Check: 1,
	Snippets: []Snippet{
		{"stats/count.go", "func CountWords(words []string) map[string]int {\n\tcounts := make(map[string]int, len(words))\n\tfor _, w := range words {\n\t\tcounts[w]++\n\t}\n\treturn counts\n}\n",
			"func CountWords(words []string) map[string]int {\n\tvar counts map[string]int\n\tfor _, w := range words {\n\t\tcounts[w]++\n\t}\n\treturn counts\n}\n"},
		{"graph/index.go", "func Index(edges []Edge) map[string][]string {\n\tout := map[string][]string{}\n\tfor _, e := range edges {\n\t\tout[e.From] = append(out[e.From], e.To)\n\t}\n\treturn out\n}\n",
			"func Index(edges []Edge) map[string][]string {\n\tvar out map[string][]string\n\tfor _, e := range edges {\n\t\tout[e.From] = append(out[e.From], e.To)\n\t}\n\treturn out\n}\n"},
	},
	Detect: func(p string) bool {
		add := lines(p, '+')
		return anyMatch(add, reNilMapDecl) && !anyMatch(add, reMakeMap)
	},
}

// HardcodedResult returns a constant instead of computing.
var HardcodedResult = &Signal{
	Name:   "hardcoded_result",
	Phrase: "returns a hard-coded value instead of computing it",
	Prior:  0.9, Naive: 0.5, Visible: 0.6, Check: 0,
	Snippets: []Snippet{
		{"billing/tax.go", "func Tax(amount int64, region string) (int64, error) {\n\trate, err := rates.Lookup(region)\n\tif err != nil {\n\t\treturn 0, err\n\t}\n\treturn amount * rate / 100, nil\n}\n",
			"func Tax(amount int64, region string) (int64, error) {\n\trate, err := rates.Lookup(region)\n\tif err != nil {\n\t\treturn 0, err\n\t}\n\t_ = rate\n\treturn 42, nil\n}\n"},
		{"version/version.go", "func Current() (string, error) {\n\tinfo, ok := debug.ReadBuildInfo()\n\tif !ok {\n\t\treturn \"\", errNoInfo\n\t}\n\treturn info.Main.Version, nil\n}\n",
			"func Current() (string, error) {\n\treturn \"v1.0.0\", nil\n}\n"},
	},
	Detect: func(p string) bool { return anyMatch(lines(p, '+'), reConstRet) },
}

// IgnoredContext replaces the caller's context.
var IgnoredContext = &Signal{
	Name:   "ignored_context",
	Phrase: "replaces the caller's context with context.Background(), so cancellation is lost",
	Prior:  0.35, Naive: 0.3, Visible: 0.6, Check: 3,
	Snippets: []Snippet{
		{"fetch/client.go", "func (c *Client) Get(ctx context.Context, url string) (*Response, error) {\n\treq, err := http.NewRequestWithContext(ctx, \"GET\", url, nil)\n\tif err != nil {\n\t\treturn nil, err\n\t}\n\treturn c.do(req)\n}\n",
			"func (c *Client) Get(ctx context.Context, url string) (*Response, error) {\n\treq, err := http.NewRequestWithContext(context.Background(), \"GET\", url, nil)\n\tif err != nil {\n\t\treturn nil, err\n\t}\n\treturn c.do(req)\n}\n"},
		{"worker/run.go", "func (w *Worker) Run(ctx context.Context) error {\n\treturn w.loop(ctx, w.jobs)\n}\n",
			"func (w *Worker) Run(ctx context.Context) error {\n\treturn w.loop(context.Background(), w.jobs)\n}\n"},
	},
	Detect: func(p string) bool { return anyMatch(lines(p, '+'), reBackground) },
}

// UnlockedAccess removes the lock around shared state.
var UnlockedAccess = &Signal{
	Name:   "unlocked_access",
	Phrase: "removes the mutex lock around shared state (a data race)",
	Prior:  0.5, Naive: 0.35, Visible: 0.5, Check: 2,
	Snippets: []Snippet{
		{"session/store.go", "func (s *Sessions) Put(id string, v *Session) {\n\ts.mu.Lock()\n\tdefer s.mu.Unlock()\n\ts.byID[id] = v\n}\n",
			"func (s *Sessions) Put(id string, v *Session) {\n\ts.byID[id] = v\n}\n"},
		{"metrics/counter.go", "func (c *Counter) Inc(name string) {\n\tc.mu.Lock()\n\tc.n[name]++\n\tc.mu.Unlock()\n}\n",
			"func (c *Counter) Inc(name string) {\n\tc.n[name]++\n}\n"},
	},
	Detect: func(p string) bool { return anyMatch(lines(p, '-'), reLock) },
}

// CosmeticReformat reorders and reformats code without changing behaviour:
// a large diff that does nothing.
var CosmeticReformat = &Signal{
	Name:   "cosmetic_reformat",
	Phrase: "reformats or reorders code without changing behaviour (a large diff)",
	Prior:  0.15, Naive: 0.45, Visible: 0.95, Check: 4, Taste: true,
	Snippets: []Snippet{
		{"model/types.go", "type Item struct {\n\tID string\n\tName string\n\tQty int\n\tPrice int64\n\tTags []string\n}\n\ntype Order struct {\n\tID string\n\tItems []Item\n\tCustomer string\n\tStatus string\n}\n\nconst (\n\tStatusNew = \"new\"\n\tStatusPaid = \"paid\"\n\tStatusShipped = \"shipped\"\n)\n",
			"const (\n\tStatusNew     = \"new\"\n\tStatusPaid    = \"paid\"\n\tStatusShipped = \"shipped\"\n)\n\ntype Order struct {\n\tID       string\n\tCustomer string\n\tItems    []Item\n\tStatus   string\n}\n\ntype Item struct {\n\tID    string\n\tName  string\n\tPrice int64\n\tQty   int\n\tTags  []string\n}\n"},
		{"routes/table.go", "var routes = []Route{\n\t{\"GET\", \"/items\", listItems},\n\t{\"POST\", \"/items\", createItem},\n\t{\"GET\", \"/items/{id}\", getItem},\n\t{\"DELETE\", \"/items/{id}\", deleteItem},\n\t{\"GET\", \"/orders\", listOrders},\n\t{\"POST\", \"/orders\", createOrder},\n\t{\"GET\", \"/health\", health},\n}\n",
			"var routes = []Route{\n\t{\"GET\",    \"/items\",      listItems},\n\t{\"POST\",   \"/items\",      createItem},\n\t{\"GET\",    \"/items/{id}\", getItem},\n\t{\"DELETE\", \"/items/{id}\", deleteItem},\n\t{\"GET\",    \"/orders\",     listOrders},\n\t{\"POST\",   \"/orders\",     createOrder},\n\t{\"GET\",    \"/health\",     health},\n}\n"},
	},
	Detect: func(p string) bool {
		// Many changed lines whose content, white space aside, is only moved.
		norm := func(ls []string) map[string]int {
			m := map[string]int{}
			for _, l := range ls {
				if k := strings.Join(strings.Fields(l), ""); k != "" {
					m[k]++
				}
			}
			return m
		}
		rem, add := norm(lines(p, '-')), norm(lines(p, '+'))
		moved := 0
		for k, n := range rem {
			moved += min(n, add[k])
		}
		return moved >= 6
	},
}

// AddedLogging adds log statements.
var AddedLogging = &Signal{
	Name:   "added_logging",
	Phrase: "adds logging statements",
	Prior:  0.1, Naive: 0.1, Visible: 0.9, Check: 4, Taste: true,
	Snippets: []Snippet{
		{"sync/run.go", "func (s *Syncer) Run(ctx context.Context) error {\n\tfor _, src := range s.sources {\n\t\tif err := s.pull(ctx, src); err != nil {\n\t\t\treturn err\n\t\t}\n\t}\n\treturn nil\n}\n",
			"func (s *Syncer) Run(ctx context.Context) error {\n\tlog.Printf(\"sync: %d sources\", len(s.sources))\n\tfor _, src := range s.sources {\n\t\tlog.Printf(\"sync: pulling %s\", src.Name)\n\t\tif err := s.pull(ctx, src); err != nil {\n\t\t\treturn err\n\t\t}\n\t}\n\treturn nil\n}\n"},
		{"mail/send.go", "func Send(m Message) error {\n\treturn smtpSend(m)\n}\n",
			"func Send(m Message) error {\n\tslog.Info(\"sending mail\", \"to\", m.To)\n\treturn smtpSend(m)\n}\n"},
	},
	Detect: func(p string) bool { return anyMatch(lines(p, '+'), reLog) },
}

// DependencyBump updates a module version in go.mod.
var DependencyBump = &Signal{
	Name:   "dependency_bump",
	Phrase: "updates a dependency version in go.mod",
	Prior:  0.35, Naive: 0.25, Visible: 0.95, Check: 2, Taste: true,
	Snippets: []Snippet{
		{"go.mod", "require (\n\tgithub.com/google/uuid v1.5.0\n\tgolang.org/x/sync v0.6.0\n)\n",
			"require (\n\tgithub.com/google/uuid v1.6.0\n\tgolang.org/x/sync v0.6.0\n)\n"},
		{"go.mod", "require (\n\tgithub.com/spf13/cobra v1.8.0\n\tgolang.org/x/text v0.14.0\n)\n",
			"require (\n\tgithub.com/spf13/cobra v1.8.1\n\tgolang.org/x/text v0.14.0\n)\n"},
	},
	Detect: func(p string) bool {
		return strings.Contains(p, "+++ b/go.mod") && anyMatch(lines(p, '+'), reRequire)
	},
}

// AddedComments adds or rewrites doc comments.
var AddedComments = &Signal{
	Name:   "added_comments",
	Phrase: "adds or rewrites doc comments",
	Prior:  0.03, Naive: -0.05, Visible: 0.9, Check: 4, Taste: true,
	Snippets: []Snippet{
		{"geo/distance.go", "func Distance(a, b Point) float64 {\n\treturn haversine(a, b)\n}\n",
			"// Distance returns the great-circle distance between a and b in\n// kilometres, by the haversine formula.\nfunc Distance(a, b Point) float64 {\n\treturn haversine(a, b)\n}\n"},
		{"slug/slug.go", "func Make(title string) string {\n\treturn clean(strings.ToLower(title))\n}\n",
			"// Make turns a title into a URL slug: lower case, with runs of\n// anything but letters and digits replaced by one hyphen.\nfunc Make(title string) string {\n\treturn clean(strings.ToLower(title))\n}\n"},
	},
	Detect: func(p string) bool {
		n := 0
		for _, l := range lines(p, '+') {
			if reComment.MatchString(l) && !reTodo.MatchString(l) {
				n++
			}
		}
		return n >= 2
	},
}

// TodoLeft leaves a TODO comment in the code.
var TodoLeft = &Signal{
	Name:   "todo_left",
	Phrase: "leaves a TODO comment",
	Prior:  0.2, Naive: 0.4, Visible: 0.95, Check: 4, Taste: true,
	Snippets: []Snippet{
		{"report/render.go", "func Render(w io.Writer, r *Report) error {\n\treturn tmpl.Execute(w, r)\n}\n",
			"func Render(w io.Writer, r *Report) error {\n\t// TODO: paginate long reports\n\treturn tmpl.Execute(w, r)\n}\n"},
		{"parse/date.go", "func ParseDate(s string) (time.Time, error) {\n\treturn time.Parse(time.DateOnly, s)\n}\n",
			"func ParseDate(s string) (time.Time, error) {\n\t// TODO(agent): accept more layouts\n\treturn time.Parse(time.DateOnly, s)\n}\n"},
	},
	Detect: func(p string) bool { return anyMatch(lines(p, '+'), reTodo) },
}

// NewTest adds a test.
var NewTest = &Signal{
	Name:   "new_test",
	Phrase: "adds a new test",
	Prior:  0.1, Naive: -0.5, Visible: 0.95, Check: 0,
	Snippets: []Snippet{
		{"inventory/total_test.go", "func TestTotalEmpty(t *testing.T) {\n\tif got := Total(nil); got != 0 {\n\t\tt.Fatalf(\"Total(nil) = %d\", got)\n\t}\n}\n",
			"func TestTotalEmpty(t *testing.T) {\n\tif got := Total(nil); got != 0 {\n\t\tt.Fatalf(\"Total(nil) = %d\", got)\n\t}\n}\n\nfunc TestTotalTwo(t *testing.T) {\n\tif got := Total([]Item{{Qty: 2}, {Qty: 3}}); got != 5 {\n\t\tt.Fatalf(\"got %d\", got)\n\t}\n}\n"},
		{"auth/token_test.go", "func TestParseValid(t *testing.T) {\n\tmustParse(t, validToken)\n}\n",
			"func TestParseValid(t *testing.T) {\n\tmustParse(t, validToken)\n}\n\nfunc TestParseExpired(t *testing.T) {\n\tif _, err := ParseToken(expiredToken); err == nil {\n\t\tt.Fatal(\"expired token accepted\")\n\t}\n}\n"},
	},
	Detect: func(p string) bool { return anyMatch(lines(p, '+'), reTestFunc) },
}

// Signals is the catalogue, the ones fatal in most worlds first.
var Signals = []*Signal{
	DroppedErrorCheck, OffByOne, DeletedTest, RenamedExportedAPI, SwallowedError, NilMapWrite,
	HardcodedResult, IgnoredContext, UnlockedAccess,
	CosmeticReformat, AddedLogging, DependencyBump, AddedComments, TodoLeft, NewTest,
}

// SignalByName finds a signal.
func SignalByName(name string) *Signal {
	for _, s := range Signals {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Detect returns the signals present in a patch, in catalogue order.
func Detect(patch string) []*Signal {
	var out []*Signal
	for _, s := range Signals {
		if s.Detect(patch) {
			out = append(out, s)
		}
	}
	return out
}

// Validate checks the catalogue: names unique, every field set, each
// snippet's diff detected by its own signal and by no other.
func Validate() error {
	seen := map[string]bool{}
	for _, s := range Signals {
		switch {
		case s.Name == "" || s.Phrase == "" || len(s.Snippets) == 0 || s.Detect == nil:
			return fmt.Errorf("signal %q: every field must be set", s.Name)
		case seen[s.Name]:
			return fmt.Errorf("signal %q: defined twice", s.Name)
		case s.Check < 0 || s.Check > 4:
			return fmt.Errorf("signal %q: check %d out of 0..4", s.Name, s.Check)
		case s.Prior <= 0 || s.Prior >= 1:
			return fmt.Errorf("signal %q: prior %g out of (0, 1): every signal is fatal in some worlds and not in others", s.Name, s.Prior)
		}
		seen[s.Name] = true
		for i, sn := range s.Snippets {
			d, err := FileDiff(sn.File, sn.Before, sn.After, 0)
			if err != nil {
				return err
			}
			found := Detect(d)
			if len(found) != 1 || found[0] != s {
				var names []string
				for _, f := range found {
					names = append(names, f.Name)
				}
				return fmt.Errorf("signal %q snippet %d: detected as %v", s.Name, i, names)
			}
		}
	}
	return nil
}
