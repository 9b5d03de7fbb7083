package roles

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/llm"
)

var (
	reMaxChars = regexp.MustCompile(`in at most (\d+) characters in all`)
	reOverCap  = regexp.MustCompile(`over the cap of (\d+)`)
	reWord     = regexp.MustCompile(`[a-z]{4,}`)
)

// lessonsHeading opens the section where the simulated applier adds
// reasons to a system prompt.
const lessonsHeading = "Lessons from this team's recorded outcomes:"

// edit is one accepted edit as the applier reads it.
type edit struct{ kind, text, target string }

func readEdits(s string) []edit {
	var out []edit
	for _, line := range strings.Split(s, "\n") {
		kind, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "- "), ": ")
		if !ok {
			continue
		}
		e := edit{kind: kind}
		switch kind {
		case "reword":
			from, to, _ := strings.Cut(rest, " -> ")
			e.target, _ = strconv.Unquote(from)
			e.text, _ = strconv.Unquote(to)
		case "remove":
			e.target, _ = strconv.Unquote(rest)
		default:
			e.text = rest
		}
		out = append(out, e)
	}
	return out
}

// apply rewrites a judge prompt with the accepted edits. Like a model
// asked to carry every edit, its first revision carries them all, whatever
// the length; told that a revision was over the cap, it keeps the edits in
// the order given (the best supported first) while they fit. A rubric
// judge's reasons go into the check whose question shares the most words
// with them, or into the system prompt when none does.
func apply(p Prompt, req *llm.Request) map[string]any {
	maxChars := 1 << 30
	for _, m := range req.Messages {
		if m := reMaxChars.FindStringSubmatch(m.Content); m != nil {
			maxChars, _ = strconv.Atoi(m[1])
		}
	}
	trim := false
	if p.Repair {
		if m := reOverCap.FindStringSubmatch(LastUser(req)); m != nil {
			trim = true
			maxChars, _ = strconv.Atoi(m[1])
		}
	}
	system := p.Data["judge_prompt"]
	var checks []map[string]string
	rubric := req.Schema.Name == "revised_prompt_rubric"
	if rubric {
		json.Unmarshal([]byte(p.Data["checks"]), &checks)
	}
	size := func() int {
		n := len(strings.TrimSpace(system)) + 1
		for _, c := range checks {
			n += len(c["question"])
		}
		return n
	}
	edits := readEdits(p.Data["edits"])
	// Removals and rewordings first: they make room.
	var ordered []edit
	for _, e := range edits {
		if e.kind == "remove" || e.kind == "reword" {
			ordered = append(ordered, e)
		}
	}
	for _, e := range edits {
		if e.kind != "remove" && e.kind != "reword" {
			ordered = append(ordered, e)
		}
	}
	for _, e := range ordered {
		saved, savedChecks := system, cloneChecks(checks)
		switch e.kind {
		case "remove":
			system = strings.Replace(system, e.target, "", 1)
		case "reword":
			system = strings.Replace(system, e.target, e.text, 1)
		default:
			if strings.Contains(system, e.text) || inChecks(checks, e.text) {
				break // already there
			}
			if i := bestCheck(checks, e.text); i >= 0 {
				checks[i]["question"] += " " + e.text
				break
			}
			if !strings.Contains(system, lessonsHeading) {
				system = insertBeforeAnswer(system, "\n"+lessonsHeading+"\n")
			}
			system = strings.Replace(system, lessonsHeading+"\n", lessonsHeading+"\n- "+e.text+"\n", 1)
		}
		if trim && size() > maxChars {
			system, checks = saved, savedChecks
		}
	}
	out := map[string]any{"system": system, "conflicts": []string{}}
	if rubric {
		out["checks"] = checks
	}
	return out
}

// stopWords are words too common in review prompts to place a reason.
var stopWords = map[string]bool{"change": true, "changes": true, "fail": true, "reason": true, "does": true,
	"that": true, "this": true, "with": true, "when": true, "what": true, "where": true, "from": true, "before": true,
	"after": true, "still": true, "same": true, "even": true, "must": true, "should": true, "would": true,
	"not": true, "never": true, "only": true, "than": true, "them": true, "they": true, "their": true, "into": true}

// bestCheck is the check whose question shares the most words with a
// reason (at least two), or -1.
func bestCheck(checks []map[string]string, text string) int {
	words := map[string]bool{}
	for _, w := range reWord.FindAllString(strings.ToLower(text), -1) {
		if !stopWords[w] {
			words[stem(w)] = true
		}
	}
	best, bestN := -1, 1
	for i, c := range checks {
		n := 0
		seen := map[string]bool{}
		for _, w := range reWord.FindAllString(strings.ToLower(c["question"]), -1) {
			if s := stem(w); words[s] && !seen[s] {
				seen[s] = true
				n++
			}
		}
		if n > bestN {
			best, bestN = i, n
		}
	}
	return best
}

func stem(w string) string {
	for _, suf := range []string{"ing", "es", "ed", "s"} {
		if len(w) > len(suf)+3 && strings.HasSuffix(w, suf) {
			return w[:len(w)-len(suf)]
		}
	}
	return w
}

func inChecks(checks []map[string]string, text string) bool {
	for _, c := range checks {
		if strings.Contains(c["question"], text) {
			return true
		}
	}
	return false
}

func cloneChecks(cs []map[string]string) []map[string]string {
	out := make([]map[string]string, len(cs))
	for i, c := range cs {
		out[i] = map[string]string{"name": c["name"], "question": c["question"]}
	}
	return out
}

// insertBeforeAnswer puts text before the prompt's closing paragraph about
// the answer format, or at the end.
func insertBeforeAnswer(system, text string) string {
	if i := strings.LastIndex(system, "\nAnswer with a JSON object"); i >= 0 {
		return system[:i] + text + system[i:]
	}
	return system + "\n" + text
}
