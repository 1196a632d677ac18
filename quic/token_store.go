package quic

import (
	"container/list"
	"sync"
)

// ClientToken is an address-validation token a server sent in a NEW_TOKEN
// frame, kept by a client for its next connection to that server.
type ClientToken struct {
	data []byte
}

// TokenStore keeps NEW_TOKEN tokens on the client side (Config.TokenStore).
// The key is the server name of the TLS configuration, or the server's
// address when no name is set. Implementations must be safe for
// concurrent use.
type TokenStore interface {
	// Pop removes and returns a token for key, or nil if there is none.
	// A token is used once (RFC 9000 section 8.1.3: reuse would let the
	// network link connections).
	Pop(key string) *ClientToken
	// Put stores a token for key.
	Put(key string, token *ClientToken)
}

// lruTokenStore holds up to perOrigin tokens (newest first out) for each
// of up to maxOrigins keys, forgetting the least recently used key.
type lruTokenStore struct {
	mu         sync.Mutex
	maxOrigins int
	perOrigin  int
	order      *list.List // of *originTokens, most recently used first
	byKey      map[string]*list.Element
}

type originTokens struct {
	key    string
	tokens []*ClientToken // oldest first
}

// NewLRUTokenStore returns a TokenStore that keeps tokensPerOrigin tokens
// for each of maxOrigins servers, evicting the least recently used server
// and, within a server, the oldest token. Values below 1 are taken as 1.
func NewLRUTokenStore(maxOrigins, tokensPerOrigin int) TokenStore {
	return &lruTokenStore{
		maxOrigins: max(maxOrigins, 1),
		perOrigin:  max(tokensPerOrigin, 1),
		order:      list.New(),
		byKey:      make(map[string]*list.Element),
	}
}

func (s *lruTokenStore) Put(key string, token *ClientToken) {
	if token == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byKey[key]; ok {
		o := e.Value.(*originTokens)
		if len(o.tokens) == s.perOrigin {
			o.tokens = append(o.tokens[:0], o.tokens[1:]...)
		}
		o.tokens = append(o.tokens, token)
		s.order.MoveToFront(e)
		return
	}
	if s.order.Len() == s.maxOrigins {
		last := s.order.Back()
		delete(s.byKey, last.Value.(*originTokens).key)
		s.order.Remove(last)
	}
	s.byKey[key] = s.order.PushFront(&originTokens{key: key, tokens: []*ClientToken{token}})
}

func (s *lruTokenStore) Pop(key string) *ClientToken {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byKey[key]
	if !ok {
		return nil
	}
	o := e.Value.(*originTokens)
	tok := o.tokens[len(o.tokens)-1]
	o.tokens = o.tokens[:len(o.tokens)-1]
	if len(o.tokens) == 0 {
		delete(s.byKey, key)
		s.order.Remove(e)
	} else {
		s.order.MoveToFront(e)
	}
	return tok
}
