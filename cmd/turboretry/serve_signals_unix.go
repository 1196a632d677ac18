//go:build unix

package main

import (
	"os"
	"syscall"
)

// pauseSignal and resumeSignal pause and resume serve's offload agent
// (fail-open fault injection for operators).
var pauseSignal, resumeSignal os.Signal = syscall.SIGUSR1, syscall.SIGUSR2

// offloadSignals are the signals serve listens to for its offload agent.
var offloadSignals = []os.Signal{pauseSignal, resumeSignal}
