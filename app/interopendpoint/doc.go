// Package interopendpoint is TurboRetry's endpoint for the QUIC interop
// runner (quic-interop-runner: its endpoint contract in README.md and the
// test cases of testcases_quic.py): the server and the client that
// "turboretry interop" runs inside the runner's containers or network
// namespaces.
//
// The runner says what to do through the environment (FromEnv): ROLE,
// TESTCASE, REQUESTS, SSLKEYLOGFILE, QLOGDIR, and the fixed paths /www,
// /downloads and /certs. Every case but http3 speaks hq-interop (HTTP/0.9
// over QUIC, ALPN "hq-interop": one bidirectional stream per request
// carrying "GET /path\r\n", answered with the file's bytes and FIN); http3
// speaks HTTP/3 through the http3 package. A TESTCASE this endpoint does not
// implement makes Run return ErrUnsupported, which the command turns into
// exit status 127 as the contract asks.
package interopendpoint
