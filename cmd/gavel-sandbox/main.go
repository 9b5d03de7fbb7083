// Command gavel-sandbox is gavel's sandbox launcher, installed beside gavel.
// gavel starts it for every sandboxed run with the run's configuration in
// its environment; it sets up the run's isolation and limits and execs the
// program (package launch, which does it all as this binary initialises).
// Being small, it starts in a fraction of the time gavel's own binary
// takes, which gavel otherwise starts again as the launcher.
package main

import (
	"fmt"
	"os"

	_ "github.com/gavelhq/gavel/bench/exec/launch"
)

func main() {
	// Started as a launcher, this process has already become the program.
	fmt.Fprintln(os.Stderr, "gavel-sandbox is gavel's sandbox launcher: gavel starts it for each sandboxed run; it is not meant to be run by hand")
	os.Exit(2)
}
