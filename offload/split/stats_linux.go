package split

// Stats returns the agent's counters. It fails only when the program's
// counters cannot be read.
func (a *Agent) Stats() (Stats, error) {
	dp, err := a.dp.Stats()
	return Stats{
		Datapath:    dp,
		HostSent:    a.host.sent.Load(),
		HostFailed:  a.host.failed.Load(),
		Control:     a.listener.Stats(),
		AdmitFailed: a.admitFailed.Load(),
	}, err
}
