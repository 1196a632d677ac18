package afxdp

import (
	"errors"
	"testing"
)

// smallConfig keeps test sockets small.
var smallConfig = Config{FrameSize: 2048, NumFrames: 512, FillRingSize: 256, CompletionRingSize: 256, RXRingSize: 256, TXRingSize: 256}

func TestConfigDefaults(t *testing.T) {
	c, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.FrameSize != DefaultFrameSize || c.NumFrames != DefaultNumFrames || c.FillRingSize != DefaultRingSize ||
		c.CompletionRingSize != DefaultRingSize || c.RXRingSize != DefaultRingSize || c.TXRingSize != DefaultRingSize {
		t.Fatalf("defaults not applied: %+v", c)
	}
	if _, err := smallConfig.withDefaults(); err != nil {
		t.Fatalf("smallConfig: %v", err)
	}
}

func TestConfigInvalid(t *testing.T) {
	for _, c := range []Config{
		{FrameSize: 1024},
		{FrameSize: 3000},
		{NumFrames: 1},
		{NumFrames: -5},
		{NumFrames: 1<<20 + 1},
		{FillRingSize: 100},
		{CompletionRingSize: -1},
		{RXRingSize: 1 << 17},
		{TXRingSize: 3},
		{Headroom: -1},
		{FrameSize: 2048, Headroom: 2048 - 256},
		{Mode: Mode(7)},
	} {
		if _, err := c.withDefaults(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: got %v, want ErrConfig", c, err)
		}
	}
}

func TestModeString(t *testing.T) {
	for m, want := range map[Mode]string{ModeAuto: "auto", ModeCopy: "copy", ModeZeroCopy: "zerocopy", Mode(9): "Mode(9)"} {
		if m.String() != want {
			t.Errorf("%d: %q, want %q", int(m), m.String(), want)
		}
	}
}
