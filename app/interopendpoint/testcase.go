package interopendpoint

import (
	"errors"
	"fmt"
)

// Role is the side an endpoint plays.
type Role string

// The two roles of the runner's ROLE variable.
const (
	RoleServer Role = "server"
	RoleClient Role = "client"
)

// ErrUnsupported is returned for a TESTCASE this endpoint does not
// implement (the runner's exit status 127).
var ErrUnsupported = errors.New("interop: unsupported test case")

// The TESTCASE values the runner passes. Several runner cases share one:
// longrtt runs "handshake"; multiplexing, blackhole, amplificationlimit,
// transferloss, transfercorruption, ipv6, rebind-port and rebind-addr run
// "transfer"; handshakeloss and handshakecorruption run "multiconnect";
// keyupdate runs "transfer" on the server and connectionmigration
// "transfer" on the client.
const (
	caseHandshake           = "handshake"
	caseTransfer            = "transfer"
	caseChaCha20            = "chacha20"
	caseRetry               = "retry"
	caseResumption          = "resumption"
	caseZeroRTT             = "zerortt"
	caseHTTP3               = "http3"
	caseMulticonnect        = "multiconnect"
	caseKeyUpdate           = "keyupdate"
	caseECN                 = "ecn"
	caseV2                  = "v2"
	caseConnectionMigration = "connectionmigration"
	caseVersionNegotiation  = "versionnegotiation"
)

// supported lists the TESTCASE values each role implements.
var supported = map[Role]map[string]bool{
	RoleServer: set(caseHandshake, caseTransfer, caseChaCha20, caseRetry, caseResumption, caseZeroRTT,
		caseHTTP3, caseMulticonnect, caseECN, caseV2, caseConnectionMigration, caseVersionNegotiation),
	// The client also takes "connectionmigration" (as "transfer": it moves
	// to a preferred address whenever the server offers one), which some
	// runner versions pass to clients.
	RoleClient: set(caseHandshake, caseTransfer, caseChaCha20, caseRetry, caseResumption, caseZeroRTT,
		caseHTTP3, caseMulticonnect, caseKeyUpdate, caseECN, caseV2, caseConnectionMigration,
		caseVersionNegotiation),
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Supports reports whether role implements testCase.
func Supports(role Role, testCase string) bool { return supported[role][testCase] }

// checkCase returns ErrUnsupported, wrapped with the names, for a role or
// TESTCASE this endpoint does not implement.
func checkCase(role Role, testCase string) error {
	if _, ok := supported[role]; !ok {
		return fmt.Errorf("%w: unknown role %q", ErrUnsupported, role)
	}
	if !Supports(role, testCase) {
		return fmt.Errorf("%w: %s %q", ErrUnsupported, role, testCase)
	}
	return nil
}
