package fileserver

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
)

// WhoamiPath is the JSON endpoint that tells a client which protocol its
// request used; the demo page calls it.
const WhoamiPath = "/.well-known/turboretry/whoami"

// newContentHandler serves fsys with http.FileServer (which brings Range,
// HEAD and conditional requests) and adds ETags. immutable says the files
// never change (the embedded site), so their ETags can be content hashes.
func newContentHandler(fsys fs.FS, immutable bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(WhoamiPath, serveWhoami)
	mux.Handle("/", &fileHandler{fsys: fsys, immutable: immutable, files: http.FileServer(http.FS(fsys))})
	return mux
}

type fileHandler struct {
	fsys      fs.FS
	immutable bool
	files     http.Handler
	hashes    sync.Map // name -> ETag, for immutable files
}

func (h *fileHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		if tag := h.etag(r.URL.Path); tag != "" {
			// http.ServeContent reads this header to answer If-None-Match
			// and If-Range.
			w.Header().Set("ETag", tag)
		}
	}
	h.files.ServeHTTP(w, r)
}

// etag returns the ETag of the file that http.FileServer will send for
// urlPath, or "" when it will send something else (a redirect, a listing,
// an error).
func (h *fileHandler) etag(urlPath string) string {
	if strings.HasSuffix(urlPath, "/index.html") {
		return "" // FileServer redirects these to the directory
	}
	name := strings.TrimPrefix(path.Clean("/"+urlPath), "/")
	if name == "" {
		name = "."
	}
	fi, err := fs.Stat(h.fsys, name)
	if err != nil {
		return ""
	}
	if fi.IsDir() {
		if !strings.HasSuffix(urlPath, "/") {
			return "" // redirect to the slash form
		}
		name = path.Join(name, "index.html")
		if fi, err = fs.Stat(h.fsys, name); err != nil {
			return ""
		}
	}
	if !fi.Mode().IsRegular() {
		return ""
	}
	if !h.immutable {
		// Modification time and size, as most servers do: cheap, and it
		// changes whenever the file is replaced.
		return fmt.Sprintf(`"%x-%x"`, fi.ModTime().UnixNano(), fi.Size())
	}
	if tag, ok := h.hashes.Load(name); ok {
		return tag.(string)
	}
	f, err := h.fsys.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return ""
	}
	tag := `"` + base64.RawURLEncoding.EncodeToString(sum.Sum(nil)[:16]) + `"`
	h.hashes.Store(name, tag)
	return tag
}

// whoami is the JSON body of WhoamiPath.
type whoami struct {
	Protocol       string `json:"protocol"` // HTTP/1.1, HTTP/2.0 or HTTP/3.0
	Remote         string `json:"remote"`
	TLSVersion     string `json:"tls_version,omitempty"`
	ALPN           string `json:"alpn,omitempty"`
	RetryValidated bool   `json:"retry_validated"`
	TokenValidated bool   `json:"token_validated"`
	ZeroRTT        bool   `json:"zero_rtt"`
}

func serveWhoami(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ci := ConnInfoFromContext(r.Context())
	me := whoami{
		Protocol:       r.Proto,
		Remote:         r.RemoteAddr,
		RetryValidated: ci.RetryValidated,
		TokenValidated: ci.TokenValidated,
		ZeroRTT:        ci.ZeroRTT,
	}
	if r.TLS != nil {
		me.TLSVersion = tls.VersionName(r.TLS.Version)
		me.ALPN = r.TLS.NegotiatedProtocol
	}
	body, err := json.Marshal(me)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	body = append(body, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodGet {
		w.Write(body)
	}
}

// withCommonHeaders adds the headers every response carries: Alt-Svc, so
// that browsers try HTTP/3 on the same port over UDP, and nosniff.
func withCommonHeaders(next http.Handler, udpPort int) http.Handler {
	altSvc := fmt.Sprintf(`h3=":%d"; ma=86400`, udpPort)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Alt-Svc", altSvc)
		h.Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}
