package state_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
)

// The fuzz targets feed the state's two decoders — the snapshot (Decode) and the journal
// folded into it (Read, Open) — with whatever a crash, a full disk or a hand could leave in
// state.json and state.journal. The seeds are in testdata/fuzz/<target>/; `make fuzz` runs
// each target for FUZZTIME. Properties:
//   - nothing panics; every failure is a *CorruptError (never a silent reset);
//   - what loads can be saved and loads again the same (a state the executor read never
//     becomes unreadable once it writes it back);
//   - a torn line after the journal a writer left never turns a readable state into a
//     corrupt one;
//   - a writer (Open) reads exactly what a reader (Read) reads, and an event it records is
//     there for the next reader.

const fuzzBoot = "fuzz-boot"

func seedSnapshot() []byte {
	st := state.New("i-0123456789abcdef0", "boot-1", time.Date(2026, 10, 21, 0, 49, 33, 0, time.UTC))
	b := st.EnsureBoot("boot-1", st.CreatedAt)
	code := 0
	at := st.CreatedAt
	b.Stages["nodeBootstrapped"] = &state.StageRun{Status: state.StageSucceeded, StartedAt: at, EndedAt: &at,
		Scripts: []*state.ScriptRun{{Name: "record-first-boot", Status: state.ScriptSucceeded, ExitCode: &code, StartedAt: &at, DurationMS: 12}}}
	h := st.History("nodeBootstrapped", "record-first-boot")
	h.Runs, h.Ended, h.Last, h.LastBootID, h.Digest = 1, true, b.Stages["nodeBootstrapped"].Scripts[0], "boot-1", "ab"
	st.Seq = 2
	data, _ := json.MarshalIndent(st, "", " ")
	return append(data, '\n')
}

func seedJournal() []byte {
	at := time.Date(2026, 10, 22, 1, 0, 0, 0, time.UTC)
	code := 3
	var b bytes.Buffer
	for i, r := range []*state.ScriptRun{
		{Name: "every", Status: state.ScriptRunning, StartedAt: &at},
		{Name: "every", Status: state.ScriptFailed, ExitCode: &code, StartedAt: &at, DurationMS: 5},
	} {
		line, _ := json.Marshal(&state.Event{Seq: uint64(3 + i), BootID: "boot-2", Stage: "nodeReady", Run: r,
			Cache: &state.CacheRec{Digest: "cd", Location: "s3://bucket/every.sh", At: at}})
		b.Write(append(line, '\n'))
	}
	return b.Bytes()
}

// mustJSON is st as JSON without the start times Apply takes from the clock for a boot or
// stage an event names but the snapshot lacks (a reader's clock, not the state's content).
func mustJSON(st *state.State) []byte {
	b, _ := json.Marshal(st)
	var c state.State
	_ = json.Unmarshal(b, &c)
	for _, bt := range c.Boots {
		bt.StartedAt = time.Time{}
		for _, sr := range bt.Stages {
			sr.StartedAt = time.Time{}
		}
	}
	b, _ = json.Marshal(&c)
	return b
}

// mustRoundTrip checks that st saves and loads again unchanged.
func mustRoundTrip(t *testing.T, st *state.State) {
	t.Helper()
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatalf("a loaded state cannot be marshalled: %v", err)
	}
	again, err := state.Decode(data)
	if err != nil {
		t.Fatalf("a loaded state, saved, no longer loads: %v\n%s", err, data)
	}
	data2, _ := json.Marshal(again)
	if !bytes.Equal(data, data2) {
		t.Fatalf("a saved state loads differently:\n%s\n%s", data, data2)
	}
}

// exercise calls what the executor calls on a loaded state, then checks it still round-trips.
func exercise(t *testing.T, st *state.State) {
	t.Helper()
	now := time.Now().UTC()
	st.FirstBootStage("nodeBootstrapped")
	for _, b := range st.Boots {
		for _, sr := range b.Stages {
			for _, r := range sr.Scripts {
				sr.Script(r.Name)
				_ = r.Status.Ended()
			}
		}
	}
	if st.Seq >= state.MaxSeq {
		return // Record refuses to go past MaxSeq (FuzzRead checks it)
	}
	b := st.EnsureBoot(fuzzBoot, now)
	b.Stages["nodeReady"] = &state.StageRun{Status: state.StageRunning, StartedAt: now}
	code := 0
	st.Apply(&state.Event{Seq: st.Seq + 1, BootID: fuzzBoot, Stage: "nodeReady",
		Run: &state.ScriptRun{Name: "fuzzed", Status: state.ScriptSucceeded, ExitCode: &code, StartedAt: &now}})
	if h := st.Scripts[state.Key("nodeReady", "fuzzed")]; h == nil || !h.Ended {
		t.Fatalf("an applied end is not in the history: %+v", h)
	}
	mustRoundTrip(t, st)
}

func FuzzDecode(f *testing.F) {
	f.Add(seedSnapshot())
	f.Add([]byte(`{"version":1,"instance_id":"i","first_boot_id":"b","boots":[],"scripts":{}}`))
	f.Add([]byte(`{"version":1,"instance_id":"i","first_boot_id":"b","boots":[{"boot_id":"b","stages":{"x":{"scripts":[{"name":"n"}]}}}]}`))
	f.Add([]byte(`{"version":1,"seq":18446744073709551615,"instance_id":"i","first_boot_id":"b"}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":1,"instance_id":"i","first_boot_id":"b","boots":[null]}`))
	f.Add([]byte(`{"version":1,"instance_id":"i","first_boot_id":"b","scripts":{"a":null}}`))
	f.Add([]byte(`{"version":1,"instance_id":"i","first_boot_id":"b","unknown":1}`))
	f.Add([]byte("\xff\xfe"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := state.Decode(data)
		if err != nil {
			if st != nil {
				t.Fatalf("Decode returned a state and an error")
			}
			return
		}
		if st == nil {
			t.Fatalf("Decode returned neither a state nor an error")
		}
		mustRoundTrip(t, st)
		exercise(t, st)
	})
}

func FuzzRead(f *testing.F) {
	snap, journal := seedSnapshot(), seedJournal()
	f.Add(snap, journal)
	f.Add(snap, []byte{})
	f.Add(snap, append(append([]byte{}, journal...), `{"seq":5,"boot_id":"boot-2","stage":"nodeReady","run":{"na`...))
	f.Add(snap, append([]byte("{\"seq\":3,\"garbage\n"), journal...))
	f.Add([]byte{}, journal)
	f.Add([]byte(`{"version":1,"seq":18446744073709551615,"instance_id":"i","first_boot_id":"b"}`), []byte{})
	f.Add([]byte(`{"version":1,"seq":9223372036854775807,"instance_id":"i","first_boot_id":"b"}`), []byte{})
	f.Add(snap, []byte(`{"seq":18446744073709551615,"boot_id":"x","stage":"s","run":{"name":"n","status":"running"}}`+"\n"))
	f.Add(snap, []byte(`{"seq":1,"boot_id":"boot-2","stage":"nodeReady","run":{"name":"old","status":"running"}}`+"\n"))
	f.Add(snap, []byte(`{"seq":99,"boot_id":"x","stage":"s","run":{"name":"n","status":"succeeded"}}`+"\n"+"\n"))
	f.Fuzz(func(t *testing.T, snap, journal []byte) {
		dir := t.TempDir()
		sp, jp := filepath.Join(dir, "state.json"), filepath.Join(dir, "state.journal")
		write := func(p string, b []byte) {
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		write(sp, snap)
		write(jp, journal)
		st, err := state.Read(sp, jp)
		var ce *state.CorruptError
		if err != nil && !errors.As(err, &ce) {
			t.Fatalf("Read failed with an untyped error: %v", err)
		}
		if err == nil && st != nil {
			mustRoundTrip(t, st)
		}

		// The writer reads the same; what it records, the next reader sees.
		s, oerr := state.Open(sp, jp)
		if (oerr == nil) != (err == nil) {
			t.Fatalf("Read and Open disagree: %v / %v", err, oerr)
		}
		if oerr != nil {
			return
		}
		defer s.Close()
		if s.State == nil {
			return
		}
		// Open cut the journal back to its well-formed lines (a writer always appends after
		// them): a line torn after those changes nothing for a reader.
		cut, _ := os.ReadFile(jp)
		write(jp, append(append([]byte{}, cut...), `{"seq":`...))
		st2, err2 := state.Read(sp, jp)
		if err2 != nil {
			t.Fatalf("a torn last line made a readable state corrupt: %v", err2)
		}
		if a, b := mustJSON(st), mustJSON(st2); !bytes.Equal(a, b) {
			t.Fatalf("a torn last line changed the state:\n%s\n%s", a, b)
		}
		write(jp, cut)
		now := time.Now().UTC()
		if s.State.Seq >= state.MaxSeq {
			if s.Record(&state.Event{BootID: fuzzBoot, Stage: "s", Run: &state.ScriptRun{Name: "n"}}, false) == nil {
				t.Fatalf("Record past MaxSeq succeeded")
			}
			return
		}
		if err := s.Record(&state.Event{BootID: fuzzBoot, Stage: "nodeBootstrapped",
			Run: &state.ScriptRun{Name: "recorded", Status: state.ScriptRunning, StartedAt: &now}}, false); err != nil {
			t.Fatalf("Record: %v", err)
		}
		got, err := state.Read(sp, jp)
		if err != nil {
			t.Fatalf("after Record: %v", err)
		}
		if h := got.Scripts[state.Key("nodeBootstrapped", "recorded")]; h == nil || !h.Pending {
			t.Fatalf("a recorded start is lost for the next reader: %+v", h)
		}
		if err := s.Save(); err != nil {
			t.Fatalf("Save: %v", err)
		}
		got, err = state.Read(sp, jp)
		if err != nil {
			t.Fatalf("after Save: %v", err)
		}
		if h := got.Scripts[state.Key("nodeBootstrapped", "recorded")]; h == nil || !h.Pending {
			t.Fatalf("a recorded start is lost after Save: %+v", h)
		}
		mustRoundTrip(t, got)
	})
}
