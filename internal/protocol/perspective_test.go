package protocol

import "testing"

func TestPerspective(t *testing.T) {
	if PerspectiveClient.Opposite() != PerspectiveServer || PerspectiveServer.Opposite() != PerspectiveClient {
		t.Error("Opposite does not swap client and server")
	}
	if PerspectiveClient.String() != "client" || PerspectiveServer.String() != "server" || Perspective(0).String() != "invalid perspective" {
		t.Error("String wrong")
	}
}
