package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// World is one simulated world's truth: which signals break its changes.
// Each world draws it from the signals' priors (Signal.Prior), so no
// role's fixed beliefs can match every world: a role is right about a
// world only in part, as a real model is about a codebase it has never
// seen, and calibration gains where it learns the world's local truths
// from the outcomes.
type World struct {
	Seed  uint64
	fatal map[*Signal]bool
}

// NewWorld draws the world of a seed: each signal is fatal with its
// prior, from a stream of its own (the records are drawn from another).
func NewWorld(seed uint64) *World {
	rng := rand.New(rand.NewPCG(seed, 0x7472757468)) // "truth"
	w := &World{Seed: seed, fatal: map[*Signal]bool{}}
	for _, s := range Signals {
		w.fatal[s] = rng.Float64() < s.Prior
	}
	return w
}

// WorldWith is a world whose fatal signals are the ones named (any other
// is benign): for tests that redraw a world's truth with everything else
// held fixed. Unknown names are ignored.
func WorldWith(seed uint64, fatal []string) *World {
	w := &World{Seed: seed, fatal: map[*Signal]bool{}}
	for _, s := range Signals {
		w.fatal[s] = slices.Contains(fatal, s.Name)
	}
	return w
}

// ParseFatal is the world of seed whose fatal signals are the names
// given, comma-separated ("none" for no fatal signal); an unknown name is
// an error that lists the known ones.
func ParseFatal(seed uint64, names string) (*World, error) {
	var list []string
	for _, n := range strings.Split(names, ",") {
		if n = strings.TrimSpace(n); n == "" || n == "none" {
			continue
		}
		if !slices.ContainsFunc(Signals, func(s *Signal) bool { return s.Name == n }) {
			var known []string
			for _, s := range Signals {
				known = append(known, s.Name)
			}
			return nil, fmt.Errorf("no signal %q (the signals: %s)", n, strings.Join(known, ", "))
		}
		list = append(list, n)
	}
	return WorldWith(seed, list), nil
}

// Effect is what a signal does to a change's outcome in this world.
func (w *World) Effect(s *Signal) Effect {
	if w.fatal[s] {
		return Fatal
	}
	return Benign
}

// Fatal lists the world's fatal signals, in catalogue order.
func (w *World) Fatal() []string {
	var out []string
	for _, s := range Signals {
		if w.fatal[s] {
			out = append(out, s.Name)
		}
	}
	return out
}

// Surprises are the signals whose effect in this world is not the one
// most worlds give them (fatal with a prior under one half, or benign
// with one over): where a reader's general beliefs are wrong here.
func (w *World) Surprises() []string {
	var out []string
	for _, s := range Signals {
		if w.fatal[s] != (s.Prior > 0.5) {
			out = append(out, s.Name)
		}
	}
	return out
}

// String names the world: its seed and fatal signals.
func (w *World) String() string {
	return "fatal: " + strings.Join(w.Fatal(), ", ")
}
