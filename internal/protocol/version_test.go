package protocol

import "testing"

func TestVersion(t *testing.T) {
	if !Version1.IsSupported() || !Version2.IsSupported() || Version(0xff00001d).IsSupported() {
		t.Error("IsSupported wrong")
	}
	for _, v := range []Version{0x0a0a0a0a, 0x1a2a3a4a, 0xfafafafa} {
		if !v.IsReserved() {
			t.Errorf("%s not reserved", v)
		}
	}
	for _, v := range []Version{Version1, Version2, 0x0a0a0a0b, 0xabababab} {
		if v.IsReserved() {
			t.Errorf("%s reserved", v)
		}
	}
	if Version2.String() != "v2" || Version(0x1a2a3a4a).String() != "0x1a2a3a4a" {
		t.Error("String wrong")
	}
}
