package e2e_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/evidence"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/metrics/metricstest"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/testenv"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/timeline"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/status"
)

// getObject reads bucket/key from the shared versitygw.
func (b *s3Bucket) get(t testing.TB, key string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := b.srv.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.name), Key: aws.String(key)})
	require.NoError(t, err, "get s3://%s/%s", b.name, key)
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	require.NoError(t, err)
	return data
}

// untar returns the files of a .tar.gz by name.
func untar(t testing.TB, tgz []byte) map[string]string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[h.Name] = string(data)
	}
	return files
}

// TestEvidenceOnTerminate: a TERMINATE on a sandbox node leaves a bundle and a summary under
// <prefix>/<cluster>/<node group>/<instance>/<boot>; the bundle holds this boot's executor.log
// lines, the script logs, status --json and a manifest, with --evidence-redact applied and
// nothing of the executor's environment; the exit code stays 4.
func TestEvidenceOnTerminate(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t, withEnv("PCS_LIFECYCLE_TEST_SECRET", "env-secret-7f3a9"))
	ok := b.put(t, "ok.sh", sh(`echo "setup done on $PCS_NODE_ID"`))
	bad := b.put(t, "bad.sh", sh(`echo "token=AKIA1234567890SECRET"; echo "mount failed: no such device" >&2; exit 7`))
	after := b.put(t, "after.sh", sh(`echo never`))
	cfg := n.writeConfig(stages([]scriptDef{script("setup", ok), script("mount fs", bad), script("after", after)}, nil))
	r := n.requireRun(4, "run", "--stage", bootstrapped, "--config", cfg,
		"--evidence-uri", "s3://"+b.name+"/evidence", "--evidence-redact", `AKIA[0-9A-Z]+`, "--evidence-redact", `node\d+`)
	require.NotContains(t, r.stderr, "evidence upload failed")

	base := "evidence/" + clusterID + "/" + cngID + "/" + n.instance + "/" + n.bootID()
	files := untar(t, b.get(t, base+".tar.gz"))
	dir := n.bootID() + "/"
	for _, f := range []string{"executor.log", "scripts/nodeBootstrapped/setup.log", "scripts/nodeBootstrapped/mount fs.log", "status.json", "manifest.json"} {
		require.Contains(t, files, dir+f)
	}
	require.NotContains(t, files, dir+"scripts/nodeBootstrapped/after.log", "a script that never ran has no log")
	for name, data := range files {
		require.NotContains(t, data, "env-secret-7f3a9", "%s holds the process environment", name)
		require.NotContains(t, data, "AKIA1234567890SECRET", "%s: not redacted", name)
		require.NotContains(t, data, n.name, "%s: not redacted", name)
	}
	require.Contains(t, files[dir+"scripts/nodeBootstrapped/mount fs.log"], "token=[REDACTED]")
	require.Contains(t, files[dir+"scripts/nodeBootstrapped/setup.log"], "setup done on [REDACTED]")
	require.Contains(t, files[dir+"executor.log"], "lifecycle script failed; terminating")
	for _, l := range strings.Split(strings.TrimSpace(files[dir+"executor.log"]), "\n") {
		require.True(t, json.Valid([]byte(l)), "executor.log line: %s", l)
	}
	var st status.Document
	require.NoError(t, json.Unmarshal([]byte(files[dir+"status.json"]), &st))
	require.Equal(t, 4, st.ExitCode)
	require.NotNil(t, st.Terminated)
	var man evidence.Manifest
	require.NoError(t, json.Unmarshal([]byte(files[dir+"manifest.json"]), &man))
	require.Equal(t, evidence.OnTerminate, man.Trigger)
	require.Equal(t, n.instance, man.Identity.InstanceID)
	require.Equal(t, clusterID, man.Identity.ClusterID)
	require.Equal(t, cngID, man.Identity.ComputeNodeGroupID)
	require.True(t, man.Identity.FirstBoot)
	require.NotEmpty(t, man.Versions.PCSLifecycle)
	require.NotEmpty(t, man.Versions.ConfigSHA256)
	require.Equal(t, 2, man.RedactPatterns)
	require.Positive(t, man.Redactions)
	require.Len(t, man.Stages, 1)
	require.Equal(t, "terminated", man.Stages[0].Status)
	require.NotNil(t, man.Timeline)
	require.Len(t, man.Files, 4)

	var sum evidence.Summary
	raw := b.get(t, base+".json")
	require.Equal(t, 1, bytes.Count(raw, []byte("\n")), "one JSON object on one line")
	require.NoError(t, json.Unmarshal(raw, &sum))
	require.Equal(t, evidence.SchemaVersion, sum.SchemaVersion)
	require.Equal(t, base+".tar.gz", sum.BundleKey)
	require.True(t, sum.InstanceFailed)
	require.Equal(t, 4, sum.ExitCode)
	var failed []evidence.ScriptSum
	for _, s := range sum.Scripts {
		if s.Failed() {
			failed = append(failed, s)
		}
	}
	require.Len(t, failed, 1)
	require.Equal(t, "mount fs", failed[0].Name)
	require.Equal(t, 7, *failed[0].ExitCode)
	require.Equal(t, "mount failed: no such device", failed[0].LastLogLine)

	// The upload is in executor.log and in status.
	n.requireLog("message", "evidence uploaded", "uri", "s3://"+b.name+"/"+base+".tar.gz")
	d, code := n.status()
	require.Equal(t, 4, code)
	require.NotNil(t, d.Evidence)
	require.True(t, d.Evidence.OK)
	txt := n.run("status", "--wide").stdout
	require.Contains(t, txt, "evidence: uploaded after nodeBootstrapped to s3://"+b.name+"/"+base+".tar.gz")

	// A refused run on the terminated instance uploads nothing more (default: terminate).
	n.reboot()
	n.requireRun(4, "run", "--stage", bootstrapped, "--evidence-uri", "s3://"+b.name+"/evidence")
	_, err := os.Stat(filepath.Join(b.srv.Dir, b.name, "evidence", clusterID, cngID, n.instance, n.bootID()+".json"))
	require.ErrorIs(t, err, os.ErrNotExist)

	// The metrics of the refused boot speak status's vocabulary: the stage refused, its scripts
	// refused, the instance failed.
	fams := metricstest.Parse(t, []byte(n.requireRun(0, "status", "--format", "prometheus").stdout))
	v, found := metricstest.Value(t, fams, "pcs_lifecycle_instance_failed")
	require.True(t, found)
	require.Equal(t, 1.0, v)
	require.Equal(t, []string{"refused"}, metricstest.LabelValues(fams, "pcs_lifecycle_stage_status", "status", "stage", bootstrapped))
	for _, sc := range []string{"setup", "mount fs", "after"} {
		require.Equal(t, []string{"refused"}, metricstest.LabelValues(fams, "pcs_lifecycle_script_state", "state", "script", sc), sc)
	}
}

// TestEvidenceOnFailureAndSSE: --evidence-on failure uploads after a CONTINUE failure, with
// the encryption chosen; a successful stage uploads nothing.
func TestEvidenceOnFailureAndSSE(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	srv := testenv.SharedS3(t)
	p := testenv.StartFaultProxy(t, testenv.FaultOptions{Upstream: strings.TrimPrefix(srv.Endpoint, "http://")})
	n := newNode(t, withEnv("AWS_ENDPOINT_URL_S3", p.URL))
	fail := b.put(t, "fail.sh", sh(`exit 3`))
	okLoc := b.put(t, "ok.sh", sh(`true`))
	cfg := n.writeConfig(stages([]scriptDef{script("ok", okLoc).every()}, []scriptDef{script("soft", fail).onErr("CONTINUE")}))
	args := []string{"--evidence-uri", "s3://" + b.name + "/ev/", "--evidence-on", "failure", "--evidence-sse", "AES256"}
	n.requireRun(0, "run", append([]string{"--stage", bootstrapped, "--config", cfg}, args...)...)
	require.Empty(t, p.Requests("/ev/"), "a stage that succeeded uploads nothing under --evidence-on failure")
	n.requireRun(3, "run", append([]string{"--stage", ready, "--registration-timeout", "0"}, args...)...)
	puts := p.Requests("/ev/")
	require.Len(t, puts, 2, "the bundle, then its summary")
	for _, r := range puts {
		require.Equal(t, "PUT", r.Method)
		require.Equal(t, "AES256", r.Header.Get("X-Amz-Server-Side-Encryption"))
	}
	require.True(t, strings.HasSuffix(puts[0].Path, ".tar.gz"))
	require.True(t, strings.HasSuffix(puts[1].Path, ".json"))
	var sum evidence.Summary
	require.NoError(t, json.Unmarshal(b.get(t, "ev/"+clusterID+"/"+cngID+"/"+n.instance+"/"+n.bootID()+".json"), &sum))
	require.Equal(t, evidence.OnFailure, sum.Trigger)
	require.Equal(t, ready, sum.Stage)
}

// TestEvidenceServerDownOrStalling: an S3 endpoint that refuses connections or never answers
// leaves the exit code as it was, ends within --evidence-timeout, and says so in one WARN line,
// in status and in the metrics. (The script comes over https, so only S3 is broken.)
func TestEvidenceServerDownOrStalling(t *testing.T) {
	t.Parallel()
	w := newWeb(t)
	bad := w.put("/bad.sh", sh(`exit 9`))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	srv := testenv.SharedS3(t)
	stall := testenv.StartFaultProxy(t, testenv.FaultOptions{Upstream: strings.TrimPrefix(srv.Endpoint, "http://")})
	stall.Inject("/", testenv.Stall)

	for _, tc := range []struct {
		name, endpoint, want string
	}{
		{"down", closed, "connection refused"},
		{"stalling", stall.URL, "--evidence-timeout 2s expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := newNode(t, withCA(w), withEnv("AWS_ENDPOINT_URL_S3", tc.endpoint)).with(t)
			prom := filepath.Join(t.TempDir(), "pcs.prom")
			cfg := n.writeConfig(stages([]scriptDef{script("bad", bad)}, nil))
			r := n.requireRun(4, "run", "--stage", bootstrapped, "--config", cfg, "--evidence-uri", "s3://evidence-bucket/x/",
				"--evidence-timeout", "2s", "--metrics-textfile", prom)
			require.Contains(t, r.stderr, "evidence upload failed")
			warn := n.find("message", "evidence upload failed; the boot goes on")
			require.Len(t, warn, 1)
			require.Equal(t, "WARN", warn[0].str("level"))
			require.Contains(t, warn[0].str("error"), tc.want)
			d, code := n.status()
			require.Equal(t, 4, code)
			require.NotNil(t, d.Evidence)
			require.False(t, d.Evidence.OK)
			require.Contains(t, d.Evidence.Error, tc.want)
			require.Contains(t, n.run("status", "--wide").stdout, "evidence: upload after nodeBootstrapped FAILED")
			data, err := os.ReadFile(prom)
			require.NoError(t, err)
			fams := metricstest.Parse(t, data)
			v, ok := metricstest.Value(t, fams, "pcs_lifecycle_evidence_upload_success")
			require.True(t, ok)
			require.Zero(t, v)
		})
	}
}

// TestMetricsTextfile: --metrics-textfile (or its variable) is written after each stage, parses,
// passes promlint, has the values of the state, and is what status --format prometheus prints.
func TestMetricsTextfile(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	prom := filepath.Join(t.TempDir(), "textfile", "pcs_lifecycle.prom")
	require.NoError(t, os.MkdirAll(filepath.Dir(prom), 0o755))
	n := newNode(t, withEnv("PCS_LIFECYCLE_METRICS_TEXTFILE", prom))
	okLoc := b.put(t, "ok.sh", sh(`true`))
	soft := b.put(t, "soft.sh", sh(`exit 5`))
	cfg := n.writeConfig(stages([]scriptDef{script("ok", okLoc).every(), script("soft", soft).every().onErr("CONTINUE")},
		[]scriptDef{script("join", okLoc).every()}))
	n.requireRun(3, "run", "--stage", bootstrapped, "--config", cfg)
	data, err := os.ReadFile(prom)
	require.NoError(t, err)
	fams := metricstest.Parse(t, data)
	val := func(name string, labels ...string) float64 {
		t.Helper()
		v, ok := metricstest.Value(t, fams, name, labels...)
		require.True(t, ok, "%s%v", name, labels)
		return v
	}
	require.Equal(t, 1.0, val("pcs_lifecycle_first_boot"))
	require.Equal(t, 0.0, val("pcs_lifecycle_instance_failed"))
	require.Equal(t, 3.0, val("pcs_lifecycle_stage_exit_code", "stage", bootstrapped))
	require.Equal(t, 1.0, val("pcs_lifecycle_stage_status", "stage", bootstrapped, "status", "failed"))
	require.Equal(t, 5.0, val("pcs_lifecycle_script_last_exit_code", "script", "soft"))
	require.Equal(t, 1.0, val("pcs_lifecycle_script_failures_total", "script", "soft"))
	require.Equal(t, 0.0, val("pcs_lifecycle_script_failures_total", "script", "ok"))
	require.Equal(t, 1.0, val("pcs_lifecycle_script_runs_total", "script", "ok"))
	require.Equal(t, 0.0, val("pcs_lifecycle_script_runs_total", "script", "join"))
	require.Equal(t, []string{"pending"}, metricstest.LabelValues(fams, "pcs_lifecycle_script_state", "state", "script", "join"))
	val("pcs_lifecycle_script_last_duration_seconds", "script", "ok")
	fi, err := os.Stat(prom)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())

	// What status prints is the file, byte for byte.
	r := n.requireRun(0, "status", "--format", "prometheus")
	require.Equal(t, string(data), r.stdout)

	// A reboot: the counters go on, the stage's registration wait is there after nodeReady.
	n.reboot()
	n.requireRun(3, "run", "--stage", bootstrapped)
	n.requireRun(0, "run", "--stage", ready, "--registration-timeout", "0")
	data, err = os.ReadFile(prom)
	require.NoError(t, err)
	fams = metricstest.Parse(t, data)
	require.Equal(t, 0.0, val("pcs_lifecycle_first_boot"))
	require.Equal(t, 2.0, val("pcs_lifecycle_script_failures_total", "script", "soft"))
	require.Equal(t, 2.0, val("pcs_lifecycle_script_runs_total", "script", "ok"))
	require.Equal(t, 0.0, val("pcs_lifecycle_stage_exit_code", "stage", ready))
	require.Equal(t, []string{"succeeded"}, metricstest.LabelValues(fams, "pcs_lifecycle_script_state", "state", "script", "join"))
}

// TestTimeline: status --timeline shows the executor starts, the downloads, each stage and
// script in order, with durations; --sort duration puts the slowest first.
func TestTimeline(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	n := newNode(t)
	quick := b.put(t, "quick.sh", sh(`true`))
	slow := b.put(t, "slow.sh", sh(`sleep 0.3`))
	cfg := n.writeConfig(stages([]scriptDef{script("quick", quick), script("slow", slow)}, []scriptDef{script("join", quick)}))
	n.requireRun(0, "run", "--stage", bootstrapped, "--config", cfg)
	n.requireRun(0, "run", "--stage", ready, "--registration-timeout", "0")

	r := n.requireRun(0, "status", "--timeline", "--json")
	var tl timeline.Timeline
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tl), r.stdout)
	require.Equal(t, n.bootID(), tl.BootID)
	var kinds, names []string
	for i, e := range tl.Entries {
		kinds = append(kinds, e.Kind)
		names = append(names, e.Name)
		if i > 0 {
			require.False(t, e.Start.Before(tl.Entries[i-1].Start), "chronological")
		}
	}
	require.Equal(t, "executor", kinds[0])
	require.Contains(t, kinds, "downloads")
	for _, want := range []string{bootstrapped, bootstrapped + "/quick", bootstrapped + "/slow", ready, ready + "/join"} {
		require.Contains(t, names, want)
	}
	require.Equal(t, 2, strings.Count(strings.Join(kinds, " "), "executor"), "one per run")

	r = n.requireRun(0, "status", "--timeline", "--sort", "duration", "--json")
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tl))
	for i := 1; i < len(tl.Entries); i++ {
		require.GreaterOrEqual(t, *tl.Entries[i-1].DurationMS, *tl.Entries[i].DurationMS, "slowest first")
	}
	// The slow script outlasts every other script (the stage that holds it may come first).
	var scripts []string
	for _, e := range tl.Entries {
		if e.Kind == "script" {
			scripts = append(scripts, e.Script)
		}
	}
	require.Equal(t, "slow", scripts[0])

	txt := n.requireRun(0, "status", "--timeline").stdout
	require.Contains(t, txt, "executor started (run --stage nodeBootstrapped)")
	require.Contains(t, txt, "  nodeBootstrapped/slow: succeeded exit=0")
	blame := n.requireRun(0, "status", "--timeline", "--sort", "duration").stdout
	require.NotContains(t, blame, "executor started", "blame lists what took time")

	n.requireRun(2, "status", "--sort", "duration")
	n.requireRun(2, "status", "--timeline", "--format", "prometheus")

	// Under daemon: READY=1 and the registration wait are steps of the timeline too.
	d := newNode(t)
	dcfg := d.writeConfig(stages([]scriptDef{script("quick", quick)}, []scriptDef{script("join", quick)}))
	d.requireRun(0, "daemon", "--config", dcfg, "--scontrol", filepath.Join(t.TempDir(), "no-scontrol"), "--no-config-grace", "0")
	r = d.requireRun(0, "status", "--timeline", "--json")
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tl), r.stdout)
	kinds = nil
	for _, e := range tl.Entries {
		kinds = append(kinds, e.Kind)
		if e.Kind == "registration_wait" {
			require.Equal(t, "Slurm not configured", e.Result)
		}
	}
	require.Subset(t, kinds, []string{"executor", "downloads", "stage", "script", "ready", "registration_wait"})
	require.Less(t, strings.Index(strings.Join(kinds, " "), "ready"), strings.Index(strings.Join(kinds, " "), "registration_wait"))
}

// TestReportFleet: report over the bundles of several nodes prints the expected counts, reads
// the summaries only, narrows by cluster, node group, instance and time, and skips hostile
// objects by name without failing.
func TestReportFleet(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	mount := b.put(t, "mount.sh", sh(`echo "mounting"; echo "mount: /fsx: no such device" >&2; exit 32`))
	mountOther := b.put(t, "mount2.sh", sh(`echo "mount: timeout"; exit 28`))
	okLoc := b.put(t, "ok.sh", sh(`true`))
	soft := b.put(t, "soft.sh", sh(`echo "warning only"; exit 1`))
	uri := "s3://" + b.name + "/fleet/"
	var instances []string
	// Three nodes fail "mount fs" under TERMINATE (exit 32, 32, 28); two of them also fail
	// "tune" under CONTINUE; one node is healthy.
	for i, loc := range []string{mount, mount, mountOther, ""} {
		n := newNode(t)
		instances = append(instances, n.instance)
		defs := []scriptDef{script("setup", okLoc)}
		if i < 2 {
			defs = append(defs, script("tune", soft).onErr("CONTINUE"))
		}
		code := 0
		if loc != "" {
			defs = append(defs, script("mount fs", loc))
			code = 4
		} else {
			code = 0
		}
		n.requireRun(code, "run", "--stage", bootstrapped, "--config", n.writeConfig(stages(defs, nil)),
			"--evidence-uri", uri, "--evidence-on", "always")
	}
	// Hostile and foreign objects under the prefix.
	base := "fleet/" + clusterID + "/" + cngID + "/"
	b.put(t, base+"i-hostile/big.json", bytes.Repeat([]byte(" "), evidence.MaxSummarySize+1))
	b.put(t, base+"i-hostile/garbage.json", []byte("{not json"))
	b.put(t, base+"i-hostile/empty.json", []byte(`{"schema_version":1}`))
	b.put(t, "fleet/stray.json", []byte(`{}`))
	b.put(t, base+"i-hostile/notes.txt", []byte("ignored: not a summary"))
	// Another cluster's node, as a summary written by hand (the filters must leave it out).
	other := evidence.Summary{SchemaVersion: 1, ClusterID: "pcs_other", ComputeNodeGroupID: "pcs_ng2", InstanceID: "i-other", BootID: "b1",
		UploadedAt: time.Now().UTC(), Trigger: "terminate", Stage: bootstrapped, ExitCode: 4,
		Scripts: []evidence.ScriptSum{{Stage: bootstrapped, Name: "mount fs", State: "failed", ExitCode: intp(99), LastLogLine: "\x1b[31mred\x1b[0m"}}}
	raw, err := json.Marshal(other)
	require.NoError(t, err)
	b.put(t, "fleet/pcs_other/pcs_ng2/i-other/b1.json", raw)

	n := newNode(t)
	r := n.requireRun(0, "report", uri, "--json")
	var rep evidence.Report
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	require.Equal(t, 5, rep.Summaries)
	require.Equal(t, 5, rep.Instances)
	var skipped []string
	for _, s := range rep.Skipped {
		skipped = append(skipped, s.Key)
	}
	require.ElementsMatch(t, []string{base + "i-hostile/big.json", base + "i-hostile/garbage.json", base + "i-hostile/empty.json", "fleet/stray.json"}, skipped)
	row := func(rep evidence.Report, script string) evidence.Row {
		for _, r := range rep.Scripts {
			if r.Stage == bootstrapped && r.Script == script {
				return r
			}
		}
		require.FailNow(t, "no row", script)
		return evidence.Row{}
	}
	m := row(rep, "mount fs")
	require.Equal(t, 4, m.Failures)
	require.Equal(t, 4, m.Nodes)
	require.Equal(t, 32, *m.CommonExitCode)
	require.Equal(t, 2, m.CommonExitCount)
	require.NotNil(t, m.FirstSeen)
	require.False(t, m.LastSeen.Before(*m.FirstSeen))
	tune := row(rep, "tune")
	require.Equal(t, 2, tune.Failures)
	require.Equal(t, 2, tune.Boots)
	require.Equal(t, "warning only", tune.LastLogLine)
	setup := row(rep, "setup")
	require.Zero(t, setup.Failures)
	require.Equal(t, 4, setup.Boots)

	// Narrowed to our cluster and node group: the hand-written node is out.
	r = n.requireRun(0, "report", uri, "--cluster", clusterID, "--node-group", cngID, "--json")
	rep = evidence.Report{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Equal(t, 4, rep.Summaries)
	m = row(rep, "mount fs")
	require.Equal(t, 3, m.Failures)
	require.Equal(t, "mount: timeout", m.LastLogLine, "the latest failure's last line")
	require.Equal(t, instances[2], m.LastInstance)

	r = n.requireRun(0, "report", uri, "--instance", instances[0], "--json")
	rep = evidence.Report{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Equal(t, 1, rep.Summaries)
	require.Equal(t, "mount: /fsx: no such device", row(rep, "mount fs").LastLogLine)

	r = n.requireRun(0, "report", uri, "--since", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "--json")
	rep = evidence.Report{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Zero(t, rep.Summaries)

	// The text: counts per script, the skipped keys named, no terminal escapes passed through.
	txt := n.requireRun(0, "report", uri).stdout
	require.Contains(t, txt, "5 summaries of 5 instances; 4 skipped")
	require.Regexp(t, `nodeBootstrapped\s+mount fs\s+4/4\s+4\s+\S+\s+\S+\s+32 \(2 of 4\)\s+`, txt)
	require.Contains(t, txt, base+"i-hostile/big.json: ")
	require.NotContains(t, txt, "\x1b")

	n.requireRun(2, "report", "https://example.com/x")
	n.requireRun(2, "report", uri, "--since", "yesterday")
}

// TestEvidenceAndMetricsFlagsChecked: bad values are usage errors naming the flag, before
// anything runs; the timeline of a boot where nothing ran says so (exit 5).
func TestEvidenceAndMetricsFlagsChecked(t *testing.T) {
	t.Parallel()
	n := newNode(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--evidence-uri", "https://bucket/x"}, "--evidence-uri"},
		{[]string{"--evidence-uri", "s3://b-1/x", "--evidence-on", "sometimes"}, "--evidence-on"},
		{[]string{"--evidence-uri", "s3://b-1/x", "--evidence-sse", "rot13"}, "--evidence-sse"},
		{[]string{"--evidence-redact", "("}, `--evidence-redact "("`},
		{[]string{"--evidence-uri", "s3://b-1/x", "--evidence-timeout", "-1s"}, "--evidence-timeout"},
	} {
		r := n.requireRun(2, "run", append([]string{"--stage", bootstrapped}, tc.args...)...)
		require.Contains(t, r.stderr, tc.want, tc.args)
	}
	r := n.run("daemon", "--evidence-on", "never")
	require.Equal(t, 2, r.code, r)
	require.NoFileExists(t, filepath.Join(n.path("var/lib/amazon/pcs/lifecycle"), "state.json"), "nothing ran")
	r = n.requireRun(5, "status", "--timeline")
	require.Contains(t, r.stderr, "nothing recorded on boot")
}

// TestEvidenceDaemonOneBundlePerBoot: under daemon, a failure in nodeBootstrapped under
// CONTINUE is packed after nodeReady (READY=1 never waits on S3), in one bundle for the boot;
// a TERMINATE is packed at once.
func TestEvidenceDaemonOneBundlePerBoot(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	srv := testenv.SharedS3(t)
	p := testenv.StartFaultProxy(t, testenv.FaultOptions{Upstream: strings.TrimPrefix(srv.Endpoint, "http://")})
	soft := b.put(t, "soft.sh", sh(`echo "soft failure"; exit 3`))
	okLoc := b.put(t, "ok.sh", sh(`true`))
	hard := b.put(t, "hard.sh", sh(`exit 9`))
	noSlurm := []string{"--scontrol", filepath.Join(t.TempDir(), "no-scontrol"), "--no-config-grace", "0"}

	n := newNode(t, withEnv("AWS_ENDPOINT_URL_S3", p.URL))
	cfg := n.writeConfig(stages([]scriptDef{script("soft", soft).onErr("CONTINUE")}, []scriptDef{script("join", okLoc)}))
	n.requireRun(3, "daemon", append([]string{"--config", cfg, "--evidence-uri", "s3://" + b.name + "/d/", "--evidence-on", "failure"}, noSlurm...)...)
	puts := p.Requests("/d/")
	require.Len(t, puts, 2, "one bundle and its summary for the boot")
	var sum evidence.Summary
	require.NoError(t, json.Unmarshal(b.get(t, "d/"+clusterID+"/"+cngID+"/"+n.instance+"/"+n.bootID()+".json"), &sum))
	require.Equal(t, ready, sum.Stage, "made after nodeReady")
	require.Equal(t, evidence.OnFailure, sum.Trigger)
	require.Len(t, sum.Stages, 2)
	var marks []string
	for _, l := range n.executorLog() {
		if m := l.str("message"); m == "evidence uploaded" || m == "node registered with Slurm" || strings.HasPrefix(m, "Slurm is not configured") {
			marks = append(marks, m)
		}
	}
	require.Equal(t, "evidence uploaded", marks[len(marks)-1], "after the registration step: %v", marks)

	t2 := newNode(t, withEnv("AWS_ENDPOINT_URL_S3", p.URL))
	cfg = t2.writeConfig(stages([]scriptDef{script("hard", hard)}, []scriptDef{script("join", okLoc)}))
	t2.requireRun(4, "daemon", append([]string{"--config", cfg, "--evidence-uri", "s3://" + b.name + "/t/"}, noSlurm...)...)
	require.NoError(t, json.Unmarshal(b.get(t, "t/"+clusterID+"/"+cngID+"/"+t2.instance+"/"+t2.bootID()+".json"), &sum))
	require.Equal(t, bootstrapped, sum.Stage)
	require.Equal(t, evidence.OnTerminate, sum.Trigger)
}
