package quiclb

// keyVector is KeyFromRing for the root secret 00..1f, computed once with
// an independent HKDF (Python's hmac/hashlib, TLS 1.3 HkdfLabel) and kept
// here so that a change of the derivation cannot go unnoticed.
const keyVector = "c67ddb80f24c6f92dff3b8e720d853af"
