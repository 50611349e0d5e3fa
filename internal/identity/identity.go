// Package identity works out who this node is: the PCS identifiers (flags, then PCS_*
// environment — the caller merges those), the instance ID (given, else IMDS, else
// /etc/machine-id) and the boot ID (given, else the kernel's).
package identity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// Node is the node's identity as the scripts see it.
type Node struct {
	NodeID               string
	ClusterID            string
	ClusterName          string
	ComputeNodeGroupID   string
	ComputeNodeGroupName string
	InstanceID           string
	InstanceIDSource     string // "flag", "imds", "machine-id"
	BootID               string
	Region               string
}

// Metadata is the part of IMDS the executor reads.
type Metadata interface {
	InstanceID(ctx context.Context) (string, error)
	Region(ctx context.Context) (string, error)
}

// IMDS is the real instance metadata client. It honours AWS_EC2_METADATA_DISABLED and
// AWS_EC2_METADATA_SERVICE_ENDPOINT through the SDK's configuration.
type IMDS struct {
	c *imds.Client
}

// NewIMDS builds the IMDS client from the SDK's standard configuration; it returns nil when
// IMDS is disabled (AWS_EC2_METADATA_DISABLED=true).
func NewIMDS(ctx context.Context) *IMDS {
	if strings.EqualFold(os.Getenv("AWS_EC2_METADATA_DISABLED"), "true") {
		return nil
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil
	}
	return &IMDS{c: imds.NewFromConfig(cfg)}
}

func (m *IMDS) get(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	out, err := m.c.GetMetadata(ctx, &imds.GetMetadataInput{Path: path})
	if err != nil {
		return "", err
	}
	defer out.Content.Close()
	b, err := io.ReadAll(io.LimitReader(out.Content, 4096))
	return strings.TrimSpace(string(b)), err
}

// InstanceID reads instance-id.
func (m *IMDS) InstanceID(ctx context.Context) (string, error) { return m.get(ctx, "instance-id") }

// Region reads the instance's region.
func (m *IMDS) Region(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	out, err := m.c.GetRegion(ctx, &imds.GetRegionInput{})
	if err != nil {
		return "", err
	}
	return out.Region, nil
}

// Resolve fills the instance ID, boot ID and region of n where the caller left them empty.
// md may be nil (IMDS disabled). machineIDPath and bootIDPath come from internal/paths.
func Resolve(ctx context.Context, n *Node, md Metadata, machineIDPath, bootIDPath string) error {
	if n.InstanceID != "" {
		n.InstanceIDSource = "flag"
	} else {
		if md != nil {
			if id, err := md.InstanceID(ctx); err == nil && id != "" {
				n.InstanceID, n.InstanceIDSource = id, "imds"
			}
		}
		if n.InstanceID == "" {
			b, err := os.ReadFile(machineIDPath)
			id := strings.TrimSpace(string(b))
			if err != nil || id == "" {
				if err == nil {
					err = errors.New("empty")
				}
				return fmt.Errorf("instance id: not given (--instance-id, PCS_INSTANCE_ID), IMDS unavailable, and %s: %w", machineIDPath, err)
			}
			n.InstanceID, n.InstanceIDSource = "machine-id:"+id, "machine-id"
		}
	}
	if n.BootID == "" {
		b, err := os.ReadFile(bootIDPath)
		if err != nil || strings.TrimSpace(string(b)) == "" {
			return fmt.Errorf("boot id: not given (--boot-id, PCS_BOOT_ID) and %s unreadable: %w", bootIDPath, err)
		}
		n.BootID = strings.TrimSpace(string(b))
	}
	if n.Region == "" {
		n.Region = os.Getenv("AWS_REGION")
	}
	if n.Region == "" && md != nil && n.InstanceIDSource == "imds" {
		if r, err := md.Region(ctx); err == nil {
			n.Region = r
		}
	}
	if n.NodeID == "" {
		if h, err := os.Hostname(); err == nil {
			n.NodeID, _, _ = strings.Cut(h, ".")
		}
	}
	return nil
}
