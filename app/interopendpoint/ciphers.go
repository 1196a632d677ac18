package interopendpoint

import (
	"crypto/tls"
	"sync"
	_ "unsafe" // for go:linkname
)

// crypto/tls offers every TLS 1.3 cipher suite and has no setting to offer
// fewer (tls.Config.CipherSuites is ignored for TLS 1.3). The chacha20 case
// wants a client that offers only TLS_CHACHA20_POLY1305_SHA256, so the
// client narrows crypto/tls's default lists, which it exports for this
// through go:linkname (see go.dev/issue/67401). This changes the whole
// process: only the chacha20 client, a process of its own, does it.

//go:linkname defaultCipherSuitesTLS13 crypto/tls.defaultCipherSuitesTLS13
var defaultCipherSuitesTLS13 []uint16

//go:linkname defaultCipherSuitesTLS13NoAES crypto/tls.defaultCipherSuitesTLS13NoAES
var defaultCipherSuitesTLS13NoAES []uint16

var chachaOnce sync.Once

// offerOnlyChaCha20 makes every later TLS 1.3 ClientHello of this process
// offer TLS_CHACHA20_POLY1305_SHA256 alone.
func offerOnlyChaCha20() {
	chachaOnce.Do(func() {
		defaultCipherSuitesTLS13 = []uint16{tls.TLS_CHACHA20_POLY1305_SHA256}
		defaultCipherSuitesTLS13NoAES = []uint16{tls.TLS_CHACHA20_POLY1305_SHA256}
	})
}
