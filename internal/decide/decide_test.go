package decide_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/decide"
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

func TestRun(t *testing.T) {
	ended := &state.ScriptHistory{Runs: 1, Ended: true}
	pending := &state.ScriptHistory{Runs: 1, Pending: true}
	done := &state.ScriptRun{Status: state.ScriptSucceeded}
	failed := &state.ScriptRun{Status: state.ScriptFailed}
	running := &state.ScriptRun{Status: state.ScriptRunning}
	interrupted := &state.ScriptRun{Status: state.ScriptInterrupted}
	skipped := &state.ScriptRun{Status: state.ScriptSkipped}
	const fbo, every = lifecycle.FirstBootOnly, lifecycle.EveryBoot
	tests := []struct {
		name string
		in   decide.Input
		run  bool
		why  string
	}{
		{"first boot, first-boot-only", decide.Input{Policy: fbo, FirstBoot: true}, true, decide.ReasonFirstBoot},
		{"first boot, every boot", decide.Input{Policy: every, FirstBoot: true}, true, decide.ReasonEveryBoot},
		{"reboot, every boot", decide.Input{Policy: every, History: ended, FirstBootStageEnded: true}, true, decide.ReasonEveryBoot},
		{"reboot, first-boot-only that ran", decide.Input{Policy: fbo, History: ended, FirstBootStageEnded: true}, false, decide.ReasonNotFirstBoot},
		{"reboot, first-boot-only that failed (ended)", decide.Input{Policy: fbo, History: ended, FirstBootStageEnded: false}, false, decide.ReasonNotFirstBoot},
		{"reboot, first-boot-only interrupted", decide.Input{Policy: fbo, History: pending, FirstBootStageEnded: false}, true, decide.ReasonInterrupted},
		{"reboot, first-boot-only never reached, first boot's stage cut", decide.Input{Policy: fbo}, true, decide.ReasonFirstBootUnended},
		{"reboot, first-boot-only never reached after STOP_SEQUENCE", decide.Input{Policy: fbo, FirstBootStageEnded: true}, false, decide.ReasonNotFirstBoot},
		{"same boot, succeeded already", decide.Input{Policy: every, FirstBoot: true, ThisBoot: done}, false, decide.ReasonDoneThisBoot},
		{"same boot, failed already", decide.Input{Policy: every, ThisBoot: failed}, false, decide.ReasonDoneThisBoot},
		{"same boot, download failed already", decide.Input{Policy: every, ThisBoot: &state.ScriptRun{Status: state.ScriptDownloadFailed}}, false, decide.ReasonDoneThisBoot},
		{"same boot, was running (crash)", decide.Input{Policy: fbo, ThisBoot: running, History: ended, FirstBootStageEnded: true}, true, decide.ReasonResumeAfterCut},
		{"same boot, interrupted", decide.Input{Policy: fbo, ThisBoot: interrupted}, true, decide.ReasonResumeAfterCut},
		{"same boot, skipped earlier: decide again", decide.Input{Policy: fbo, ThisBoot: skipped, History: ended, FirstBootStageEnded: true}, false, decide.ReasonNotFirstBoot},
		{"force on first boot reruns", decide.Input{Policy: fbo, FirstBoot: true, ThisBoot: done, Force: true}, true, decide.ReasonForced},
		{"force on every boot reruns", decide.Input{Policy: every, ThisBoot: done, Force: true}, true, decide.ReasonEveryBoot},
		{"force does not revive first-boot-only on reboot", decide.Input{Policy: fbo, History: ended, FirstBootStageEnded: true, Force: true}, false, decide.ReasonNotFirstBoot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decide.Run(tt.in)
			assert.Equal(t, tt.run, d.Run)
			assert.Equal(t, tt.why, d.Reason)
		})
	}
}

func TestFetch(t *testing.T) {
	tests := []struct {
		name string
		in   decide.FetchInput
		run  bool
		why  string
	}{
		{"not cached, cache once", decide.FetchInput{Caching: lifecycle.CacheOnce}, true, decide.FetchNotCached},
		{"not cached, refresh", decide.FetchInput{Caching: lifecycle.RefreshOnReboot}, true, decide.FetchNotCached},
		{"cached, cache once", decide.FetchInput{Caching: lifecycle.CacheOnce, Cached: true}, false, decide.FetchCachedOnce},
		{"cached earlier boot, refresh", decide.FetchInput{Caching: lifecycle.RefreshOnReboot, Cached: true}, true, decide.FetchRefresh},
		{"cached this boot, refresh", decide.FetchInput{Caching: lifecycle.RefreshOnReboot, Cached: true, FetchedThisBoot: true}, false, decide.FetchFreshThisBoot},
		{"cached this boot, cache once", decide.FetchInput{Caching: lifecycle.CacheOnce, Cached: true, FetchedThisBoot: true}, false, decide.FetchFreshThisBoot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decide.Fetch(tt.in)
			assert.Equal(t, tt.run, d.Run)
			assert.Equal(t, tt.why, d.Reason)
		})
	}
}
