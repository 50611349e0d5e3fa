// Command gendocs writes the man pages and the bash, zsh and fish completions of pcs-lifecycle
// from its cobra commands, for the packages (make package):
//
//	go run ./internal/tools/gendocs -out DIR -version V [-date UNIX]
//
// DIR/man/pcs-lifecycle*.1.gz (section 1, gzip without name or time) and
// DIR/completions/{pcs-lifecycle.bash,_pcs-lifecycle,pcs-lifecycle.fish}. The output depends
// only on the commands, the version and the date (SOURCE_DATE_EPOCH when -date is not given),
// so two builds of one commit give the same files.
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/pcs-lifecycle/pcs-lifecycle/internal/cli"
)

func main() {
	out := flag.String("out", "", "output folder (required)")
	version := flag.String("version", "dev", "version printed in the man pages' footer")
	date := flag.String("date", os.Getenv("SOURCE_DATE_EPOCH"), "Unix time printed in the man pages (default SOURCE_DATE_EPOCH, else 0)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gendocs: -out is required")
		os.Exit(2)
	}
	var when time.Time
	if *date != "" {
		sec, err := strconv.ParseInt(*date, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "gendocs: -date %q: not a Unix time\n", *date)
			os.Exit(2)
		}
		when = time.Unix(sec, 0).UTC()
	} else {
		when = time.Unix(0, 0).UTC()
	}
	if err := generate(*out, *version, when); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func generate(out, version string, when time.Time) error {
	root := cli.NewRoot()
	root.DisableAutoGenTag = true
	// The completion command cobra adds at run time: documented too, since it is there.
	root.InitDefaultCompletionCmd()

	manDir := filepath.Join(out, "man")
	compDir := filepath.Join(out, "completions")
	for _, d := range []string{manDir, compDir} {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}

	// Man pages: generated into memory by cobra, then written gzipped.
	tmp, err := os.MkdirTemp("", "gendocs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	header := &doc.GenManHeader{
		Title:   "PCS-LIFECYCLE",
		Section: "1",
		Date:    &when,
		Source:  "pcs-lifecycle " + version,
		Manual:  "pcs-lifecycle manual",
	}
	if err := doc.GenManTree(root, header, tmp); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	pages, err := filepath.Glob(filepath.Join(tmp, "*.1"))
	if err != nil {
		return err
	}
	if len(pages) == 0 {
		return fmt.Errorf("man pages: cobra wrote none")
	}
	for _, p := range pages {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := writeGzip(filepath.Join(manDir, filepath.Base(p)+".gz"), data); err != nil {
			return err
		}
	}

	// Completions.
	name := root.Name()
	comps := []struct {
		file string
		gen  func(*cobra.Command, *bytes.Buffer) error
	}{
		{name + ".bash", func(c *cobra.Command, b *bytes.Buffer) error { return c.GenBashCompletionV2(b, true) }},
		{"_" + name, func(c *cobra.Command, b *bytes.Buffer) error { return c.GenZshCompletion(b) }},
		{name + ".fish", func(c *cobra.Command, b *bytes.Buffer) error { return c.GenFishCompletion(b, true) }},
	}
	for _, c := range comps {
		var b bytes.Buffer
		if err := c.gen(root, &b); err != nil {
			return fmt.Errorf("completion %s: %w", c.file, err)
		}
		if !strings.Contains(b.String(), name) {
			return fmt.Errorf("completion %s does not name %s", c.file, name)
		}
		if err := os.WriteFile(filepath.Join(compDir, c.file), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeGzip writes data gzipped at best compression, with no file name or time in the header.
func writeGzip(path string, data []byte) error {
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
