package http3

import (
	"crypto/tls"
	"net/http"
)

// ListenAndServeQUIC serves HTTP/3 with handler (http.DefaultServeMux
// when nil) on the UDP address addr, with the certificate in certFile
// and keyFile, as quic-go's function of the same name.
func ListenAndServeQUIC(addr, certFile, keyFile string, handler http.Handler) error {
	s := &Server{Addr: addr, Handler: handler}
	return s.ListenAndServeTLS(certFile, keyFile)
}

// ListenAndServeTLS serves handler (http.DefaultServeMux when nil) on
// addr over both HTTP/3 (UDP) and HTTPS (TCP, net/http), with the
// certificate in certFile and keyFile; the TCP responses announce the
// HTTP/3 port with Alt-Svc. It returns when either server fails, closing
// the other, as quic-go's function of the same name.
func ListenAndServeTLS(addr, certFile, keyFile string, handler http.Handler) error {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	if addr == "" {
		addr = ":https"
	}
	if handler == nil {
		handler = http.DefaultServeMux
	}
	quicServer := &Server{Addr: addr, Handler: handler, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	tcpServer := &http.Server{Addr: addr, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = quicServer.SetQUICHeaders(w.Header())
		handler.ServeHTTP(w, r)
	})}
	tcpErr, quicErr := make(chan error, 1), make(chan error, 1)
	go func() { tcpErr <- tcpServer.ListenAndServeTLS(certFile, keyFile) }()
	go func() { quicErr <- quicServer.ListenAndServe() }()
	select {
	case err := <-tcpErr:
		quicServer.Close()
		<-quicErr
		return err
	case err := <-quicErr:
		tcpServer.Close()
		<-tcpErr
		return err
	}
}
