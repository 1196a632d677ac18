package protocol

// Perspective says which end of a connection an endpoint is: the one that
// sends transport parameters, opens a stream, or initiated the connection.
// The zero value is neither, so a forgotten perspective is caught.
type Perspective int

// The two perspectives, with quic-go's values.
const (
	PerspectiveServer Perspective = 1
	PerspectiveClient Perspective = 2
)

// Opposite returns the other perspective.
func (p Perspective) Opposite() Perspective { return 3 - p }

// String returns "server" or "client".
func (p Perspective) String() string {
	switch p {
	case PerspectiveServer:
		return "server"
	case PerspectiveClient:
		return "client"
	}
	return "invalid perspective"
}
