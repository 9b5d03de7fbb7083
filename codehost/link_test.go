package codehost

import "testing"

// GitHub's closing keywords (close, closes, closed, fix, fixes, fixed,
// resolve, resolves, resolved; any case; an optional colon) link an issue
// of the same repository; a reference to another repository's issue or a
// mention without a keyword does not.
func TestLinkedIssue(t *testing.T) {
	for body, want := range map[string]int{
		"Fixes #12":                     12,
		"this closes #7 and fixes #8":   7,
		"RESOLVED: #3":                  3,
		"fix acme/app#41":               41,
		"Fixes other/repo#5, closes #6": 6,
		"see #9":                        0,
		"prefixes #10":                  0,
		"Closes #0":                     0,
		"":                              0,
		"Resolves https://github.com/acme/app/#2": 0,
	} {
		if got := linkedIssue(body, "acme", "app"); got != want {
			t.Errorf("%q: %d, want %d", body, got, want)
		}
	}
}
