// Package lifecycle is the node lifecycle actions configuration document: its types, strict
// decoding, defaults and validation with JSON paths. It imports the standard library only.
//
// [Parse] turns the JSON a user gives `aws pcs create-compute-node-group --node-lifecycle-actions`
// into a defaulted [Document], or into a [*ValidationError] listing every problem at once, each
// at a JSON path such as "stages.nodeReady[2].arguments[0]" ("$" for the document itself).
// Problems are sorted in document order; a missing required field is reported where the object
// lacking it ends, after the problems of what that object holds.
//
// # Decisions where the service documentation is silent
//
// The guiding rule: in the default mode the executor never refuses a value the PCS API accepts
// (a node must run any configuration the service accepted), except where SPEC.md says
// otherwise; [Options.APIStrict] applies the API's own https pattern exactly.
//
//   - Forms ([Decode] says which was found): the bare document; the wrapped form
//     {"nodeLifecycleActions": {...}}, whose paths start with "nodeLifecycleActions." so that
//     they point into the file the user wrote (any other key beside nodeLifecycleActions is an
//     unknown field); and the output of `aws pcs get-compute-node-group`,
//     {"computeNodeGroup": {..., "nodeLifecycleActions": {...}}}, whose paths start with
//     "computeNodeGroup.nodeLifecycleActions." — the group's other fields are the service's,
//     not ours to judge, and are ignored; a group without nodeLifecycleActions is an error.
//     The form is chosen by the top-level keys: computeNodeGroup, else nodeLifecycleActions,
//     else the bare document.
//   - Unknown fields are errors at every level. The message suggests a close known name (case,
//     '_' and '-' ignored, small edit distance), a common alias ("args" → "arguments"), or the
//     level a misplaced field belongs to ("checksum" directly in a script → scriptSource).
//   - A key repeated within one JSON object is an error ("duplicate key") at the later key; the
//     first occurrence is the one validated.
//   - null for a required field is "required"; null for an optional field (a stage list,
//     scriptCachingPolicy, arguments, executionPolicy, onError, checksum, s3VersionId) means
//     absent, as in the AWS JSON protocols.
//   - "stages" must hold at least one non-null stage list; an empty list is an error (1–20).
//   - Script names are unique across the whole document, both stages included, compared
//     exactly (case-sensitive). The later duplicate is the error and names the first one's path.
//   - Lengths are counted in Unicode code points (runes), never in bytes. The API counts UTF-16
//     code units, which are never fewer, so this count is never stricter than the API.
//   - An argument must not contain a NUL character: it cannot be passed in argv.
//   - scriptLocation: the scheme is case-sensitive ("S3://" and "HTTPS://" are refused with a hint),
//     http:// and every other scheme are refused. s3://: bucket
//     [a-z0-9][a-z0-9.-]{1,61}[a-z0-9], non-empty key; the key may contain spaces (S3 and the API
//     allow them) but no control characters and no U+2028/U+2029 (the API's pattern refuses them). https://: no whitespace or control characters
//     anywhere, no user information, port (if given) 1–65535, the path is optional (the API
//     accepts "https://example.com"), and the URL must parse with net/url (a bad %-escape is
//     refused). Default mode hosts: a DNS name (labels [A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?,
//     at most 63 characters each, 253 in all, a last label not all digits, single-label names
//     such as "localhost" or "mirror" included), an IPv4 literal, or a bracketed IPv6 literal
//     without a zone. API-strict hosts: the API pattern, i.e. a DNS name ending in a top-level
//     domain of 2–63 letters.
//   - checksum: exactly 64 hexadecimal characters in either case, stored in lowercase. An empty
//     string is an error (the API requires a fixed length of 64).
//   - s3VersionId: at most 1024 characters, no control characters; "" means absent (the API's
//     minimum length is 0); only with an s3:// location.
//   - Enumerated values (scriptCachingPolicy, executionPolicy, onError) are case-sensitive. The
//     message quotes the value found and suggests the allowed one it most likely means: equal
//     but for case, '_' or '-' ("values are case-sensitive"), a common word for it ("STOP" →
//     STOP_SEQUENCE, "ALWAYS" → EVERY_BOOT), a close spelling, or the only allowed value that
//     contains it ("FIRST_BOOT" → FIRST_BOOT_ONLY).
//   - A length error says the limit and the length found ("longer than 64 characters (it has
//     70)").
//   - The input: a leading UTF-8 byte order mark is skipped; UTF-16 and invalid UTF-8 are
//     refused; more than 1 MiB (1,048,576 bytes) is refused; nesting deeper than 64 levels is
//     refused; nothing but whitespace may follow the top-level value. Syntax errors carry a line
//     and column (1-based; the column counts runes) and, where one fits, the usual mistake
//     instead of the decoder's words: a trailing comma (located at the comma), a missing comma
//     or colon, single quotes, a comment, an unquoted key or value, True/None, a raw line
//     break in a string, a bracket never closed (naming where it opened), YAML.
//   - [Document.Marshal] is compact JSON with fields in a fixed order, HTML characters not
//     escaped, no trailing newline, defaults written out, arguments always an array, empty
//     checksum and s3VersionId and absent stages omitted; never wrapped.
//
// # Warnings
//
// Warnings never make a document invalid; Parse returns them with the document, and with a
// *ValidationError too for the first three. They are:
//
//   - "<script>.scriptSource: not verified: no checksum": without a checksum a changed or
//     corrupted object is run as is, and nodes launched at different times may run different
//     content. For an https:// location it adds that nothing checks what the server sends; for
//     onError TERMINATE, that a changed or damaged object that fails replaces every node
//     launched after it.
//   - "<script>.scriptSource.scriptLocation: looks like a presigned URL: nodes launched after it
//     expires cannot download the script": the query carries X-Amz-Signature, X-Amz-Expires, or
//     both Signature and Expires; compute node groups keep launching nodes long after the URL
//     was made.
//   - "<script>.scriptSource.scriptLocation: host "…" is accepted here but not by the PCS API
//     (it requires a DNS name with a top-level domain)": default mode only, for an IP literal or
//     a name without a top-level domain; with APIStrict the same host is an error.
//
// And, for a valid document only, advice about the document as a whole:
//
//   - "scriptCachingPolicy: REFRESH_ON_REBOOT has no effect" when every script is
//     FIRST_BOOT_ONLY: later boots run nothing, so nothing is refreshed.
//   - "<script>.scriptSource.scriptLocation: same scriptLocation as <first script>": the same
//     object (location and s3VersionId) listed twice, "with the same arguments" when they are.
//   - "<nodeReady script>: looks like it prepares what jobs need (a mount | an environment
//     module)": a word of its name, file name or arguments such as mount, fsx, efs, lustre,
//     nfs, module, lmod, spack. Slurm may start jobs while nodeReady runs; the message points
//     to nodeBootstrapped and to the job-hold options.
package lifecycle
