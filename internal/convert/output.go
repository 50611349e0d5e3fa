package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pcs-lifecycle/pcs-lifecycle/pkg/lifecycle"
)

// Document is one converted node lifecycle actions document.
type Document struct {
	// Name is what it was made from: the resource's logical ID, or the queue's name.
	Name string
	// Document is the valid, defaulted document.
	Document *lifecycle.Document
	// JSON is the document as it is given to the API: indented, defaults written out, a
	// final newline.
	JSON []byte
	// Warnings are what did not convert, or deserves a look, each naming where it is.
	Warnings []string
}

// Error is a configuration that cannot be converted: every problem found, each naming the
// path in the input and, where one would resolve it, the --param to give.
type Error struct {
	Problems []string
}

func (e *Error) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0]
	}
	return strings.Join(e.Problems, "\n")
}

// problems collects errors in order, once each.
type problems struct {
	list []string
	seen map[string]bool
}

func (p *problems) add(path, format string, a ...any) {
	msg := path + ": " + fmt.Sprintf(format, a...)
	if p.seen == nil {
		p.seen = map[string]bool{}
	}
	if !p.seen[msg] {
		p.seen[msg] = true
		p.list = append(p.list, msg)
	}
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	return &Error{Problems: p.list}
}

// finish validates a converted document (API-strict: it is meant for the service) and renders
// it. toInput maps a problem's API path back to the path in the input it came from.
func finish(name string, api map[string]any, warnings []string, toInput func(string) string) (*Document, error) {
	raw, err := json.Marshal(api)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	d, err := lifecycle.Decode(raw, lifecycle.Options{APIStrict: true})
	var ve *lifecycle.ValidationError
	if errors.As(err, &ve) {
		var p problems
		for _, pr := range ve.Problems {
			p.add(toInput(pr.Path), "%s", pr.Message)
		}
		return nil, p.err()
	} else if err != nil {
		return nil, err
	}
	for _, w := range d.Warnings {
		warnings = append(warnings, toInput(w.Path)+": "+w.Message)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, d.Document.Marshal(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return &Document{Name: name, Document: d.Document, JSON: out.Bytes(), Warnings: warnings}, nil
}

// apiToInput maps the segments of an API path ("stages.nodeReady[0].scriptSource.checksum")
// through names (API name → input name) and puts prefix before it.
func apiToInput(prefix string, names map[string]string) func(string) string {
	return func(p string) string {
		if p == "$" || p == "" {
			return prefix
		}
		parts := strings.Split(p, ".")
		for i, part := range parts {
			key, rest, _ := strings.Cut(part, "[")
			if n, ok := names[key]; ok {
				key = n
			}
			if rest != "" {
				key += "[" + rest
			}
			parts[i] = key
		}
		return prefix + "." + strings.Join(parts, ".")
	}
}

// index is path[i].
func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// field is path.key.
func field(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
