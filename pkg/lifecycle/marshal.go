package lifecycle

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Scripts returns the scripts of stage in order: nil for a stage absent from the document or
// a name that is not a stage.
func (d *Document) Scripts(stage string) []Script {
	if d == nil {
		return nil
	}
	switch stage {
	case StageNodeBootstrapped:
		return d.Stages.NodeBootstrapped
	case StageNodeReady:
		return d.Stages.NodeReady
	default:
		return nil
	}
}

// Marshal returns the canonical JSON of the document: compact, fields in a fixed order, HTML
// characters not escaped, no trailing newline, never wrapped. Defaults are written out (and
// applied to a hand-built document), arguments are always an array, checksums lowercase, and
// an empty checksum or s3VersionId and an absent stage are omitted. Two documents that Parse
// decodes equal marshal to the same bytes, and Parse(Marshal(d)) equals d.
func (d *Document) Marshal() []byte {
	if d == nil {
		return []byte("null")
	}
	c := Document{ScriptCachingPolicy: d.ScriptCachingPolicy}
	if c.ScriptCachingPolicy == "" {
		c.ScriptCachingPolicy = CacheOnce
	}
	c.Stages.NodeBootstrapped = canonicalScripts(d.Stages.NodeBootstrapped)
	c.Stages.NodeReady = canonicalScripts(d.Stages.NodeReady)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		// Only strings, slices and structs: encoding cannot fail.
		panic("lifecycle: marshal document: " + err.Error())
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func canonicalScripts(in []Script) []Script {
	if len(in) == 0 {
		return nil
	}
	out := make([]Script, len(in))
	for i, s := range in {
		s.Arguments = slices.Clone(s.Arguments)
		if s.Arguments == nil {
			s.Arguments = []string{}
		}
		if s.ExecutionPolicy == "" {
			s.ExecutionPolicy = FirstBootOnly
		}
		if s.OnError == "" {
			s.OnError = Terminate
		}
		s.ScriptSource.Checksum = strings.ToLower(s.ScriptSource.Checksum)
		out[i] = s
	}
	return out
}
