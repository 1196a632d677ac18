package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/design.md test vectors. --rotation 88220 puts both times into epoch
// 20000: floor(1764460800 / 88220) = 20000.
const (
	vecRetryTok = "90deadbeef58850fc00000019ad20f280000000007555b5376b44b7712868d12bed1d69b54962b32b5422756010f0f92c1b35ad2d9e84f49286f9b4c08ed"
	vecNewTok   = "60deadbeef58850fc00000019ad20f287b0000000898b3100be2f4cbb488e7b6530d508e9e943f4156620ad3a14db897c9a0ad6bb07d"
	vecSecret   = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
)

func vecKeyFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "root.key")
	if err := os.WriteFile(p, []byte(vecSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMintVectors(t *testing.T) {
	key := vecKeyFile(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--type", "retry", "--source", "agent", "--addr", "192.0.2.10:54321",
			"--odcid", "8394c8f03e515708", "--rscid", "f067a5502a4262b5", "--time-ms", "1764460800000",
			"--tid-r", "deadbeef", "--r", "7"}, vecRetryTok},
		{[]string{"--type", "new_token", "--source", "host", "--addr", "[2001:db8::1]:443",
			"--time-ms", "1764460800123", "--tid-r", "deadbeef", "--r", "8"}, vecNewTok},
		{[]string{"--type", "new_token", "--source", "host", "--addr", "2001:db8::1",
			"--time-ms", "1764460800123", "--tid-r", "deadbeef", "--r", "8"}, vecNewTok},
	} {
		args := append([]string{"token", "mint", "--secret", key, "--rotation", "88220"}, tc.args...)
		code, out, errOut := runCLI(args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errOut)
		}
		if strings.TrimSpace(out) != tc.want {
			t.Fatalf("%v:\n got %s\nwant %s", tc.args, out, tc.want)
		}
	}
}

func inspect(t *testing.T, args ...string) (int, inspectOutput, string) {
	t.Helper()
	code, out, errOut := runCLI(append([]string{"token", "inspect"}, args...)...)
	var res inspectOutput
	if code != exitUsage {
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("output %q is not JSON: %v (stderr %q)", out, err, errOut)
		}
		if strings.Count(out, "\n") != 1 {
			t.Fatalf("output is not one line: %q", out)
		}
	}
	return code, res, errOut
}

func TestInspectVectors(t *testing.T) {
	key := vecKeyFile(t)
	code, res, errOut := inspect(t, "--secret", key, "--rotation", "88220", "--now-ms", "1764460801000",
		"--addr", "192.0.2.10:54321", vecRetryTok)
	want := inspectOutput{Source: "agent", Type: "retry", KeyID: 0, Epoch: 20000, TID: "deadbeef58850fc0",
		TimeMs: 1764460800000, R: 7, Addr: "192.0.2.10:54321", ODCID: "8394c8f03e515708", RSCID: "f067a5502a4262b5",
		Valid: true}
	if code != exitOK || res != want {
		t.Fatalf("retry vector: exit %d (%s)\n got %+v\nwant %+v", code, errOut, res, want)
	}

	// Flags after the token work too.
	code, res, _ = inspect(t, vecNewTok, "--secret", key, "--rotation", "88220", "--now-ms", "1764460801000",
		"--addr", "[2001:db8::1]:9999")
	want = inspectOutput{Source: "host", Type: "new_token", Epoch: 20000, TID: "deadbeef58850fc0",
		TimeMs: 1764460800123, R: 8, Addr: "2001:db8::1", Valid: true}
	if code != exitOK || res != want {
		t.Fatalf("new_token vector: exit %d\n got %+v\nwant %+v", code, res, want)
	}

	// Without --addr the address is not checked, but still decoded.
	code, res, _ = inspect(t, "--secret", key, "--rotation", "88220", "--now-ms", "1764460801000", vecRetryTok)
	if code != exitOK || !res.Valid || res.Addr != "192.0.2.10:54321" {
		t.Fatalf("no --addr: exit %d %+v", code, res)
	}
}

func TestInspectRejections(t *testing.T) {
	key := vecKeyFile(t)
	base := []string{"--secret", key, "--rotation", "88220", "--now-ms", "1764460801000"}
	forged := vecRetryTok[:2] + "ff" + vecRetryTok[4:]
	for _, tc := range []struct {
		name   string
		args   []string
		reason string
		check  func(inspectOutput) bool
	}{
		{"other address", []string{"--addr", "192.0.2.11:54321", vecRetryTok}, "address mismatch",
			func(r inspectOutput) bool { return r.Addr == "192.0.2.10:54321" }},
		{"other port", []string{"--addr", "192.0.2.10:1", vecRetryTok}, "port mismatch", nil},
		{"forged TID", []string{forged}, "bad TID MAC",
			func(r inspectOutput) bool { return r.Addr == "" && r.ODCID == "" && r.R == 7 && r.Source == "agent" }},
		{"too short", []string{vecRetryTok[:20]}, "malformed",
			func(r inspectOutput) bool { return r.Source == "" && r.TID == "" && r.TimeMs == 0 }},
		{"expired", []string{"--now-ms", "1764460900000", vecRetryTok}, "expired", nil},
	} {
		code, res, errOut := inspect(t, append(append([]string{}, base...), tc.args...)...)
		if code != exitFail || res.Valid || res.Reason != tc.reason {
			t.Errorf("%s: exit %d, %+v (%s)", tc.name, code, res, errOut)
			continue
		}
		if tc.check != nil && !tc.check(res) {
			t.Errorf("%s: fields %+v", tc.name, res)
		}
	}
	// Another rotation period means other epoch keys.
	code, res, _ := inspect(t, "--secret", key, "--now-ms", "1764460801000", vecRetryTok)
	if code != exitFail || res.Valid {
		t.Errorf("default rotation accepted the vector: %+v", res)
	}
}

func TestMintInspectRoundTrip(t *testing.T) {
	key := vecKeyFile(t)
	code, out, errOut := runCLI("token", "mint", "--secret", key, "--type", "retry", "--source", "host",
		"--addr", "[2001:db8::7]:443", "--odcid", strings.Repeat("ab", 20), "--rscid", "")
	if code != exitOK {
		t.Fatalf("mint: exit %d: %s", code, errOut)
	}
	code, res, _ := inspect(t, "--secret", key, "--addr", "[2001:db8::7]:443", strings.TrimSpace(out))
	if code != exitOK || res.ODCID != strings.Repeat("ab", 20) || res.RSCID != "" || res.Source != "host" {
		t.Fatalf("inspect: exit %d %+v", code, res)
	}
}

func TestTokenUsageErrors(t *testing.T) {
	key := vecKeyFile(t)
	mint := []string{"token", "mint", "--secret", key, "--type", "retry", "--source", "agent", "--addr", "192.0.2.1:1"}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"token"}, "missing subcommand"},
		{[]string{"token", "burn"}, "unknown subcommand"},
		{[]string{"token", "mint", "--type", "retry", "--source", "agent", "--addr", "192.0.2.1:1"}, "--secret is required"},
		{[]string{"token", "mint", "--secret", key, "--source", "agent", "--addr", "192.0.2.1:1"}, "--type is required"},
		{[]string{"token", "mint", "--secret", key, "--type", "retry", "--addr", "192.0.2.1:1"}, "--source is required"},
		{[]string{"token", "mint", "--secret", key, "--type", "retry", "--source", "agent"}, "--addr is required"},
		{append(mint, "--type", "zero_rtt"), "--type must be"},
		{append(mint, "--source", "dpu"), "--source must be"},
		{append(mint, "--addr", "192.0.2.1"), "not IP:PORT"},
		{append(mint, "--addr", "example.com:443"), "not IP:PORT"},
		{append(mint, "--odcid", "xyz"), "--odcid is not hex"},
		{append(mint, "--rscid", strings.Repeat("00", 21)), "at most 20"},
		{append(mint, "--tid-r", "deadbe"), "--tid-r must be 8 hex digits"},
		{append(mint, "--r", "4294967296"), "does not fit"},
		{append(mint, "--r", "-1"), "invalid value"},
		{append(mint, "--time-ms", "-5"), "must not be negative"},
		{append(mint, "--rotation", "0"), "--rotation must be"},
		{append(mint, "extra"), "unexpected argument"},
		{[]string{"token", "mint", "--secret", key, "--type", "new_token", "--source", "host", "--addr", "192.0.2.1:1", "--odcid", "01"}, "retry tokens only"},
		{[]string{"token", "inspect", vecRetryTok}, "--secret is required"},
		{[]string{"token", "inspect", "--secret", key}, "exactly one token"},
		{[]string{"token", "inspect", "--secret", key, vecRetryTok, vecNewTok}, "exactly one token"},
		{[]string{"token", "inspect", "--secret", key, "zz"}, "not hex"},
		{[]string{"token", "inspect", "--secret", key, "--addr", "nowhere", vecRetryTok}, "not IP:PORT or IP"},
		{[]string{"token", "inspect", "--secret", key, "--now-ms", "soon", vecRetryTok}, "invalid value"},
	} {
		code, out, errOut := runCLI(tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.msg) || !strings.Contains(errOut, "usage") || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errOut, tc.msg)
		}
	}
}

func TestTokenKeyFileErrors(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open.key")
	if err := os.WriteFile(open, []byte(vecSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("0011\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, msg string
	}{
		{open, "world-readable"},
		{short, "64 hex characters"},
		{filepath.Join(dir, "missing.key"), "no such file"},
	} {
		code, _, errOut := runCLI("token", "inspect", "--secret", tc.path, vecRetryTok)
		if code != exitFail || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%s: exit %d, stderr %q", tc.path, code, errOut)
		}
		code, _, errOut = runCLI("token", "mint", "--secret", tc.path, "--type", "retry", "--source", "host", "--addr", "192.0.2.1:1")
		if code != exitFail || !strings.Contains(errOut, tc.msg) {
			t.Errorf("mint %s: exit %d, stderr %q", tc.path, code, errOut)
		}
	}
}
