package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gavelhq/gavel/record"
)

// listValue is a flag of comma-separated values, each checked as the flag
// is read (a wrong one is a usage error naming the flag).
type listValue[T any] struct {
	dst   *[]T
	parse func(string) (T, error)
	typ   string
}

func (v *listValue[T]) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		x, err := v.parse(strings.TrimSpace(part))
		if err != nil {
			return err
		}
		*v.dst = append(*v.dst, x)
	}
	return nil
}

func (v *listValue[T]) String() string {
	if len(*v.dst) == 0 {
		return ""
	}
	return strings.Trim(fmt.Sprint(*v.dst), "[]")
}

func (v *listValue[T]) Type() string { return v.typ }

// statusesVar defines a flag of record statuses (landed, abandoned, ...).
func statusesVar(fl *pflag.FlagSet, dst *[]record.Status, name, usage string) {
	fl.Var(&listValue[record.Status]{dst: dst, parse: record.ParseStatus, typ: "statuses"}, name, usage)
}

// labelsVar defines a flag of labels (pass, fail).
func labelsVar(fl *pflag.FlagSet, dst *[]record.Label, name, usage string) {
	fl.Var(&listValue[record.Label]{dst: dst, parse: record.ParseLabel, typ: "labels"}, name, usage)
}

// bootVar defines --resamples (resamples by default) and --seed of a
// bootstrap.
func bootVar(fl *pflag.FlagSet, resamples *int, seed *uint64, n int) {
	fl.IntVar(resamples, "resamples", n, "bootstrap resamples")
	fl.Uint64Var(seed, "seed", 1, "bootstrap seed")
}
