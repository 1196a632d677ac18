// Command extmod is a program of another module that uses only this
// module's public packages: an offload agent that answers a client Initial
// with a Retry, and a QUIC server that validates addresses with the same
// root secret, handshaking with a client that follows the Retry. Its
// go.mod is written by internal/archtest's TestExternalModule.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/turboretry/turboretry/app/metrics"
	"github.com/turboretry/turboretry/http3"
	"github.com/turboretry/turboretry/offload/agent"
	"github.com/turboretry/turboretry/offload/fastpath"
	"github.com/turboretry/turboretry/offload/flood"
	"github.com/turboretry/turboretry/offload/host"
	"github.com/turboretry/turboretry/offload/split"
	"github.com/turboretry/turboretry/quic"
	"github.com/turboretry/turboretry/token"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "extmod:", err)
		os.Exit(1)
	}
	fmt.Println("extmod: ok")
}

func run() error {
	secret, err := token.GenerateSecret()
	if err != nil {
		return err
	}
	kr, err := token.NewKeyRing(secret, 0)
	if err != nil {
		return err
	}

	// The agent: a token-less Initial gets a Retry.
	cache, err := fastpath.New(fastpath.KeyFromRing(kr), agent.DefaultCIDLen)
	if err != nil {
		return err
	}
	eng, err := agent.New(agent.Config{KeyRing: kr, Cache: cache})
	if err != nil {
		return err
	}
	gen, err := flood.NewGenerator(flood.GeneratorConfig{Version: flood.Version1})
	if err != nil {
		return err
	}
	pkt, err := gen.Next(make([]byte, 0, 1500))
	if err != nil {
		return err
	}
	v, r, reply := eng.Worker(0).Process(pkt, netip.MustParseAddrPort("192.0.2.1:4433"), make([]byte, 1500))
	if v != agent.SendReply || r != agent.ReasonRetry || len(reply) == 0 {
		return fmt.Errorf("agent: %v %v, %d reply bytes; want a Retry", v, r, len(reply))
	}

	// The configurations of the other deployment pieces type-check here.
	if err := (&host.Config{Mode: host.ModeSplit, AgentControl: netip.MustParseAddrPort("127.0.0.1:4434"), KeyRing: kr}).Check(); err != nil {
		return err
	}
	_ = split.Config{WireIface: "p0", HostIface: "pf0hpf", Port: 443, KeyRing: kr}
	_ = &http3.Server{}

	// The validating server, and a client that follows its Retry.
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return err
	}
	defer pc.Close()
	tr := &quic.Transport{Conn: pc, AddressValidation: &quic.AddressValidationConfig{
		Policy:      quic.AlwaysRetry(),
		TokenSecret: secret,
	}}
	defer tr.Close()
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewAddressValidationCollector(tr.AddressValidationStats))
	_ = metrics.Handler(reg, slog.New(slog.DiscardHandler))

	cert, err := selfSigned()
	if err != nil {
		return err
	}
	ln, err := tr.Listen(&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"extmod"}}, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept(ctx)
		if err == nil {
			defer c.CloseWithError(0, "")
			if c.ConnectionState().ValidatedBy != quic.TokenRetry {
				err = fmt.Errorf("server: connection validated by %v, want a retry token", c.ConnectionState().ValidatedBy)
			}
		}
		accepted <- err
	}()
	c, err := quic.DialAddr(ctx, pc.LocalAddr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"extmod"}}, nil)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defer c.CloseWithError(0, "")
	if err := <-accepted; err != nil {
		return err
	}
	if st := tr.AddressValidationStats(); st.RetriesSent == 0 || st.TokensAccepted["host/retry"] != 1 {
		return fmt.Errorf("server stats %+v: want a Retry and its token accepted", st)
	}
	return nil
}

func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
