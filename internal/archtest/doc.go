// Package archtest holds the test that keeps gavel's package map true:
// which packages may import which (docs/DESIGN.md, "Package map").
package archtest
