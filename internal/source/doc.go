// Package source downloads one lifecycle script (or a configuration document) from s3:// or
// https://: a size cap, an optional SHA-256 checksum, and a few attempts with exponential
// backoff and jitter. It never returns partial data: a failed download returns no bytes.
//
// Behaviour beyond SPEC.md §3, decided here:
//
//   - Attempts: 3 by default, waits Backoff·2^(n-1)·(1+[0,0.15)) between them (5 s then 10 s,
//     at most 17.25 s in all). Every failure kind is retried (not found, forbidden, checksum
//     mismatch, too large, untrusted certificate, …) except Invalid (a location or checksum
//     that no attempt can make work; it fails with Attempts 0) and Canceled (the caller's
//     context ended; the wait between attempts ends with it at once).
//   - One attempt is bounded by AttemptTimeout (60 s), for S3 as for HTTPS.
//   - The AWS SDK's own retries are switched off on the default S3 client, so "3 attempts"
//     means 3 requests, and the wait is this package's.
//   - s3://bucket/key: the key is everything after the bucket's slash, taken verbatim
//     (slashes, spaces, '+' kept; no percent-decoding), as the AWS CLI reads S3 URIs.
//   - The default S3 client comes from the standard configuration chain; the region from the
//     environment or config files, else from instance metadata; no region is an error naming
//     AWS_REGION. An endpoint override (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, endpoint_url)
//     switches to path-style addressing.
//   - https: only status 200 is success; 404 is NotFound, 401/403 Forbidden, 5xx Server,
//     anything else Other. A Content-Length over the cap fails before the body is read; the
//     body is read through a MaxSize+1 limit either way; a body shorter than its
//     Content-Length is a Network error. Redirects are followed only to https:// (at most
//     10), also with a caller-supplied client (its copy gets the rule; the caller's client is
//     not modified). http:// locations are Invalid and never contacted.
//   - Proxy (HTTPS_PROXY, NO_PROXY) and trust store (SSL_CERT_FILE, SSL_CERT_DIR) come from the
//     environment through net/http and crypto/x509, which read it once per process.
//   - S3 errors from S3-compatible servers: versitygw answers an unknown access key with 404
//     XAdminUserNotFound, classified Forbidden like S3's InvalidAccessKeyId.
//   - Error messages are one line an administrator can act on (errors.go): an S3 not found
//     says whether an s3VersionId was pinned (or that the bucket or the version does not
//     exist); an access denied names the IAM actions the instance role needs on that object
//     (s3:GetObject, plus s3:GetObjectVersion with s3VersionId), the owner required by
//     --expected-bucket-owner, and that without s3:ListBucket S3 answers 403 for a missing
//     key; a refused credential says so; DNS, TLS handshake, refused connection and timeout
//     are named. The SDK's wrapping (request and host IDs, "https response error" whatever
//     the endpoint's scheme) is left out of Error() and kept in Error.Debug for DEBUG logs.
//   - ETag is returned as the server sent it, quotes included; VersionID is empty for an
//     unversioned bucket and for https.
package source
