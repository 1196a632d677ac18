package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/turboretry/turboretry/token"
)

func init() {
	register(&command{
		name:    "token",
		summary: "mint or inspect universal address-validation tokens",
		run:     runToken,
	})
}

const tokenUsage = `usage: turboretry token mint|inspect [flags]

  mint     print a new token in hex
  inspect  decode and validate a token, print it as JSON

Run "turboretry token mint -h" or "turboretry token inspect -h" for flags.
`

func runToken(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, "token: missing subcommand\n"+tokenUsage)
		return exitUsage
	}
	switch args[0] {
	case "mint":
		return runTokenMint(args[1:], stdout, stderr)
	case "inspect":
		return runTokenInspect(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stderr, tokenUsage)
		return exitOK
	}
	fmt.Fprintf(stderr, "token: unknown subcommand %q\n%s", args[0], tokenUsage)
	return exitUsage
}

// rotationFlag registers --rotation, in seconds.
func rotationFlag(fs *flag.FlagSet) *int64 {
	return fs.Int64("rotation", int64(token.DefaultRotation/time.Second), "epoch length in `SECONDS`; must match the issuer's")
}

func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// parseClient accepts IP:PORT, or a bare IP (port 0) when bareOK.
func parseClient(s string, bareOK bool) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	if bareOK {
		if ip, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
			return netip.AddrPortFrom(ip, 0), nil
		}
		return netip.AddrPort{}, fmt.Errorf("--addr %q is not IP:PORT or IP", s)
	}
	return netip.AddrPort{}, fmt.Errorf("--addr %q is not IP:PORT", s)
}

func runTokenMint(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("token mint", "turboretry token mint --secret FILE --type retry|new_token --source host|agent\n"+
		"         --addr IP:PORT [--odcid HEX] [--rscid HEX] [--time-ms N] [--tid-r HEX8] [--r N] [--rotation SECONDS]\n\n"+
		"Prints a token in hex. --time-ms, --tid-r and --r fix the inputs that are otherwise\n"+
		"taken from the clock and the random generator, so a token can be reproduced.", stderr)
	secret := fs.String("secret", "", "root secret key `FILE` (required)")
	typ := fs.String("type", "", "token type: retry or new_token (required)")
	src := fs.String("source", "", "issuer: host or agent (required)")
	addr := fs.String("addr", "", "client address `IP:PORT` (a bare IP is fine for new_token) (required)")
	odcid := fs.String("odcid", "", "retry: original destination connection ID, `HEX` (0-20 bytes)")
	rscid := fs.String("rscid", "", "retry: Retry source connection ID, `HEX` (0-20 bytes)")
	timeMs := fs.Int64("time-ms", 0, "issue time T in milliseconds since the Unix epoch (default: now)")
	tidR := fs.String("tid-r", "", "TR, the random half of the token ID, as 8 hex digits (default: random)")
	r := fs.Uint64("r", 0, "per-token value R, 0-4294967295 (default: random)")
	rotation := rotationFlag(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		return usageError(fs, "unexpected argument %q", pos[0])
	}
	set := setFlags(fs)
	for _, name := range []string{"secret", "type", "source", "addr"} {
		if !set[name] {
			return usageError(fs, "--%s is required", name)
		}
	}
	p := token.MintParams{}
	var ok bool
	if p.Type, ok = token.ParseType(*typ); !ok {
		return usageError(fs, "--type must be retry or new_token, not %q", *typ)
	}
	if p.Source, ok = token.ParseSource(*src); !ok {
		return usageError(fs, "--source must be host or agent, not %q", *src)
	}
	if p.Client, err = parseClient(*addr, p.Type == token.TypeNewToken); err != nil {
		return usageError(fs, "%v", err)
	}
	if p.Type == token.TypeNewToken && (set["odcid"] || set["rscid"]) {
		return usageError(fs, "--odcid and --rscid apply to retry tokens only")
	}
	for _, c := range []struct {
		name string
		val  string
		dst  *[]byte
	}{{"odcid", *odcid, &p.ODCID}, {"rscid", *rscid, &p.RSCID}} {
		b, err := hex.DecodeString(c.val)
		if err != nil {
			return usageError(fs, "--%s is not hex: %v", c.name, err)
		}
		if len(b) > token.MaxCIDLen {
			return usageError(fs, "--%s is %d bytes; connection IDs are at most %d", c.name, len(b), token.MaxCIDLen)
		}
		*c.dst = b
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		fmt.Fprintln(stderr, "token mint:", err)
		return exitFail
	}
	copy(p.TR[:], rnd[:4])
	p.R = binary.BigEndian.Uint32(rnd[4:])
	if set["tid-r"] {
		b, err := hex.DecodeString(*tidR)
		if err != nil || len(b) != 4 {
			return usageError(fs, "--tid-r must be 8 hex digits, not %q", *tidR)
		}
		copy(p.TR[:], b)
	}
	if set["r"] {
		if *r > 0xffffffff {
			return usageError(fs, "--r %d does not fit in 32 bits", *r)
		}
		p.R = uint32(*r)
	}
	p.TimeMs = time.Now().UnixMilli()
	if set["time-ms"] {
		if *timeMs < 0 {
			return usageError(fs, "--time-ms must not be negative")
		}
		p.TimeMs = *timeMs
	}
	kr, code := loadRing(fs, *secret, *rotation, stderr)
	if kr == nil {
		return code
	}
	tok, err := kr.Mint(nil, p)
	if err != nil {
		fmt.Fprintln(stderr, "token mint:", err)
		return exitFail
	}
	fmt.Fprintln(stdout, hex.EncodeToString(tok))
	return exitOK
}

// loadRing reads the key file; a bad --rotation is a usage error, a bad
// key file a failure.
func loadRing(fs *flag.FlagSet, path string, rotationS int64, stderr io.Writer) (*token.KeyRing, int) {
	const maxRotationS int64 = 100 * 365 * 24 * 3600
	if rotationS < 1 || rotationS > maxRotationS {
		return nil, usageError(fs, "--rotation must be between 1 and %d seconds", maxRotationS)
	}
	secret, err := token.ReadSecretFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return nil, exitFail
	}
	kr, err := token.NewKeyRing(secret, time.Duration(rotationS)*time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return nil, exitFail
	}
	return kr, exitOK
}

// inspectOutput is the JSON that inspect prints; the field order is the
// documented one.
type inspectOutput struct {
	Source string `json:"source"`
	Type   string `json:"type"`
	KeyID  uint8  `json:"key_id"`
	Epoch  uint64 `json:"epoch"`
	TID    string `json:"tid"`
	TimeMs uint64 `json:"time_ms"`
	R      uint32 `json:"r"`
	Addr   string `json:"addr"`
	ODCID  string `json:"odcid"`
	RSCID  string `json:"rscid"`
	Valid  bool   `json:"valid"`
	Reason string `json:"reason"`
}

func runTokenInspect(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("token inspect", "turboretry token inspect --secret FILE [--now-ms N] [--addr IP:PORT] [--rotation SECONDS] HEX\n\n"+
		"Validates a token and prints its fields as one JSON object. Exit status: 0 valid,\n"+
		"1 rejected (see \"reason\"), 2 usage error. Without --addr the address check is\n"+
		"skipped (the token is still decrypted and its address shown), so \"valid\" then\n"+
		"means valid for the address it carries.", stderr)
	secret := fs.String("secret", "", "root secret key `FILE` (required)")
	nowMs := fs.Int64("now-ms", 0, "validate as of this time, milliseconds since the Unix epoch (default: now)")
	addr := fs.String("addr", "", "the client's address, `IP:PORT` (a bare IP checks new_token tokens only)")
	rotation := rotationFlag(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagExit(err)
	}
	set := setFlags(fs)
	if !set["secret"] {
		return usageError(fs, "--secret is required")
	}
	if len(pos) != 1 {
		return usageError(fs, "want exactly one token (hex), got %d arguments", len(pos))
	}
	tok, err := hex.DecodeString(strings.TrimSpace(pos[0]))
	if err != nil {
		return usageError(fs, "token is not hex: %v", err)
	}
	var from netip.AddrPort
	if set["addr"] {
		if from, err = parseClient(*addr, true); err != nil {
			return usageError(fs, "%v", err)
		}
	}
	now := time.Now()
	if set["now-ms"] {
		now = time.UnixMilli(*nowMs)
	}
	kr, code := loadRing(fs, *secret, *rotation, stderr)
	if kr == nil {
		return code
	}
	v, err := kr.NewValidator(token.ValidatorConfig{Cache: token.NewKeyCache(1)})
	if err != nil {
		fmt.Fprintln(stderr, "token inspect:", err)
		return exitFail
	}
	buf := make([]byte, token.MaxPayloadLen)
	var res token.Result
	if set["addr"] {
		res, err = v.Validate(tok, token.TypeAny, from, now, buf)
	} else {
		res, err = v.Inspect(tok, token.TypeAny, now, buf)
	}
	out := inspectOutput{Valid: err == nil, Reason: token.ReasonOf(err).String()}
	if len(tok) >= token.HeaderLen {
		out.Source, out.Type, out.KeyID = res.Source.String(), typeName(res.Type), res.KeyID
		out.TID, out.TimeMs, out.R = hex.EncodeToString(res.TID[:]), res.TimeMs, res.R
		out.Epoch = res.Epoch
	}
	if res.Client.IsValid() {
		out.Addr = res.Client.String()
		if res.Type == token.TypeNewToken {
			out.Addr = res.Client.Addr().String()
		}
		out.ODCID, out.RSCID = hex.EncodeToString(res.ODCID), hex.EncodeToString(res.RSCID)
	}
	enc := json.NewEncoder(stdout)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(stderr, "token inspect:", err)
		return exitFail
	}
	if !out.Valid {
		return exitFail
	}
	return exitOK
}

// typeName names a wire type; 0 is an invalid wire value here, not "any".
func typeName(t token.Type) string {
	if t == token.TypeAny {
		return "type(0)"
	}
	return t.String()
}
