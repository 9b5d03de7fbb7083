package sim

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

var hunkHeader = regexp.MustCompile(`(?m)^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@`)

// FileDiff returns a git-style unified diff of one file, its hunk line
// numbers shifted by offset (where the snippet sits in the file).
func FileDiff(file, before, after string, offset int) (string, error) {
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(before), B: difflib.SplitLines(after),
		FromFile: "a/" + file, ToFile: "b/" + file, Context: 3,
	})
	if err != nil {
		return "", fmt.Errorf("diff %s: %w", file, err)
	}
	if d == "" {
		return "", fmt.Errorf("diff %s: no change", file)
	}
	d = hunkHeader.ReplaceAllStringFunc(d, func(h string) string {
		m := hunkHeader.FindStringSubmatch(h)
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[3])
		return fmt.Sprintf("@@ -%d%s +%d%s @@", a+offset, m[2], b+offset, m[4])
	})
	return "diff --git a/" + file + " b/" + file + "\n" + strings.TrimRight(d, "\n") + "\n", nil
}
