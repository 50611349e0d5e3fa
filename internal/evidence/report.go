package evidence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Limits of what report reads: every object under the prefix is hostile input.
const (
	// MaxSummarySize is the largest summary read; a larger object is skipped unread.
	MaxSummarySize = 256 << 10
	// MaxSummaryScripts is the most scripts a summary may list (20 per stage, SPEC §2).
	MaxSummaryScripts = 40
	// MaxTextLen bounds every string report keeps from a summary.
	MaxTextLen = 512
	// DefaultConcurrency is how many summaries are read at once.
	DefaultConcurrency = 32
	// readTimeout bounds the read of one summary.
	readTimeout = 30 * time.Second
)

// ReadAPI is the part of the S3 client report uses; *s3.Client implements it.
type ReadAPI interface {
	s3.ListObjectsV2APIClient
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// ReportOptions select the summaries of a report.
type ReportOptions struct {
	Location  Location
	Since     time.Time // zero: all
	Cluster   string
	NodeGroup string
	Instance  string
	// Concurrency is how many summaries are read at once; 0 means DefaultConcurrency.
	Concurrency         int
	ExpectedBucketOwner string
}

// Report is a fleet's failures, per stage and script, from the summaries under a prefix.
type Report struct {
	URI       string    `json:"uri"`
	Since     time.Time `json:"since,omitzero"`
	Summaries int       `json:"summaries"` // read and counted
	Instances int       `json:"instances"`
	Skipped   []Skipped `json:"skipped"`
	Scripts   []Row     `json:"scripts"`
}

// Skipped is an object under the prefix that looked like a summary and was not counted.
type Skipped struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// Row is one script across the fleet.
type Row struct {
	Stage  string `json:"stage"`
	Script string `json:"script"`
	// Boots is how many summaries list the script; Failures in how many it failed
	// (failed or download_failed); Nodes how many instances those were.
	Boots     int        `json:"boots"`
	Failures  int        `json:"failures"`
	Nodes     int        `json:"nodes"`
	FirstSeen *time.Time `json:"first_seen,omitempty"` // of a failure
	LastSeen  *time.Time `json:"last_seen,omitempty"`
	// CommonExitCode is the most common exit code of the failures (the lowest on a tie), and
	// CommonExitCount how many failures had it; nil when no failure had an exit code.
	CommonExitCode  *int `json:"common_exit_code,omitempty"`
	CommonExitCount int  `json:"common_exit_count,omitempty"`
	// Latest failure: its instance, boot, last log line and error.
	LastInstance string `json:"last_instance,omitempty"`
	LastBootID   string `json:"last_boot_id,omitempty"`
	LastLogLine  string `json:"last_log_line,omitempty"`
	LastError    string `json:"last_error,omitempty"`
}

// listPrefix narrows the listing to the cluster, node group and instance asked for, as far as
// they are given from the top.
func (o ReportOptions) listPrefix() string {
	p := o.Location.Prefix
	if o.Cluster == "" {
		return p
	}
	p += KeyPart(o.Cluster) + "/"
	if o.NodeGroup == "" {
		return p
	}
	p += KeyPart(o.NodeGroup) + "/"
	if o.Instance == "" {
		return p
	}
	return p + KeyPart(o.Instance) + "/"
}

// keyParts splits a summary key below the prefix into cluster, node group, instance, boot.
func keyParts(prefix, key string) ([]string, bool) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return nil, false
	}
	parts := strings.Split(strings.TrimSuffix(rest, ".json"), "/")
	if len(parts) != 4 {
		return nil, false
	}
	for _, p := range parts {
		if p == "" {
			return nil, false
		}
	}
	return parts, true
}

// BuildReport lists the summaries under the prefix (paginated), reads them concurrently, and
// aggregates their failures. Only the listing failing is an error: an object that cannot be
// read, is too large or is not a valid summary is skipped and named.
func BuildReport(ctx context.Context, client ReadAPI, o ReportOptions) (*Report, error) {
	conc := o.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	rep := &Report{URI: o.Location.String(), Since: o.Since, Skipped: []Skipped{}, Scripts: []Row{}}
	var mu sync.Mutex
	skip := func(key, why string) {
		mu.Lock()
		rep.Skipped = append(rep.Skipped, Skipped{Key: key, Reason: why})
		mu.Unlock()
	}
	agg := newAggregator()
	keys := make(chan string, conc*4)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for key := range keys {
				s, err := readSummary(ctx, client, o, key)
				if err != nil {
					skip(key, err.Error())
					continue
				}
				if !o.Since.IsZero() && s.UploadedAt.Before(o.Since) {
					continue
				}
				if o.Instance != "" && s.InstanceID != o.Instance || o.NodeGroup != "" && s.ComputeNodeGroupID != o.NodeGroup ||
					o.Cluster != "" && s.ClusterID != o.Cluster {
					continue
				}
				agg.add(key, s)
			}
		}()
	}
	listErr := listSummaries(ctx, client, o, keys, skip)
	wg.Wait()
	if listErr != nil {
		return nil, listErr
	}
	agg.report(rep)
	sort.Slice(rep.Skipped, func(i, j int) bool { return rep.Skipped[i].Key < rep.Skipped[j].Key })
	return rep, nil
}

// listSummaries sends the keys of the summaries under the prefix that the options do not
// rule out by their key or listing alone, page after page, then closes keys.
func listSummaries(ctx context.Context, client ReadAPI, o ReportOptions, keys chan<- string, skip func(key, why string)) error {
	defer close(keys)
	in := &s3.ListObjectsV2Input{Bucket: aws.String(o.Location.Bucket), Prefix: aws.String(o.listPrefix())}
	if o.ExpectedBucketOwner != "" {
		in.ExpectedBucketOwner = aws.String(o.ExpectedBucketOwner)
	}
	pg := s3.NewListObjectsV2Paginator(client, in)
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list s3://%s/%s: %w", o.Location.Bucket, o.listPrefix(), err)
		}
		for _, obj := range page.Contents {
			key := aws.ToString(obj.Key)
			if !strings.HasSuffix(key, ".json") {
				continue // the bundles, and anything else that is not a summary
			}
			parts, ok := keyParts(o.Location.Prefix, key)
			switch {
			case !ok:
				skip(key, "not at <prefix>/<cluster>/<node group>/<instance>/<boot>.json")
				continue
			case o.Instance != "" && parts[2] != KeyPart(o.Instance):
				continue
			case o.NodeGroup != "" && parts[1] != KeyPart(o.NodeGroup):
				continue
			case aws.ToInt64(obj.Size) > MaxSummarySize:
				skip(key, fmt.Sprintf("%d bytes, over the %d-byte limit of a summary", aws.ToInt64(obj.Size), MaxSummarySize))
				continue
			case !o.Since.IsZero() && obj.LastModified != nil && obj.LastModified.Before(o.Since):
				continue // written before --since: so was its summary
			}
			select {
			case keys <- key:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// readSummary reads and checks one summary.
func readSummary(ctx context.Context, client ReadAPI, o ReportOptions, key string) (*Summary, error) {
	rctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	in := &s3.GetObjectInput{Bucket: aws.String(o.Location.Bucket), Key: aws.String(key)}
	if o.ExpectedBucketOwner != "" {
		in.ExpectedBucketOwner = aws.String(o.ExpectedBucketOwner)
	}
	out, err := client.GetObject(rctx, in)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, MaxSummarySize+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if len(data) > MaxSummarySize {
		return nil, fmt.Errorf("over the %d-byte limit of a summary", MaxSummarySize)
	}
	return ParseSummary(data)
}

// ParseSummary decodes and checks a summary: one JSON object, schema_version 1 or later
// (later versions only add fields), the identity present, at most MaxSummaryScripts scripts.
// Strings are cut to MaxTextLen.
func ParseSummary(data []byte) (*Summary, error) {
	var s Summary
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("not a summary: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not a summary: data after the JSON object")
	}
	switch {
	case s.SchemaVersion < 1:
		return nil, fmt.Errorf("schema_version %d: not a summary", s.SchemaVersion)
	case s.InstanceID == "" || s.BootID == "":
		return nil, errors.New("instance_id and boot_id are required")
	case len(s.Scripts) > MaxSummaryScripts:
		return nil, fmt.Errorf("%d scripts, over the limit of %d", len(s.Scripts), MaxSummaryScripts)
	case len(s.Stages) > 2:
		return nil, fmt.Errorf("%d stages, over the limit of 2", len(s.Stages))
	}
	s.InstanceID, s.BootID, s.ClusterID, s.ComputeNodeGroupID = cut(s.InstanceID), cut(s.BootID), cut(s.ClusterID), cut(s.ComputeNodeGroupID)
	for i := range s.Scripts {
		x := &s.Scripts[i]
		x.Stage, x.Name, x.State, x.LastLogLine, x.Error = cut(x.Stage), cut(x.Name), cut(x.State), cut(x.LastLogLine), cut(x.Error)
	}
	return &s, nil
}

func cut(s string) string {
	if len(s) > MaxTextLen {
		return s[:MaxTextLen]
	}
	return s
}

// aggregator folds summaries into rows as they are read (the summaries themselves are not
// kept): the result does not depend on the order they arrive in, since the latest failure is
// chosen by (time, key).
type aggregator struct {
	mu        sync.Mutex
	rows      map[[2]string]*acc
	instances map[string]bool
	summaries int
}

type acc struct {
	row     Row
	lastKey string
	nodes   map[string]bool
	codes   map[int]int
}

func newAggregator() *aggregator {
	return &aggregator{rows: map[[2]string]*acc{}, instances: map[string]bool{}}
}

// add folds one summary, read from key, in.
func (g *aggregator) add(key string, s *Summary) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.summaries++
	g.instances[s.InstanceID] = true
	seen := map[[2]string]bool{}
	for _, x := range s.Scripts {
		k := [2]string{x.Stage, x.Name}
		if seen[k] {
			continue // listed twice in one summary: counted once
		}
		seen[k] = true
		a := g.rows[k]
		if a == nil {
			a = &acc{row: Row{Stage: x.Stage, Script: x.Name}, nodes: map[string]bool{}, codes: map[int]int{}}
			g.rows[k] = a
		}
		a.row.Boots++
		if !x.Failed() {
			continue
		}
		a.row.Failures++
		a.nodes[s.InstanceID] = true
		when := s.UploadedAt
		if x.StartedAt != nil && !x.StartedAt.IsZero() {
			when = *x.StartedAt
		}
		when = when.UTC()
		if a.row.FirstSeen == nil || when.Before(*a.row.FirstSeen) {
			t := when
			a.row.FirstSeen = &t
		}
		if a.row.LastSeen == nil || when.After(*a.row.LastSeen) || when.Equal(*a.row.LastSeen) && key > a.lastKey {
			t := when
			a.row.LastSeen, a.lastKey = &t, key
			a.row.LastInstance, a.row.LastBootID, a.row.LastLogLine, a.row.LastError = s.InstanceID, s.BootID, x.LastLogLine, x.Error
		}
		if x.ExitCode != nil {
			a.codes[*x.ExitCode]++
		}
	}
}

// report fills rep's counts and rows, in a deterministic order.
func (g *aggregator) report(rep *Report) {
	rep.Summaries, rep.Instances = g.summaries, len(g.instances)
	for _, a := range g.rows {
		a.row.Nodes = len(a.nodes)
		for code, n := range a.codes {
			if n > a.row.CommonExitCount || n == a.row.CommonExitCount && a.row.CommonExitCode != nil && code < *a.row.CommonExitCode {
				c := code
				a.row.CommonExitCode, a.row.CommonExitCount = &c, n
			}
		}
		rep.Scripts = append(rep.Scripts, a.row)
	}
	stageRank := func(s string) int {
		switch s {
		case "nodeBootstrapped":
			return 0
		case "nodeReady":
			return 1
		}
		return 2
	}
	sort.Slice(rep.Scripts, func(i, j int) bool {
		a, b := rep.Scripts[i], rep.Scripts[j]
		if stageRank(a.Stage) != stageRank(b.Stage) {
			return stageRank(a.Stage) < stageRank(b.Stage)
		}
		if a.Stage != b.Stage {
			return a.Stage < b.Stage
		}
		if a.Failures != b.Failures {
			return a.Failures > b.Failures
		}
		return a.Script < b.Script
	})
}
