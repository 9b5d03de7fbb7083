package acr

import (
	"regexp"
	"slices"
	"strings"
)

// fenceRE finds a Markdown code fence line: ``` or ~~~ with an optional
// language tag.
var fenceRE = regexp.MustCompile("(?m)^[ \t]*(```+|~~~+)[ \t]*([A-Za-z0-9_+#.-]*)[^\n]*$")

var langAliases = map[string][]string{
	"python": {"python", "py", "python3"},
	"go":     {"go", "golang"},
}

// ExtractCode finds the code in a model's answer: the longest fenced block
// tagged with the language (or its aliases), else the longest untagged
// block, else the longest block of any tag; a block cut off by the end of
// the answer counts. An answer with no fence at all is taken as code when
// it is not empty. It returns "" when there is no code.
func ExtractCode(answer, lang string) string {
	type block struct {
		tag, code string
	}
	var blocks []block
	locs := fenceRE.FindAllStringSubmatchIndex(answer, -1)
	for i := 0; i < len(locs); i++ {
		open := locs[i]
		marker := answer[open[2]:open[3]]
		tag := strings.ToLower(answer[open[4]:open[5]])
		start := open[1] + 1
		if start > len(answer) {
			start = len(answer)
		}
		end, next := len(answer), len(locs)
		for j := i + 1; j < len(locs); j++ {
			c := locs[j]
			m := answer[c[2]:c[3]]
			if c[4] == c[5] && strings.HasPrefix(m, marker[:3]) && len(m) >= len(marker) {
				end, next = c[0], j
				break
			}
		}
		blocks = append(blocks, block{tag, strings.Trim(answer[start:end], "\n")})
		i = next
	}
	if len(blocks) == 0 {
		return strings.Trim(answer, "\n")
	}
	pick := func(ok func(tag string) bool) string {
		best := ""
		for _, b := range blocks {
			if ok(b.tag) && len(b.code) > len(best) {
				best = b.code
			}
		}
		return best
	}
	aliases := langAliases[lang]
	if c := pick(func(t string) bool { return t != "" && slices.Contains(aliases, t) }); c != "" {
		return c
	}
	if c := pick(func(t string) bool { return t == "" }); c != "" {
		return c
	}
	return pick(func(string) bool { return true })
}
