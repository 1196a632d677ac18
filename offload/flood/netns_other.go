//go:build !linux

package flood

import "errors"

// InPrivateNetns always reports false outside Linux: there are no network
// namespaces, so only loopback targets are allowed.
func InPrivateNetns() (bool, error) {
	return false, errors.New("network namespaces need Linux")
}
