//go:build !linux

package eval

import (
	"context"
	"errors"
)

// Run needs Linux: network namespaces, XDP and BPF_PROG_RUN live frames.
func Run(context.Context, Config) (*Results, error) {
	return nil, errors.New("eval: needs Linux (network namespaces, XDP, BPF_PROG_RUN live frames)")
}
