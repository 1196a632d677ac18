package connid_test

import (
	"fmt"

	"github.com/turboretry/turboretry/internal/connid"
	"github.com/turboretry/turboretry/internal/protocol"
)

// A server connection wires LocalCIDs to the Transport's routing table and
// RemoteCIDs to the client's IDs.
func Example() {
	table := map[protocol.ConnectionID]string{}
	gen, _ := connid.NewGenerator(connid.DefaultLen)
	local, _ := connid.NewLocalCIDs(connid.LocalConfig{
		Generator: gen,
		ResetKey:  [32]byte{1},
		AddRoute: func(c protocol.ConnectionID) bool {
			if _, taken := table[c]; taken {
				return false
			}
			table[c] = "conn-1"
			return true
		},
		RemoveRoute: func(c protocol.ConnectionID) { delete(table, c) },
	})
	// After the client's transport parameters (active_connection_id_limit 8):
	_ = local.SetPeerLimit(8)
	n := 0
	for _, ok := local.PopNewConnectionID(); ok; _, ok = local.PopNewConnectionID() {
		n++ // append a NEW_CONNECTION_ID frame
	}
	fmt.Println("routed:", len(table), "frames:", n)

	clientSCID, _ := protocol.ParseConnectionID([]byte{0xc1, 0xc2, 0xc3, 0xc4})
	remote, _ := connid.NewRemoteCIDs(clientSCID, connid.RemoteConfig{Limit: 4})
	err := remote.HandleNewConnectionID(1, 1, []byte{0xd1, 0xd2, 0xd3, 0xd4}, [16]byte{9})
	seq, _ := remote.PopRetireConnectionID()
	fmt.Println(err, remote.Current(), "retire", seq)
	// Output:
	// routed: 4 frames: 3
	// <nil> d1d2d3d4 retire 0
}
