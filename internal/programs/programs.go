// Package programs is the one table of the external programs the executor runs, and the one
// definition of the PATH its scripts (and those programs) see. Nothing else names a program.
package programs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const (
	// ScriptPATH is the PATH of every script's fixed environment (SPEC §4).
	ScriptPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// SlurmPATH is where scontrol is looked up and the PATH it runs with: ScriptPATH plus
	// /opt/slurm/bin, where AWS PCS images install Slurm.
	SlurmPATH = ScriptPATH + ":/opt/slurm/bin"

	// Shell runs scripts without a "#!" line and --on-terminate command:<...>.
	Shell = "/bin/sh"
	// Scontrol is Slurm's client (--scontrol overrides it), looked up in SlurmPATH.
	Scontrol = "scontrol"
	// Systemctl powers the node off (--on-terminate poweroff), looked up in ScriptPATH.
	Systemctl = "systemctl"
	// Logger is what scripts/slurm-prolog.sh writes the journal with (named here so that the
	// table is complete; the executor itself logs through zap).
	Logger = "logger"
)

// Look finds name: a path as given, a bare name in the absolute directories of path (a
// relative directory in PATH is never used).
func Look(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		return name, executable(name)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH %s: %w", name, path, os.ErrNotExist)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s: not an executable file", p)
	}
	return nil
}
