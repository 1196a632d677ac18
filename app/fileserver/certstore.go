package fileserver

import (
	"crypto/tls"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// certStore holds the certificate the TLS handshakes use. Replacing it
// affects new handshakes only; established connections keep theirs.
type certStore struct {
	certFile, keyFile string // empty: self-signed in stateDir
	stateDir          string
	log               *slog.Logger

	cur atomic.Pointer[tls.Certificate]
	mu  sync.Mutex // serializes loads, so one renewal writes the files
}

// generated reports whether the certificate is the self-signed one.
func (s *certStore) generated() bool { return s.certFile == "" }

// load reads (or, when self-signed, creates or renews) the certificate and
// makes it current. On error the current certificate stays.
func (s *certStore) load() (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loadLocked()
}

func (s *certStore) loadLocked() (*tls.Certificate, error) {
	now := time.Now()
	if !s.generated() {
		c, err := loadKeyPair(s.certFile, s.keyFile)
		if err != nil {
			return nil, err
		}
		if now.After(c.Leaf.NotAfter) || now.Before(c.Leaf.NotBefore) {
			s.log.Warn("certificate is outside its validity period", "cert", s.certFile,
				"not_before", c.Leaf.NotBefore, "not_after", c.Leaf.NotAfter)
		}
		s.cur.Store(c)
		return c, nil
	}
	c, res, err := loadOrCreateSelfSigned(s.stateDir, now)
	if err != nil {
		return nil, err
	}
	switch res {
	case certCreated:
		s.log.Info("created self-signed certificate", "dir", s.stateDir, "not_after", c.Leaf.NotAfter, "spki_sha256", SPKIHash(c.Leaf))
	case certRenewed:
		s.log.Info("renewed expiring self-signed certificate", "dir", s.stateDir, "not_after", c.Leaf.NotAfter, "spki_sha256", SPKIHash(c.Leaf))
	case certReplaced:
		s.log.Warn("replaced unreadable self-signed certificate", "dir", s.stateDir, "spki_sha256", SPKIHash(c.Leaf))
	}
	s.cur.Store(c)
	return c, nil
}

// current returns the certificate in use.
func (s *certStore) current() *tls.Certificate { return s.cur.Load() }

// getCertificate is the tls.Config hook. A self-signed certificate that
// reaches its renewal time is replaced on the spot, so a long-running
// server never hands out an expired one; if that fails the old one is
// served and the failure logged.
func (s *certStore) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c := s.cur.Load()
	if !s.generated() || !needsRenewal(c.Leaf, time.Now()) {
		return c, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c = s.cur.Load(); !needsRenewal(c.Leaf, time.Now()) {
		return c, nil // another handshake renewed it
	}
	if nc, err := s.loadLocked(); err != nil {
		s.log.Error("renewing self-signed certificate", "err", err)
	} else {
		c = nc
	}
	return c, nil
}
