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
	"unicode/utf8"
)

// WhoamiPath is the JSON endpoint that tells a client which protocol its
// request used; the demo page calls it.
const WhoamiPath = "/.well-known/turboretry/whoami"

// Limits on request paths. No file can have a longer name (NAME_MAX and
// PATH_MAX on Linux), so longer ones are answered 404 without a lookup.
const (
	maxNameLen = 255
	maxPathLen = 4096
)

// allowedMethods is the Allow header of 405 and OPTIONS answers.
const allowedMethods = "GET, HEAD, OPTIONS"

// fileOptions say what the file handler serves beyond regular files.
type fileOptions struct {
	dotfiles bool // serve and list names starting with a dot
	listDirs bool // list directories that have no index.html
}

// newContentHandler serves fsys with http.FileServer (which brings Range,
// HEAD and conditional requests) and adds ETags. immutable says the files
// never change (the embedded site), so their ETags can be content hashes.
// Only GET and HEAD are served (OPTIONS says so).
func newContentHandler(fsys fs.FS, immutable bool, opt fileOptions) http.Handler {
	view := siteFS{fsys: fsys, dotfiles: opt.dotfiles}
	mux := http.NewServeMux()
	mux.HandleFunc(WhoamiPath, serveWhoami)
	mux.Handle("/", &fileHandler{fsys: view, immutable: immutable, listDirs: opt.listDirs, files: http.FileServer(http.FS(view))})
	return readOnlyMethods(mux)
}

// readOnlyMethods passes GET and HEAD to next, answers OPTIONS with the
// allowed methods and everything else with 405 Method Not Allowed, as a
// static file server has nothing to post, put or delete.
func readOnlyMethods(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			next.ServeHTTP(w, r)
		case http.MethodOptions:
			w.Header().Set("Allow", allowedMethods)
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Allow", allowedMethods)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
}

type fileHandler struct {
	fsys      fs.FS // a siteFS
	immutable bool
	listDirs  bool
	files     http.Handler
	hashes    sync.Map // name -> ETag, for immutable files
}

func (h *fileHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if code := checkPath(r.URL.Path); code != 0 {
		http.Error(w, http.StatusText(code), code)
		return
	}
	// One stat of the name answers both questions below: a request for
	// a file (the common case) then costs a single lookup before
	// FileServer's own open.
	name := fsName(r.URL.Path)
	fi, err := fs.Stat(h.fsys, name)
	if err != nil {
		fi = nil // FileServer answers the error itself
	}
	if !h.listDirs && h.isUnindexedDir(name, fi) {
		http.NotFound(w, r) // nor a redirect to the slash form
		return
	}
	if tag := h.etag(r.URL.Path, name, fi); tag != "" {
		// http.ServeContent reads this header to answer If-None-Match
		// and If-Range.
		w.Header().Set("ETag", tag)
	}
	h.files.ServeHTTP(w, r)
}

// checkPath returns the status for a request path that names no file, or
// 0: 400 for a NUL byte or invalid UTF-8 (neither is a name a client can
// mean), 404 for a name or path too long to exist.
func checkPath(p string) int {
	if strings.IndexByte(p, 0) >= 0 || !utf8.ValidString(p) {
		return http.StatusBadRequest
	}
	if len(p) > maxPathLen {
		return http.StatusNotFound
	}
	for elem := range strings.SplitSeq(p, "/") {
		if len(elem) > maxNameLen {
			return http.StatusNotFound
		}
	}
	return 0
}

// fsName is the fs path http.FileServer opens for urlPath.
func fsName(urlPath string) string {
	name := strings.TrimPrefix(path.Clean("/"+urlPath), "/")
	if name == "" {
		return "."
	}
	return name
}

// isUnindexedDir reports whether name, whose stat is fi (nil when the
// stat failed), is a directory without an index.html, which only a
// listing could answer.
func (h *fileHandler) isUnindexedDir(name string, fi fs.FileInfo) bool {
	if fi == nil || !fi.IsDir() {
		return false
	}
	index, err := fs.Stat(h.fsys, path.Join(name, "index.html"))
	return err != nil || index.IsDir()
}

// etag returns the ETag of the file that http.FileServer will send for
// urlPath, or "" when it will send something else (a redirect, a listing,
// an error). name is fsName(urlPath) and fi its stat (nil when the stat
// failed).
func (h *fileHandler) etag(urlPath, name string, fi fs.FileInfo) string {
	if strings.HasSuffix(urlPath, "/index.html") {
		return "" // FileServer redirects these to the directory
	}
	if fi == nil {
		return ""
	}
	var err error
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
		// Appended by hand, not with fmt.Sprintf: this runs for every
		// file request.
		var buf [40]byte
		tag := append(buf[:0], '"')
		tag = strconv.AppendInt(tag, fi.ModTime().UnixNano(), 16)
		tag = append(tag, '-')
		tag = strconv.AppendInt(tag, fi.Size(), 16)
		return string(append(tag, '"'))
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

// serveWhoami answers GET and HEAD (readOnlyMethods filters the rest).
func serveWhoami(w http.ResponseWriter, r *http.Request) {
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
