//go:build eval

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	quicgo "github.com/quic-go/quic-go"
	quicgohttp3 "github.com/quic-go/quic-go/http3"

	"github.com/turboretry/turboretry/app/eval"
)

func init() {
	evalRole = func() (int, bool) {
		if os.Getenv(eval.QuicGoRoleEnv) != "1" {
			return 0, false
		}
		return serveQuicGo(os.Args[1:]), true
	}
}

// serveQuicGo is variant (a): quic-go v0.65's HTTP/3 server, its Transport
// answering every token-less Initial with a Retry (VerifySourceAddress
// always true), serving --root, until SIGTERM or SIGINT.
func serveQuicGo(args []string) int {
	fs := flag.NewFlagSet("quicgo-server", flag.ContinueOnError)
	addr := fs.String("addr", "", "UDP address")
	cert := fs.String("cert", "", "certificate PEM")
	key := fs.String("key", "", "key PEM")
	root := fs.String("root", "", "directory to serve")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := quicGoServer(*addr, *cert, *key, *root); err != nil {
		fmt.Fprintln(os.Stderr, "quicgo-server:", err)
		return 1
	}
	return 0
}

func quicGoServer(addr, certFile, keyFile, root string) error {
	if addr == "" || root == "" {
		return errors.New("--addr and --root are required")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	defer pc.Close()
	tr := &quicgo.Transport{Conn: pc, VerifySourceAddress: func(net.Addr) bool { return true }}
	defer tr.Close()
	ln, err := tr.ListenEarly(quicgohttp3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}), &quicgo.Config{})
	if err != nil {
		return err
	}
	srv := &quicgohttp3.Server{Handler: http.FileServer(http.Dir(root))}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
		ln.Close()
	}()
	fmt.Println("quic-go serving", addr)
	if err := srv.ServeListener(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && ctx.Err() == nil {
		return err
	}
	return nil
}
