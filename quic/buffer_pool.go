package quic

import "sync"

// receiveBufferSize holds any datagram on a 1500-byte MTU path and more.
const receiveBufferSize = 2048

var bufferPool = sync.Pool{New: func() any {
	b := make([]byte, receiveBufferSize)
	return &b
}}

func getBuffer() *[]byte {
	b := bufferPool.Get().(*[]byte)
	*b = (*b)[:cap(*b)]
	return b
}

func putBuffer(b *[]byte) {
	if b != nil && cap(*b) == receiveBufferSize {
		bufferPool.Put(b)
	}
}
