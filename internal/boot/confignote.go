package boot

import "fmt"

// ConfigIgnoredLine is the one line run, plan and daemon print when --config differs from the
// configuration cached at the instance's first boot: what is used instead, and how to test an
// edit.
func ConfigIgnoredLine(given, cached string) string {
	return fmt.Sprintf("pcs-lifecycle: --config %s differs from the configuration cached at this instance's first boot; "+
		"using the cached copy %s. An instance's configuration never changes: to test an edit, "+
		"use a new instance (another --instance-id or --root) or `pcs-lifecycle try %s --scripts-from DIR`", given, cached, given)
}
