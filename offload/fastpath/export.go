package fastpath

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
)

// TableBytes is the size of one table in its exported byte form.
const TableBytes = TableWords * 8

// Words returns table i (0 or 1) itself, not a copy: the memory a BPF array
// map mirrors, bit b at word b/64, bit b%64. Read it only with atomic loads
// while the cache is in use.
func (c *Cache) Words(i int) ([]uint64, error) {
	if i != 0 && i != 1 {
		return nil, fmt.Errorf("fastpath: table index %d, want 0 or 1", i)
	}
	return c.tables[i], nil
}

// AppendTable appends table i (0 or 1) to dst as TableBytes bytes of
// little-endian uint64 words, the layout of the BPF map value on
// little-endian hosts. Words are read atomically one at a time, so a copy
// taken during traffic is a consistent snapshot per word, not per table.
func (c *Cache) AppendTable(dst []byte, i int) ([]byte, error) {
	t, err := c.Words(i)
	if err != nil {
		return dst, err
	}
	for j := range t {
		dst = binary.LittleEndian.AppendUint64(dst, atomic.LoadUint64(&t[j]))
	}
	return dst, nil
}
