package reliability

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watcher reports file creations and writes in some directories (inotify), so that a kill can
// land right when the executor writes its state.
type watcher struct {
	f      *os.File
	wds    map[int32]string
	events chan string // full paths
}

func watch(t testing.TB, dirs ...string) *watcher {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	w := &watcher{wds: map[int32]string{}, events: make(chan string, 4096)}
	for _, d := range dirs {
		wd, err := unix.InotifyAddWatch(fd, d, unix.IN_CREATE|unix.IN_MODIFY|unix.IN_MOVED_TO)
		if err != nil {
			unix.Close(fd)
			t.Fatalf("inotify watch %s: %v", d, err)
		}
		w.wds[int32(wd)] = d
	}
	// A non-blocking descriptor is handed to the runtime poller: Close unblocks Read.
	w.f = os.NewFile(uintptr(fd), "inotify")
	go w.loop()
	return w
}

func (w *watcher) loop() {
	defer close(w.events)
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameb := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			name := string(nameb)
			for len(name) > 0 && name[len(name)-1] == 0 {
				name = name[:len(name)-1]
			}
			select {
			case w.events <- filepath.Join(w.wds[ev.Wd], name):
			default: // nobody is listening: drop
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

func (w *watcher) close() { _ = w.f.Close() }
