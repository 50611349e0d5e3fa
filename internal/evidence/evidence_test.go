package evidence

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/identity"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/stage"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
)

func TestParseURI(t *testing.T) {
	for _, tc := range []struct {
		in, bucket, prefix, err string
	}{
		{"s3://bucket/prefix/", "bucket", "prefix/", ""},
		{"s3://bucket/a/b", "bucket", "a/b/", ""},
		{"s3://bucket", "bucket", "", ""},
		{"s3://bucket/", "bucket", "", ""},
		{"https://bucket/x", "", "", "must be s3://bucket/prefix/"},
		{"s3://Bad_Bucket/x", "", "", "not a valid bucket name"},
	} {
		loc, err := ParseURI(tc.in)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, Location{tc.bucket, tc.prefix}, loc, tc.in)
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		o   Options
		err string
	}{
		{Options{}, ""},
		{Options{URI: "s3://b-1/x"}, ""},
		{Options{URI: "s3://b-1/x", On: "sometimes"}, "--evidence-on"},
		{Options{URI: "s3://b-1/x", SSE: "aws:kms", KMSKeyID: "arn:aws:kms:us-east-1:1:key/x"}, ""},
		{Options{URI: "s3://b-1/x", SSE: "AES256", KMSKeyID: "k"}, "needs --evidence-sse aws:kms"},
		{Options{URI: "s3://b-1/x", SSE: "rot13"}, "--evidence-sse"},
		{Options{URI: "s3://b-1/x", Timeout: -time.Second}, "--evidence-timeout"},
		{Options{URI: "ftp://x"}, "--evidence-uri"},
		{Options{On: "never"}, "--evidence-on"},
	} {
		o := tc.o
		err := o.Check()
		if tc.err == "" {
			require.NoError(t, err)
			require.Equal(t, OnTerminate, o.On, "the default")
			require.Equal(t, DefaultTimeout, o.Timeout)
			continue
		}
		require.ErrorContains(t, err, tc.err)
	}
	_, err := CompileRedact([]string{"ok", "("})
	require.ErrorContains(t, err, `--evidence-redact "("`)
	_, err = CompileRedact([]string{"x*"})
	require.ErrorContains(t, err, "matches the empty string")
}

func TestTrigger(t *testing.T) {
	term := stage.Outcome{Status: state.StageTerminated, ExitCode: 4}
	soft := stage.Outcome{Status: state.StageFailed, ExitCode: 3}
	ok := stage.Outcome{Status: state.StageSucceeded}
	refused := stage.Outcome{Status: state.StageRefused, ExitCode: 4}
	again := stage.Outcome{Status: state.StageTerminated, ExitCode: 4, AlreadyRan: true}
	regTimeout := errors.New("node did not register")
	for _, tc := range []struct {
		on   string
		out  stage.Outcome
		err  error
		want string
	}{
		{OnTerminate, term, nil, OnTerminate},
		{OnTerminate, soft, nil, ""},
		{OnTerminate, refused, nil, ""},
		{OnTerminate, again, nil, ""},
		{OnFailure, soft, nil, OnFailure},
		{OnFailure, term, nil, OnTerminate},
		{OnFailure, ok, nil, ""},
		{OnFailure, stage.Outcome{}, regTimeout, OnFailure},
		{OnFailure, refused, nil, ""},
		{OnAlways, ok, nil, OnAlways},
		{OnAlways, refused, nil, OnAlways},
	} {
		got, yes := Options{URI: "s3://b-1/", On: tc.on}.Trigger(tc.out, tc.err)
		require.Equal(t, tc.want, got, "%s %+v", tc.on, tc.out)
		require.Equal(t, tc.want != "", yes)
	}
	_, yes := Options{On: OnAlways}.Trigger(ok, nil)
	require.False(t, yes, "no URI, no bundle")
}

func TestKeys(t *testing.T) {
	require.Equal(t, "unknown", KeyPart(""))
	require.Equal(t, "a_b_c", KeyPart("a/b c"))
	require.Equal(t, "unknown", KeyPart(".."))
	k, s := Keys(Location{"b", "p/"}, identity.Node{ClusterID: "pcs_1", ComputeNodeGroupID: "pcs_2", InstanceID: "i-3", BootID: "9f8e-1"})
	require.Equal(t, "p/pcs_1/pcs_2/i-3/9f8e-1.tar.gz", k)
	require.Equal(t, "p/pcs_1/pcs_2/i-3/9f8e-1.json", s)
}

func TestRedactor(t *testing.T) {
	r := &redactor{res: []*regexp.Regexp{regexp.MustCompile(`tok-[a-z0-9]+`), regexp.MustCompile(`10\.\d+\.\d+\.\d+`)}}
	got := string(r.lines([]byte("a tok-abc and 10.0.1.2\nclean\nno newline tok-x")))
	require.Equal(t, "a [REDACTED] and [REDACTED]\nclean\nno newline [REDACTED]", got)
	require.Equal(t, 3, r.n)
	js, err := r.jsonValue(map[string]any{"error": "tok-zz failed", "list": []any{"10.1.1.1"}})
	require.NoError(t, err)
	require.NotContains(t, string(js), "tok-zz")
	require.NotContains(t, string(js), "10.1.1.1")
}

// tail keeps the end of a file, whole lines only.
func TestTailAndLastLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.log")
	var b strings.Builder
	b.WriteString("[start x args=[] @ 1]\n")
	for i := 0; i < 1000; i++ {
		b.WriteString("line of output number ")
		b.WriteString(strings.Repeat("z", i%7))
		b.WriteString("\n")
	}
	b.WriteString("the last words\n[end x exit=1 @ 2]\n")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o600))
	data, size, cut, err := tail(p, 200)
	require.NoError(t, err)
	require.True(t, cut)
	require.EqualValues(t, b.Len(), size)
	require.LessOrEqual(t, len(data), 200)
	require.True(t, strings.HasPrefix(string(data), "line of output"), "a whole first line: %q", data[:20])
	require.True(t, strings.HasSuffix(string(data), "[end x exit=1 @ 2]\n"))
	require.Equal(t, "the last words", lastLine(data))
	require.Equal(t, "", lastLine([]byte("[start x args=[] @ 1]\n[end x exit=0 @ 1]\n")))
}

// bootLines keeps executor.log's lines from the boot's start on, at most max bytes, the end.
func TestBootLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "executor.log")
	lines := []string{
		`{"timestamp":"2026-11-30T09:00:00.000000Z","level":"INFO","message":"an earlier boot"}`,
		`{"timestamp":"2026-11-30T10:00:00.000000Z","level":"INFO","message":"this boot 1"}`,
		`{"timestamp":"2026-11-30T10:00:01.000000Z","level":"INFO","message":"this boot 2"}`,
	}
	require.NoError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	start := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	data, _, cut, err := bootLines(p, start, 1<<20)
	require.NoError(t, err)
	require.False(t, cut)
	require.Equal(t, lines[1]+"\n"+lines[2]+"\n", string(data))
	data, _, cut, err = bootLines(p, start, len(lines[2])+5)
	require.NoError(t, err)
	require.True(t, cut)
	require.Equal(t, lines[2]+"\n", string(data))
}

func TestParseSummary(t *testing.T) {
	ok := `{"schema_version":1,"instance_id":"i-1","boot_id":"b","scripts":[{"stage":"nodeReady","name":"a","state":"failed"}]}`
	s, err := ParseSummary([]byte(ok))
	require.NoError(t, err)
	require.True(t, s.Scripts[0].Failed())
	_, err = ParseSummary([]byte(`{"schema_version":2,"instance_id":"i-1","boot_id":"b","new_field":true}`))
	require.NoError(t, err, "a later version only adds fields")
	long, err := ParseSummary([]byte(`{"schema_version":1,"instance_id":"i-1","boot_id":"b","scripts":[{"name":"a","last_log_line":"` + strings.Repeat("x", 5000) + `"}]}`))
	require.NoError(t, err)
	require.Len(t, long.Scripts[0].LastLogLine, MaxTextLen)
	many := `{"schema_version":1,"instance_id":"i-1","boot_id":"b","scripts":[` + strings.TrimSuffix(strings.Repeat(`{"name":"a"},`, 41), ",") + `]}`
	for in, want := range map[string]string{
		`{not json`:            "not a summary",
		`[]`:                   "not a summary",
		`{"schema_version":0}`: "schema_version 0",
		`{"schema_version":1,"instance_id":"i-1"}`: "instance_id and boot_id are required",
		ok + ` {}`: "data after",
		many:       "41 scripts",
		`{"schema_version":1,"instance_id":["x"]}`: "not a summary",
		`{"schema_version":"1","instance_id":"i"}`: "not a summary",
	} {
		_, err := ParseSummary([]byte(in))
		require.ErrorContains(t, err, want, in)
	}
}

func TestAggregate(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	code := func(i int) *int { return &i }
	type found struct {
		key string
		s   *Summary
	}
	mk := func(key, inst string, min int, scripts ...ScriptSum) found {
		return found{key, &Summary{InstanceID: inst, BootID: "b", UploadedAt: t0.Add(time.Duration(min) * time.Minute), Scripts: scripts}}
	}
	got := []found{
		mk("k2", "i-2", 2, ScriptSum{Stage: "nodeReady", Name: "join", State: "failed", ExitCode: code(2), LastLogLine: "second"}),
		mk("k1", "i-1", 1, ScriptSum{Stage: "nodeReady", Name: "join", State: "failed", ExitCode: code(2), LastLogLine: "first"},
			ScriptSum{Stage: "nodeBootstrapped", Name: "setup", State: "succeeded"}),
		mk("k3", "i-1", 3, ScriptSum{Stage: "nodeReady", Name: "join", State: "download_failed", Error: "404"}),
		mk("k4", "i-3", 4, ScriptSum{Stage: "nodeReady", Name: "join", State: "failed", ExitCode: code(1), LastLogLine: "latest"},
			ScriptSum{Stage: "nodeReady", Name: "join", State: "failed", ExitCode: code(1)}),
		mk("k0", "i-4", 4, ScriptSum{Stage: "nodeReady", Name: "join", State: "failed", ExitCode: code(1), LastLogLine: "same time, lower key"}),
	}
	// The order summaries arrive in (concurrent reads) does not change the report.
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {2, 4, 0, 3, 1}} {
		g := newAggregator()
		for _, i := range order {
			g.add(got[i].key, got[i].s)
		}
		rep := &Report{}
		g.report(rep)
		require.Equal(t, 5, rep.Summaries)
		require.Equal(t, 4, rep.Instances)
		require.Len(t, rep.Scripts, 2)
		require.Equal(t, "setup", rep.Scripts[0].Script, "nodeBootstrapped first")
		j := rep.Scripts[1]
		require.Equal(t, 5, j.Failures, "a script listed twice in one summary counts once")
		require.Equal(t, 4, j.Nodes)
		require.Equal(t, 1, *j.CommonExitCode, "2 and 1 both twice: the lower")
		require.Equal(t, 2, j.CommonExitCount)
		require.Equal(t, t0.Add(time.Minute), *j.FirstSeen)
		require.Equal(t, t0.Add(4*time.Minute), *j.LastSeen)
		require.Equal(t, "latest", j.LastLogLine, "at the same time, the higher key")
		require.Equal(t, "i-3", j.LastInstance)
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"36h":                  now.Add(-36 * time.Hour),
		"7d":                   now.Add(-7 * 24 * time.Hour),
		"2026-11-01":           time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		"2026-11-29T08:00:00Z": time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC),
	} {
		got, err := ParseSince(in, now)
		require.NoError(t, err, in)
		require.True(t, want.Equal(got), "%s: %s", in, got)
	}
	_, err := ParseSince("last week", now)
	require.ErrorContains(t, err, `--since "last week"`)
}

func TestCleanForTerminal(t *testing.T) {
	require.Equal(t, "plain text", clean("plain text"))
	require.Equal(t, `\x1b[31mred`, clean("\x1b[31mred"))
}

// A log replaced by a symlink or a hard link is not packed.
func TestTailRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("root:x:0:0\n"), 0o600))
	sym := filepath.Join(dir, "sym.log")
	require.NoError(t, os.Symlink(secret, sym))
	_, _, _, err := tail(sym, 1<<20)
	require.ErrorContains(t, err, "is a symlink")
	hard := filepath.Join(dir, "hard.log")
	require.NoError(t, os.Link(secret, hard))
	_, _, _, err = tail(hard, 1<<20)
	require.ErrorContains(t, err, "hard links")
}
