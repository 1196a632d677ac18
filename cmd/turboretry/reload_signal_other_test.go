//go:build !unix

package main

// sendReloadSignal: there is no SIGHUP here, so nothing is sent.
func sendReloadSignal() (bool, error) { return false, nil }
