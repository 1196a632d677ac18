package fastpath

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCheckWindow(t *testing.T) {
	for _, tc := range []struct {
		tw, idle time.Duration
		ok       bool
	}{
		{DefaultWindow, 30 * time.Second, true},
		{time.Minute, 30 * time.Second, true},
		{30*time.Second - time.Nanosecond, 30 * time.Second, false},
		{10 * time.Second, 30 * time.Second, false},
		{30 * time.Second, time.Minute, false},
	} {
		err := CheckWindow(tc.tw, tc.idle)
		if (err == nil) != tc.ok {
			t.Errorf("CheckWindow(%v, %v) = %v, want ok %v", tc.tw, tc.idle, err, tc.ok)
		}
		var we *WindowError
		if err != nil && (!errors.As(err, &we) || we.Window != tc.tw || we.IdleTimeout != tc.idle ||
			!strings.Contains(err.Error(), "T_W ("+tc.tw.String()+") is shorter than the QUIC idle timeout ("+tc.idle.String()+")")) {
			t.Errorf("CheckWindow(%v, %v) = %v: want a WindowError naming both", tc.tw, tc.idle, err)
		}
	}
}
