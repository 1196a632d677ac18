package live

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// progRunAttr is the BPF_PROG_TEST_RUN member of union bpf_attr
// (include/uapi/linux/bpf.h), up to batch_size.
type progRunAttr struct {
	progFD, retval           uint32
	dataSizeIn, dataSizeOut  uint32
	dataIn, dataOut          uint64
	repeat, duration         uint32
	ctxSizeIn, ctxSizeOut    uint32
	ctxIn, ctxOut            uint64
	flags, cpu, batchSize, _ uint32
}

const bpfProgTestRun = 10

// progRunLive runs prog repeat times in live-frames mode on data with the
// context md. Unlike ebpf.Program.Run it does not restart an interrupted
// call from the beginning (the kernel does not say how far it got, and a
// restart would send more frames than asked): it returns EINTR, and the
// caller reads the program's own counter to resume.
func progRunLive(progFD int, data []byte, md *xdpMd, repeat, batch uint32) error {
	attr := progRunAttr{
		progFD:     uint32(progFD),
		dataSizeIn: uint32(len(data)),
		dataIn:     uint64(uintptr(unsafe.Pointer(&data[0]))),
		repeat:     repeat,
		ctxSizeIn:  uint32(unsafe.Sizeof(*md)),
		ctxIn:      uint64(uintptr(unsafe.Pointer(md))),
		flags:      unix.BPF_F_TEST_XDP_LIVE_FRAMES,
		batchSize:  batch,
	}
	_, _, e := unix.Syscall(unix.SYS_BPF, bpfProgTestRun, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(data)
	runtime.KeepAlive(md)
	if e != 0 {
		return e
	}
	return nil
}
