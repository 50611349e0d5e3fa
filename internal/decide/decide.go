// Package decide answers, without any I/O, the two questions asked of every script on every
// boot: does it run, and does it need downloading. run, plan and status all ask here.
package decide

import (
	"github.com/pcs-lifecycle/pcs-lifecycle/internal/state"
	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// Input is everything the run decision depends on.
type Input struct {
	Policy lifecycle.ExecutionPolicy
	// FirstBoot: this boot is the instance's first.
	FirstBoot bool
	// Force: --force, run even what already ran this boot.
	Force bool
	// ThisBoot is the script's entry in this boot's run of its stage (nil: not reached yet).
	ThisBoot *state.ScriptRun
	// History is the script's history on the instance (nil: never seen).
	History *state.ScriptHistory
	// FirstBootStageEnded: the instance's first boot ran this stage to its end (succeeded,
	// failed, stopped or terminated). When it did not (power loss, kill), first-boot-only
	// scripts it never finished are still owed.
	FirstBootStageEnded bool
}

// Decision is run or skip, and why.
type Decision struct {
	Run    bool
	Reason string
}

// Reasons, as plan, status and executor.log show them.
const (
	ReasonFirstBoot        = "first boot"
	ReasonEveryBoot        = "EVERY_BOOT"
	ReasonForced           = "--force"
	ReasonResumeAfterCut   = "interrupted earlier in this boot"
	ReasonDoneThisBoot     = "already ran this boot"
	ReasonNotFirstBoot     = "FIRST_BOOT_ONLY and this is not the first boot"
	ReasonInterrupted      = "FIRST_BOOT_ONLY and its first run was interrupted"
	ReasonFirstBootUnended = "FIRST_BOOT_ONLY and the first boot's stage never ended"
)

// Run decides whether a script runs in this boot's run of its stage.
func Run(in Input) Decision {
	if in.ThisBoot != nil && !in.Force {
		switch {
		case in.ThisBoot.Status.Ended() || in.ThisBoot.Status == state.ScriptDownloadFailed:
			// A download failure had its onError applied: it is this boot's outcome.
			return Decision{false, ReasonDoneThisBoot}
		case in.ThisBoot.Status == state.ScriptRunning || in.ThisBoot.Status == state.ScriptInterrupted:
			return Decision{true, ReasonResumeAfterCut}
		}
	}
	if in.Policy == lifecycle.EveryBoot {
		return Decision{true, ReasonEveryBoot}
	}
	if in.FirstBoot {
		if in.Force {
			return Decision{true, ReasonForced}
		}
		return Decision{true, ReasonFirstBoot}
	}
	h := in.History
	switch {
	case h != nil && h.Ended:
		return Decision{false, ReasonNotFirstBoot}
	case h != nil && h.Pending:
		return Decision{true, ReasonInterrupted}
	case !in.FirstBootStageEnded:
		return Decision{true, ReasonFirstBootUnended}
	}
	return Decision{false, ReasonNotFirstBoot}
}

// FetchInput is everything the download decision depends on.
type FetchInput struct {
	Caching lifecycle.CachingPolicy
	// Cached: a copy and its recorded digest exist for this instance.
	Cached bool
	// FetchedThisBoot: that copy was downloaded in this boot.
	FetchedThisBoot bool
}

// Fetch decisions' reasons.
const (
	FetchNotCached      = "not in the cache"
	FetchRefresh        = "REFRESH_ON_REBOOT"
	FetchCachedOnce     = "cached (CACHE_ONCE)"
	FetchFreshThisBoot  = "downloaded this boot"
	FetchReuseCacheOnce = "Reusing cached script (CACHE_ONCE)"
)

// Fetch decides whether a script must be downloaded before it can run this boot.
func Fetch(in FetchInput) Decision {
	switch {
	case !in.Cached:
		return Decision{true, FetchNotCached}
	case in.FetchedThisBoot:
		return Decision{false, FetchFreshThisBoot}
	case in.Caching == lifecycle.RefreshOnReboot:
		return Decision{true, FetchRefresh}
	}
	return Decision{false, FetchCachedOnce}
}
