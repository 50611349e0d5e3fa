// Package convert writes node lifecycle actions documents from the configurations
// administrators already have: an AWS CloudFormation (or CDK-synthesised) template holding
// AWS::PCS::ComputeNodeGroup resources, and an AWS ParallelCluster 3 cluster configuration with
// CustomActions. Every document it returns has passed lifecycle validation in the API-strict
// mode: it is what `aws pcs create-compute-node-group --node-lifecycle-actions` takes.
//
// # CloudFormation
//
// The template is YAML or JSON (JSON is read as YAML). The short-form tags (!Ref, !Sub,
// !GetAtt, !If, !Join, !Select, !Split, !Equals, !Not, !And, !Or, !Condition, !FindInMap,
// !Base64, !ImportValue) and their long forms (Ref, Fn::Sub, …) are evaluated; Conditions and
// Mappings are read from the template. Values the template cannot give come from parameters
// given by the caller (--param K=V):
//
//   - AWS::Region, AWS::AccountId, AWS::StackName, AWS::StackId: the pseudo parameters;
//     AWS::Partition and AWS::URLSuffix follow from AWS::Region when not given.
//   - NAME: a template parameter (its Default otherwise; List and CommaDelimitedList types are
//     split at commas), or the physical ID a resource's Ref returns.
//   - RESOURCE.ATTRIBUTE: what !GetAtt RESOURCE.ATTRIBUTE returns (file-system IDs and DNS
//     names exist only after deployment).
//   - Import:EXPORT: what !ImportValue EXPORT returns.
//
// Anything else that cannot be resolved is an error naming the template path and the --param
// that resolves it; every such error is reported, not only the first. Properties are the
// CloudFormation spelling (NodeLifecycleActions, ScriptCachingPolicy, Stages,
// NodeBootstrapped, NodeReady, Name, ScriptSource, ScriptLocation, Checksum, S3VersionId,
// Arguments, ExecutionPolicy, OnError); an unknown property is an error at its path. Errors of
// the converted document are reported at the template path they come from.
//
// # ParallelCluster
//
// Each Scheduling.SlurmQueues[] entry with CustomActions becomes one document: OnNodeStart →
// nodeBootstrapped, OnNodeConfigured → nodeReady, in order, from the single Script/Args form
// or the Sequence form. ParallelCluster runs custom actions on every boot and treats any
// failure as fatal, so scripts are EVERY_BOOT (FIRST_BOOT_ONLY with EveryBoot false) and
// TERMINATE, and the caching policy is REFRESH_ON_REBOOT (CACHE_ONCE with EveryBoot false),
// as ParallelCluster downloads a custom action at every boot. Script names come from the file
// names, made unique. What has no equivalent is a warning: OnNodeUpdated, HeadNode and
// LoginNodes custom actions, and scripts that read ParallelCluster's own files (cfnconfig,
// /etc/parallelcluster, cfn_* variables), found in local copies when a folder is given. An
// action with both Script and Sequence is refused, as ParallelCluster refuses it.
package convert
