//go:build !unix

package main

import "os"

// No SIGUSR1/SIGUSR2 here: the offload agent cannot be paused by signal
// (and the XDP offload does not run here anyway).
var pauseSignal, resumeSignal os.Signal

var offloadSignals []os.Signal
