package udpio

// SplitSegments appends to dst the datagrams packed in b with segment size segSize: each
// is segSize bytes except the last, which may be shorter. A segSize that is zero,
// negative or not smaller than len(b) means b is a single datagram (possibly empty).
// The returned slices alias b; nothing is copied, and nothing is allocated when dst has
// enough capacity.
func SplitSegments(dst [][]byte, b []byte, segSize int) [][]byte {
	if segSize <= 0 || segSize >= len(b) {
		return append(dst, b)
	}
	for len(b) > segSize {
		dst = append(dst, b[:segSize:segSize])
		b = b[segSize:]
	}
	return append(dst, b)
}
