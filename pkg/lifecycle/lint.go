package lifecycle

import (
	"path"
	"slices"
	"strings"
)

// lint adds the warnings about a valid document as a whole: things the API accepts that
// rarely mean what their author wanted. d is the document the walk built from w.scripts.
func (w *walker) lint(d *Document) {
	// The scripts in the order the walk met them (the document's order, whichever stage
	// comes first in the file).
	var all []Script
	for _, v := range w.scripts {
		list := d.Scripts(v.stage)
		if v.index >= len(list) { // the walk and the document disagree: nothing to say safely
			return
		}
		all = append(all, list[v.index])
	}

	if d.ScriptCachingPolicy == RefreshOnReboot && !slices.ContainsFunc(all, func(s Script) bool {
		return s.ExecutionPolicy != FirstBootOnly
	}) {
		w.warnAt(w.cachingOff, child(w.actionsPath, "scriptCachingPolicy"),
			"REFRESH_ON_REBOOT has no effect: every script is FIRST_BOOT_ONLY, so later boots run (and download) nothing")
	}

	type first struct {
		path string
		args []string
	}
	seen := map[string]first{}
	for i, s := range all {
		v := w.scripts[i]
		key := s.ScriptSource.ScriptLocation + "\x00" + s.ScriptSource.S3VersionID
		if f, ok := seen[key]; ok {
			msg := "same scriptLocation as " + f.path + ": the same object is downloaded and run twice"
			if slices.Equal(f.args, s.Arguments) {
				msg += ", with the same arguments"
			}
			w.warnAt(v.locOff, child(child(v.path, "scriptSource"), "scriptLocation"), msg)
		} else {
			seen[key] = first{path: v.path, args: s.Arguments}
		}
		if v.stage == StageNodeReady {
			if what := preparesForJobs(s); what != "" {
				w.warnAt(v.off, v.path, "looks like it prepares what jobs need ("+what+"), but Slurm may start jobs "+
					"on the node while nodeReady runs: move it to nodeBootstrapped, or keep jobs off until nodeReady "+
					"ends with --hold-jobs-until-ready or the Slurm prolog (scripts/slurm-prolog.sh; docs/systemd-and-slurm.md)")
			}
		}
	}
}

// jobPrepWords are words that, in a script's name, file name or arguments, suggest it sets up
// something jobs use: a file system mount or an environment module.
var jobPrepWords = map[string]string{
	"mount": "a mount", "mounts": "a mount", "automount": "a mount", "fstab": "a mount",
	"efs": "a mount", "fsx": "a mount", "lustre": "a mount", "nfs": "a mount", "cvmfs": "a mount",
	"beegfs": "a mount", "gpfs": "a mount", "weka": "a mount", "s3fs": "a mount", "mountpoint": "a mount",
	"module": "an environment module", "modules": "an environment module", "modulefiles": "an environment module",
	"lmod": "an environment module", "spack": "an environment module", "easybuild": "an environment module",
}

// preparesForJobs says what a script seems to prepare for jobs ("" when nothing): judged from
// its name, its file name and its arguments, word by word.
func preparesForJobs(s Script) string {
	loc := s.ScriptSource.ScriptLocation
	if i := strings.IndexAny(loc, "?#"); i >= 0 && strings.HasPrefix(loc, "https://") {
		loc = loc[:i]
	}
	texts := append([]string{s.Name, path.Base(loc)}, s.Arguments...)
	for _, t := range texts {
		for _, word := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
		}) {
			if what, ok := jobPrepWords[word]; ok {
				return what
			}
		}
	}
	return ""
}
