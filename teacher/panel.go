package teacher

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/llm"
	"github.com/gavelhq/gavel/metrics"
	"github.com/gavelhq/gavel/record"
)

// A panel is several teachers, ideally of different model families, each
// deciding alone; a record is kept only when a quorum keeps it, corrected
// only when a quorum corrects it the same way, and otherwise left out. One
// teacher can rationalise any label it is shown; several that must agree
// are harder to talk into it.

// Quorum is how many of a panel's teachers must agree.
type Quorum struct {
	Rule string // "all", "majority" or "count"
	K    int    // for "count"
}

// ParseQuorum reads all, majority or a count K (at least 1).
func ParseQuorum(s string) (Quorum, error) {
	switch s {
	case "", "all":
		return Quorum{Rule: "all"}, nil
	case "majority":
		return Quorum{Rule: "majority"}, nil
	}
	k, err := strconv.Atoi(s)
	if err != nil || k < 1 {
		return Quorum{}, fmt.Errorf("quorum %q: want all, majority or a number of teachers (at least 1)", s)
	}
	return Quorum{Rule: "count", K: k}, nil
}

// Need is how many of n teachers must agree.
func (q Quorum) Need(n int) int {
	switch q.Rule {
	case "majority":
		return n/2 + 1
	case "count":
		return min(q.K, n)
	}
	return n
}

func (q Quorum) String() string {
	if q.Rule == "count" {
		return strconv.Itoa(q.K)
	}
	if q.Rule == "" {
		return "all"
	}
	return q.Rule
}

// ParseModels splits a --teacher-model value into models (llm.SplitModels).
func ParseModels(s string) []string { return llm.SplitModels(s) }

// Member is one teacher of a panel with its decisions.
type Member struct {
	Model     string
	Decisions []Decision
}

// Combine is the panel's decision about each record (in the order of rs):
// keep when at least the quorum keeps the recorded label, correct when at
// least the quorum corrects it to the same label, else abstain. The
// justifications given on are the agreeing teachers', each once.
func Combine(rs []*record.Record, members []Member, q Quorum) []Decision {
	need := q.Need(len(members))
	byID := make([]map[string]Decision, len(members))
	for i, m := range members {
		byID[i] = map[string]Decision{}
		for _, d := range m.Decisions {
			byID[i][d.RecordID] = d
		}
	}
	var out []Decision
	for _, r := range rs {
		var keeps, abstains []Decision
		corrections := map[record.Label][]Decision{}
		decided := 0
		for i := range members {
			d, ok := byID[i][r.ID]
			if !ok {
				continue
			}
			decided++
			switch {
			case d.Invalid || d.Action == Abstain:
				abstains = append(abstains, d)
			case d.Action == Keep:
				keeps = append(keeps, d)
			case d.Action == Correct:
				corrections[d.Label] = append(corrections[d.Label], d)
			}
		}
		if decided == 0 {
			continue
		}
		d := Decision{RecordID: r.ID, Label: r.Outcome.Label, Model: PanelModel(members, q)}
		switch {
		case len(keeps) >= need:
			d.Action, d.Justification = Keep, joinJustifications(keeps)
		case len(corrections[record.Pass]) >= need:
			d.Action, d.Label, d.Justification = Correct, record.Pass, joinJustifications(corrections[record.Pass])
		case len(corrections[record.Fail]) >= need:
			d.Action, d.Label, d.Justification = Correct, record.Fail, joinJustifications(corrections[record.Fail])
		default:
			d.Action = Abstain
			d.Justification = fmt.Sprintf("The panel did not reach its quorum (%d of %d): %d kept, %d corrected, %d abstained.",
				need, len(members), len(keeps), len(corrections[record.Pass])+len(corrections[record.Fail]), len(abstains))
		}
		if len(members) > 0 && len(members[0].Decisions) > 0 {
			d.Prompt = members[0].Decisions[0].Prompt
		}
		out = append(out, d)
	}
	return out
}

// PanelModel names a panel's combined decisions.
func PanelModel(members []Member, q Quorum) string {
	var ms []string
	for _, m := range members {
		ms = append(ms, m.Model)
	}
	return "panel(" + strings.Join(ms, " | ") + "; quorum " + q.String() + ")"
}

func joinJustifications(ds []Decision) string {
	seen := map[string]bool{}
	var parts []string
	for _, d := range ds {
		j := strings.TrimSpace(d.Justification)
		if j == "" || seen[j] {
			continue
		}
		seen[j] = true
		parts = append(parts, j)
	}
	return strings.Join(parts, "\n")
}

// MemberStats are one teacher's counts in a panel.
type MemberStats struct {
	Model     string `json:"model"`
	Family    string `json:"family"`
	Kept      int    `json:"kept"`
	Abstained int    `json:"abstained"`
	Corrected int    `json:"corrected"`
	Invalid   int    `json:"invalid"`
}

// PairAgreement is how two teachers agree on their actions (keep,
// abstain, correct) over the records both decided.
type PairAgreement struct {
	A        string         `json:"a"`
	B        string         `json:"b"`
	Records  int            `json:"records"`
	Observed metrics.Value  `json:"observed_agreement"`
	ScottPi  metrics.Figure `json:"scott_pi"`
}

// PanelStats describe a panel's teachers and how they agree.
type PanelStats struct {
	Quorum   string          `json:"quorum"`
	Teachers []MemberStats   `json:"teachers"`
	Pairwise []PairAgreement `json:"pairwise"`
	// FleissKappa is over the records every teacher decided.
	FleissKappa metrics.Figure `json:"fleiss_kappa"`
	// SameFamily is set when every teacher is of the judge's model
	// family: their agreement then says little about sycophancy.
	SameFamily bool   `json:"same_family_as_judge"`
	Warning    string `json:"warning,omitempty"`
}

// SameFamilyWarning is reported when every teacher shares the judge's
// model family.
const SameFamilyWarning = "every teacher is of the judge's own model family: a panel of one family can share its rationalisations; add a teacher of another family"

// category is a decision's action as an agreement category.
func category(d Decision) int {
	switch {
	case d.Invalid || d.Action == Abstain:
		return 1
	case d.Action == Correct:
		return 2
	}
	return 0
}

// SummarisePanel counts each teacher's decisions and measures their
// agreement, pairwise (Scott's pi) and together (Fleiss' kappa), with
// bootstrap intervals over records.
func SummarisePanel(rs []*record.Record, members []Member, q Quorum, judgeModel string, boot metrics.BootstrapOptions) PanelStats {
	ps := PanelStats{Quorum: q.String()}
	judgeFamily := Family(judgeModel)
	same := len(members) > 0
	index := make([]map[string]int, len(members))
	for i, m := range members {
		st := MemberStats{Model: m.Model, Family: Family(m.Model)}
		index[i] = map[string]int{}
		for _, d := range m.Decisions {
			index[i][d.RecordID] = category(d)
			switch {
			case d.Invalid:
				st.Invalid++
			case d.Action == Keep:
				st.Kept++
			case d.Action == Abstain:
				st.Abstained++
			case d.Action == Correct:
				st.Corrected++
			}
		}
		if st.Family != judgeFamily {
			same = false
		}
		ps.Teachers = append(ps.Teachers, st)
	}
	ps.SameFamily = same
	if same {
		ps.Warning = SameFamilyWarning
	}
	for i := range members {
		for j := i + 1; j < len(members); j++ {
			var a, b []int
			for _, r := range rs {
				ca, okA := index[i][r.ID]
				cb, okB := index[j][r.ID]
				if okA && okB {
					a, b = append(a, ca), append(b, cb)
				}
			}
			pa := PairAgreement{A: members[i].Model, B: members[j].Model, Records: len(a)}
			pa.Observed = metrics.TableOf(a, b, 3).ObservedAgreement()
			pa.ScottPi = metrics.WithCI(len(a), func(idx []int) metrics.Value {
				t := metrics.NewTable(3)
				for _, k := range idx {
					t.Add(a[k], b[k], 1)
				}
				return t.ScottPi()
			}, boot)
			ps.Pairwise = append(ps.Pairwise, pa)
		}
	}
	var counts [][]int
	for _, r := range rs {
		row := make([]int, 3)
		all := true
		for i := range members {
			c, ok := index[i][r.ID]
			if !ok {
				all = false
				break
			}
			row[c]++
		}
		if all && len(members) > 1 {
			counts = append(counts, row)
		}
	}
	if len(members) > 1 {
		ps.FleissKappa = metrics.WithCI(len(counts), func(idx []int) metrics.Value {
			sub := make([][]int, len(idx))
			for n, k := range idx {
				sub[n] = counts[k]
			}
			return metrics.FleissKappa(sub)
		}, boot)
	}
	return ps
}

// families maps words in model names to their makers' families.
var families = []struct{ word, family string }{
	{"gpt", "openai"}, {"o1", "openai"}, {"o3", "openai"}, {"o4", "openai"}, {"davinci", "openai"},
	{"claude", "anthropic"}, {"gemini", "google"}, {"gemma", "google"}, {"llama", "meta"},
	{"qwen", "qwen"}, {"qwq", "qwen"}, {"mistral", "mistral"}, {"mixtral", "mistral"}, {"codestral", "mistral"},
	{"deepseek", "deepseek"}, {"phi", "microsoft"}, {"grok", "xai"}, {"command", "cohere"},
}

// Family is a model's maker, from its name (a model served through an
// OpenAI-compatible server keeps its own family: openai:llama-3 is meta's),
// else its provider. A simulated model's family is its family=NAME
// parameter, else "sim".
func Family(model string) string {
	provider, name, ok := strings.Cut(model, ":")
	if !ok {
		provider, name = "", model
	}
	if provider == "sim" || model == "sim" {
		for _, p := range strings.Split(name, ",") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(p), "family="); ok {
				return v
			}
		}
		return "sim"
	}
	lower := strings.ToLower(name)
	for _, f := range families {
		if strings.Contains(lower, f.word) {
			return f.family
		}
	}
	if provider != "" {
		return provider
	}
	return lower
}

// Families lists the distinct families of models, sorted.
func Families(models []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range models {
		if f := Family(m); !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}
