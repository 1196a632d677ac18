package eval

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/turboretry/turboretry/app/fileserver"
	"github.com/turboretry/turboretry/internal/netns"
	"github.com/turboretry/turboretry/token"
)

// files is what every server of a run shares: certificate, root secret,
// the served directory.
type files struct {
	dir, cert, key, secret, root string
	pool                         *x509.CertPool
	sizes                        []int // the files under root, named by size
}

// newFiles writes serve's self-signed certificate for localhost, a root
// secret and one file per size (plus index.html) into dir.
func newFiles(dir string, sizes []int) (*files, error) {
	f := &files{dir: dir, cert: filepath.Join(dir, "cert.pem"), key: filepath.Join(dir, "key.pem"),
		secret: filepath.Join(dir, "secret.key"), root: filepath.Join(dir, "www"), sizes: sizes}
	certPEM, keyPEM, err := fileserver.GenerateSelfSigned(time.Now())
	if err != nil {
		return nil, err
	}
	secret, err := token.GenerateSecret()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(f.root, 0o755); err != nil {
		return nil, err
	}
	for _, w := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{f.cert, certPEM, 0o644},
		{f.key, keyPEM, 0o600},
		{f.secret, []byte(token.FormatSecret(secret)), 0o600},
		{filepath.Join(f.root, "index.html"), []byte("<html><body>turboretry eval</body></html>\n"), 0o644},
	} {
		if err := os.WriteFile(w.path, w.data, w.mode); err != nil {
			return nil, err
		}
	}
	for _, n := range sizes {
		b := make([]byte, n)
		if _, err := rand.Read(b); err != nil { // incompressible, like media
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(f.root, sizeName(n)), b, 0o644); err != nil {
			return nil, err
		}
	}
	f.pool = x509.NewCertPool()
	if !f.pool.AppendCertsFromPEM(certPEM) {
		return nil, errors.New("eval: the generated certificate does not parse")
	}
	return f, nil
}

// server is one running variant: the server process and, for (d), the
// agent process.
type server struct {
	v            Variant
	net          *network
	proc, agent  *child
	client       *client
	hostNAPI     []int // the server veth's NAPI threads
	agentNAPI    []int // (d): the agent ports' NAPI threads
	metricsAddrs []netip.AddrPort
}

// startServer starts variant v's processes in n and waits until a benign
// request completes. A server started right after another on the same
// interface may find the AF_XDP queue still busy (the kernel releases the
// old socket's UMEM from a work queue): then it tries again, for up to 10
// seconds.
func startServer(ctx context.Context, cfg *Config, fs *files, n *network, v Variant, logDir string) (*server, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := startServerOnce(ctx, cfg, fs, n, v, logDir)
		if err == nil || !strings.Contains(err.Error(), "busy") || time.Now().After(deadline) || ctx.Err() != nil {
			return s, err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func startServerOnce(ctx context.Context, cfg *Config, fs *files, n *network, v Variant, logDir string) (s *server, err error) {
	s = &server{v: v, net: n}
	defer func() {
		if err != nil {
			s.stop()
			s = nil
		}
	}()
	addr := netip.AddrPortFrom(ipServer, serverPort).String()
	env := cfg.ChildEnv
	var argv []string
	switch v {
	case QuicGo:
		argv = append(append([]string(nil), cfg.QuicGoServer...), "--addr", addr, "--cert", fs.cert, "--key", fs.key, "--root", fs.root)
		env = append(append([]string(nil), env...), QuicGoRoleEnv+"=1")
	default:
		argv = append(append([]string(nil), cfg.Turboretry...), "serve", "--addr", addr, "--cert", fs.cert, "--key", fs.key,
			"--root", fs.root, "--secret", fs.secret, "--state-dir", fs.dir, "--metrics", metricsSrv.String())
		switch v {
		case HostAlways:
			argv = append(argv, "--retry", "always")
		case HostAuto, XDP, XDP2Q, Split, Split2Q:
			argv = append(argv, "--retry", "auto")
		case hostNever:
			argv = append(argv, "--retry", "never")
		}
		if v == XDP || v == XDP2Q {
			argv = append(argv, "--offload", "xdp", "--iface", n.srvDev)
		}
		if v.Split() {
			argv = append(argv, "--offload", "split", "--agent-control", agentCtl.String())
		}
		s.metricsAddrs = []netip.AddrPort{metricsSrv}
	}
	if v.Split() {
		// The agent first: the server announces its connection IDs to it.
		a := append(append([]string(nil), cfg.Turboretry...), "agent", "--wire", n.wireDev, "--host", n.hostDev,
			"--port", fmt.Sprint(serverPort), "--secret", fs.secret, "--control", agentCtl.String(), "--metrics", metricsDPU.String())
		if s.agent, err = startChild("agent", n.dpu, cfg.AgentCPUs, cfg.ChildEnv, filepath.Join(logDir, string(v)+"-agent.log"), a...); err != nil {
			return s, err
		}
		if err := waitXDP(ctx, s.agent, n.dpu, n.wireDev); err != nil {
			return s, err
		}
		s.metricsAddrs = append(s.metricsAddrs, metricsDPU)
	}
	if s.proc, err = startChild("server", n.server, cfg.ServerCPUs, env, filepath.Join(logDir, string(v)+"-server.log"), argv...); err != nil {
		return s, err
	}
	s.client = &client{ns: n.client, tls: &tls.Config{RootCAs: fs.pool, ServerName: "localhost", NextProtos: []string{"h3"}}, addr: addr}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if !s.proc.alive() {
			return s, fmt.Errorf("eval: %s server exited: %v\n%s", v, s.proc.err, s.proc.logTail())
		}
		if s.agent != nil && !s.agent.alive() {
			return s, fmt.Errorf("eval: %s agent exited: %v\n%s", v, s.agent.err, s.agent.logTail())
		}
		r := s.client.get(ctx, "/", 2*time.Second)
		if r.Err == "" {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return s, fmt.Errorf("eval: %s never answered: %s\n%s", v, r.Err, s.proc.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// An XDP program attached by the server or the agent may have given a
	// device a new NAPI instance: pin again.
	if err := n.pinNAPI(); err != nil {
		return s, err
	}
	s.hostNAPI, s.agentNAPI = n.napiOf(n.srvDev), nil
	if n.dpu != "" {
		s.agentNAPI = append(n.napiOf(n.wireDev), n.napiOf(n.hostDev)...)
	}
	return s, nil
}

// waitXDP waits until an XDP program is attached to dev in ns.
func waitXDP(ctx context.Context, c *child, ns, dev string) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, _ := exec.Command("ip", "-n", ns, "-d", "link", "show", "dev", dev).CombinedOutput()
		if strings.Contains(string(out), "prog/xdp") {
			return nil
		}
		if !c.alive() {
			return fmt.Errorf("eval: %s exited: %v\n%s", c.name, c.err, c.logTail())
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("eval: no XDP program on %s: %s", dev, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cpu is the defender's CPU time so far, the host's (the server process's
// threads and its veth's NAPI threads) and the separate agent's in (d)
// (its process and its ports' NAPI threads). In (c) the agent is part of
// the server process.
func (s *server) cpu() (host, agent time.Duration) {
	if s.proc != nil && s.proc.alive() {
		host += procCPU(s.proc.pid())
	}
	for _, p := range s.hostNAPI {
		host += threadCPU(p)
	}
	if s.agent != nil && s.agent.alive() {
		agent += procCPU(s.agent.pid())
	}
	for _, p := range s.agentNAPI {
		agent += threadCPU(p)
	}
	return host, agent
}

// stop ends the processes, the server first.
func (s *server) stop() {
	for _, c := range []*child{s.proc, s.agent} {
		if c != nil {
			c.stop(15 * time.Second)
		}
	}
}

// scrapeMetrics saves the /metrics of the server (and the agent) into
// dir/<variant>-<suffix>-metrics.txt, for the record of who answered and
// who dropped what.
func (s *server) scrapeMetrics(dir, suffix string) {
	for i, a := range s.metricsAddrs {
		ns := s.net.client
		if i > 0 {
			ns = s.net.dpu
		}
		body, err := scrape(ns, a)
		if err != nil {
			body = []byte("scrape failed: " + err.Error() + "\n")
		}
		name := []string{"server", "agent"}[min(i, 1)]
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%s-%s-metrics.txt", s.v, suffix, name)), body, 0o644)
	}
}

// scrape GETs /metrics from addr over a TCP connection opened in ns (an
// http.Transport would dial on a goroutine of its own, outside ns).
func scrape(ns string, addr netip.AddrPort) ([]byte, error) {
	var conn net.Conn
	if err := netns.In(ns, func() (err error) {
		conn, err = net.DialTimeout("tcp", addr.String(), 5*time.Second)
		return err
	}); err != nil {
		return nil, err
	}
	used := false
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			if used {
				return nil, errors.New("eval: one connection per scrape")
			}
			used = true
			return conn, nil
		},
	}}
	resp, err := c.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		conn.Close()
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("eval: /metrics: %s", resp.Status)
	}
	return io.ReadAll(resp.Body)
}
