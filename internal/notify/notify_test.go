package notify_test

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/notify"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/notify/notifytest"
)

func TestSystemdNotifierSendsToNotifySocket(t *testing.T) {
	sock := notifytest.Listen(t)
	sock.Setenv(t)

	n := notify.New()
	require.NoError(t, n.Status("nodeBootstrapped/record-first-boot"))
	require.NoError(t, n.ExtendTimeout(90*time.Second))
	require.NoError(t, n.Ready())
	require.NoError(t, n.Status("two\nlines\r"))

	_, ok := sock.WaitFor("STATUS=two lines ", 5*time.Second)
	require.True(t, ok, "got %q", sock.Lines())
	assert.Equal(t, []string{
		"STATUS=nodeBootstrapped/record-first-boot",
		"EXTEND_TIMEOUT_USEC=90000000",
		"READY=1",
		"STATUS=two lines ",
	}, sock.Lines())
	for _, m := range sock.Messages() {
		assert.Len(t, m.Lines, 1, "one assignment per datagram")
	}
	// The socket stays in the environment (unsetEnvironment false): every later call reaches it.
	assert.Equal(t, sock.Path, os.Getenv("NOTIFY_SOCKET"))
}

func TestNotifierIsNoOpWithoutNotifySocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	os.Unsetenv("NOTIFY_SOCKET")
	n := notify.New()
	assert.False(t, notify.Enabled())
	assert.NoError(t, n.Ready())
	assert.NoError(t, n.Status("x"))
	assert.NoError(t, n.ExtendTimeout(time.Second))
}

func TestNotifierReportsUnreachableSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", t.TempDir()+"/nobody-listens.sock")
	assert.True(t, notify.Enabled())
	err := notify.New().Ready()
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "nobody-listens.sock"), err.Error())
}

func TestNop(t *testing.T) {
	sock := notifytest.Listen(t)
	sock.Setenv(t)
	var n notify.Notifier = notify.Nop{}
	assert.NoError(t, n.Ready())
	assert.NoError(t, n.Status("x"))
	assert.NoError(t, n.ExtendTimeout(time.Second))
	_, ok := sock.WaitFor("", 200*time.Millisecond)
	assert.False(t, ok, "Nop sent %q", sock.Lines())
}

func TestIsJournal(t *testing.T) {
	dir := t.TempDir()
	stream, err := os.Create(dir + "/stream")
	require.NoError(t, err)
	defer stream.Close()
	other, err := os.Create(dir + "/other")
	require.NoError(t, err)
	defer other.Close()
	fi, err := stream.Stat()
	require.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)

	t.Setenv("JOURNAL_STREAM", "")
	assert.False(t, notify.IsJournal(stream), "no JOURNAL_STREAM")
	t.Setenv("JOURNAL_STREAM", strconv.FormatUint(uint64(st.Dev), 10)+":"+strconv.FormatUint(st.Ino, 10))
	assert.True(t, notify.IsJournal(stream))
	assert.False(t, notify.IsJournal(other), "another file")
	assert.False(t, notify.IsJournal(&strings.Builder{}), "not a file")
	t.Setenv("JOURNAL_STREAM", "garbage")
	assert.False(t, notify.IsJournal(stream))
}
