package datapath

// Stats returns the datapath's counters. It fails only when the program's
// counters cannot be read.
func (d *Datapath) Stats() (Stats, error) {
	s := Stats{Agent: d.engine.Stats(), Heartbeat: d.engine.Heartbeat(), Paused: d.engine.Paused(),
		PrefixRate: d.engine.PrefixRateStats(), PrefixWriteErrors: d.prog.PrefixWriteErrors()}
	for _, q := range d.queues {
		c := &q.counters
		s.FramesRX += c.framesRX.Load()
		s.FramesTX += c.framesTX.Load()
		s.Delivered += c.delivered.Load()
		s.Forwarded += c.forwarded.Load()
		s.Unparsed += c.unparsed.Load()
		s.ReplyFailed += c.replyFailed.Load()
	}
	var err error
	s.XDP, err = d.prog.Counters()
	return s, err
}
