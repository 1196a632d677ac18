// Package frame builds and parses Ethernet + IPv4/IPv6 + UDP frames with
// their checksums, in place and without allocating: the framing that the
// AF_XDP datapath (offload/datapath, replies written over received frames)
// and the flood generator (offload/flood, spoofed Initials on a raw
// socket or an AF_XDP queue) share. It is portable and imports nothing of
// this module.
//
// Errors are distinct so that a datapath can count drops by cause:
// ErrShort, ErrNotUDP, ErrFragment, ErrBadHeader, ErrBadChecksum,
// ErrBadAddress and ErrNoSpace, wrapped with details; test them with
// errors.Is.
package frame
