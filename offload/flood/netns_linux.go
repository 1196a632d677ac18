package flood

import (
	"errors"

	"golang.org/x/sys/unix"
)

// InPrivateNetns reports whether the calling OS thread is in a network
// namespace other than the initial one: its /proc/thread-self/ns/net
// inode differs both from the kernel's initial namespace inode and from
// PID 1's (when that is readable; containers often hide it).
func InPrivateNetns() (bool, error) {
	self, err := nsInode("/proc/thread-self/ns/net")
	if err != nil {
		if self, err = nsInode("/proc/self/ns/net"); err != nil {
			return false, err
		}
	}
	pid1, err := nsInode("/proc/1/ns/net")
	return isPrivateNetns(self, pid1, err == nil), nil
}

func nsInode(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, errors.New("cannot read network namespace " + path + ": " + err.Error())
	}
	return st.Ino, nil
}
