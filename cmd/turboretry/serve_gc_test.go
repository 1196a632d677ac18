package main

import (
	"flag"
	"io"
	"testing"
)

// TestGCPercent: serve sets its own GOGC unless the environment has one;
// an explicit --gc-percent wins over both; a non-positive one is refused.
func TestGCPercent(t *testing.T) {
	for _, tc := range []struct {
		explicit bool
		flag     int
		env      string
		want     int
		wantSet  bool
	}{
		{false, defaultGCPercent, "", defaultGCPercent, true},
		{false, defaultGCPercent, "200", 0, false},
		{true, 80, "200", 80, true},
		{true, 80, "", 80, true},
	} {
		p, ok := gcPercentToSet(tc.explicit, tc.flag, tc.env)
		if ok != tc.wantSet || (ok && p != tc.want) {
			t.Errorf("gcPercentToSet(%v, %d, %q) = %d, %v; want %d, %v", tc.explicit, tc.flag, tc.env, p, ok, tc.want, tc.wantSet)
		}
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	apply := gcFlag(fs)
	if err := fs.Parse([]string{"--gc-percent", "0"}); err != nil {
		t.Fatal(err)
	}
	if err := apply(); err == nil {
		t.Fatal("--gc-percent 0 accepted")
	}
}
