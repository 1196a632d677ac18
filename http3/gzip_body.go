package http3

import (
	"compress/gzip"
	"io"
)

// gzipBody decodes a gzip response body that the Transport asked for
// (Transport.DisableCompression); the gzip reader is made on the first
// Read, so a body that is only closed costs nothing.
type gzipBody struct {
	body io.ReadCloser
	zr   *gzip.Reader
	err  error // sticky
}

func (g *gzipBody) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.zr == nil {
		zr, err := gzip.NewReader(g.body)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // an empty body is not a gzip stream
			}
			g.err = err
			return 0, err
		}
		g.zr = zr
	}
	n, err := g.zr.Read(p)
	if err != nil {
		g.err = err
	}
	return n, err
}

// Close closes the response body under the decoder.
func (g *gzipBody) Close() error { return g.body.Close() }
