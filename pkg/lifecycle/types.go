package lifecycle

// Stage names, in the order a boot runs them.
const (
	StageNodeBootstrapped = "nodeBootstrapped"
	StageNodeReady        = "nodeReady"
)

// Stages lists the stage names in boot order.
var Stages = []string{StageNodeBootstrapped, StageNodeReady}

// CachingPolicy is the document-wide scriptCachingPolicy.
type CachingPolicy string

const (
	CacheOnce       CachingPolicy = "CACHE_ONCE"
	RefreshOnReboot CachingPolicy = "REFRESH_ON_REBOOT"
)

// ExecutionPolicy says on which boots a script runs.
type ExecutionPolicy string

const (
	FirstBootOnly ExecutionPolicy = "FIRST_BOOT_ONLY"
	EveryBoot     ExecutionPolicy = "EVERY_BOOT"
)

// OnError says what a failed script does to the rest of the run.
type OnError string

const (
	Terminate    OnError = "TERMINATE"
	StopSequence OnError = "STOP_SEQUENCE"
	Continue     OnError = "CONTINUE"
)

// Document is a decoded, defaulted and valid configuration.
type Document struct {
	ScriptCachingPolicy CachingPolicy `json:"scriptCachingPolicy"`
	Stages              StageScripts  `json:"stages"`
}

// StageScripts holds the scripts of each stage; a stage absent from the document is nil.
type StageScripts struct {
	NodeBootstrapped []Script `json:"nodeBootstrapped,omitempty"`
	NodeReady        []Script `json:"nodeReady,omitempty"`
}

// Script is one lifecycle action.
type Script struct {
	Name            string          `json:"name"`
	ScriptSource    ScriptSource    `json:"scriptSource"`
	Arguments       []string        `json:"arguments"`
	ExecutionPolicy ExecutionPolicy `json:"executionPolicy"`
	OnError         OnError         `json:"onError"`
}

// ScriptSource says where a script is downloaded from.
type ScriptSource struct {
	ScriptLocation string `json:"scriptLocation"`
	Checksum       string `json:"checksum,omitempty"`
	S3VersionID    string `json:"s3VersionId,omitempty"`
}

// Problem is one validation error or warning, at a JSON path such as
// "stages.nodeReady[2].arguments[0]" ("$" for the document itself).
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (p Problem) String() string { return p.Path + ": " + p.Message }

// Options tune validation.
type Options struct {
	// APIStrict applies the service API's https host pattern exactly (a DNS name with a
	// top-level domain); otherwise IP literals and localhost are accepted too.
	APIStrict bool
}
