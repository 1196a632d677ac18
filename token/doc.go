// Package token implements the TurboRetry universal address-validation token,
// version 1, as specified in docs/design.md ("Universal token, version 1").
//
// One 32-byte root secret, shared by the host stack and every offload agent,
// yields a master key per rotation epoch; each token ID (TID) yields its own
// AES-128-GCM key and base nonce, so issuers and validators never exchange
// any other state.
//
// The pieces:
//
//   - [KeyRing] holds the root secret and the epoch schedule. It is safe for
//     concurrent use and is normally shared by the whole process.
//   - [Issuer] mints tokens, reusing one TID with a counter R so that the key
//     derivation is paid about once per second. One Issuer per goroutine.
//   - [Validator] checks tokens in the normative order and returns the
//     decoded fields or a [Reason]. One Validator per goroutine; validators
//     may share a [KeyCache] of derived keys.
//   - [KeyRing.Mint] mints a token with every input fixed, for tests and the
//     CLI.
package token
