package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"
)

// defaultGCPercent is serve's GOGC. The Go runtime's default, 100, lets
// the heap grow to twice its live size between collections, and the
// memory a server keeps from the operating system follows that peak: an
// idle HTTP/3 connection, about 16 KiB of live heap, cost 33-38 KiB of
// RSS at 100 and 26-29 KiB at 50. The collections come about three times
// as often, each of a small heap: the serving benchmark's CPU per GB did
// not change beyond its noise (docs/performance.md "Idle connection
// memory").
const defaultGCPercent = 50

// gcFlag adds --gc-percent; the function it returns applies it: an
// explicit flag, else the GOGC environment variable when set (the
// runtime has applied it), else defaultGCPercent.
func gcFlag(fs *flag.FlagSet) func() error {
	percent := fs.Int("gc-percent", defaultGCPercent,
		"the Go collector's heap growth between collections, in `PERCENT` of the live heap (GOGC; the environment's GOGC, when set, replaces the default)")
	return func() error {
		explicit := false
		fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "gc-percent" })
		if *percent <= 0 {
			return fmt.Errorf("--gc-percent %d: want a positive percentage", *percent)
		}
		if p, ok := gcPercentToSet(explicit, *percent, os.Getenv("GOGC")); ok {
			debug.SetGCPercent(p)
		}
		return nil
	}
}

// gcPercentToSet decides what serve sets: the flag when given, nothing
// when the environment has GOGC (the runtime applied it), else the
// flag's default.
func gcPercentToSet(explicit bool, flagValue int, envGOGC string) (percent int, ok bool) {
	return flagValue, explicit || envGOGC == ""
}
