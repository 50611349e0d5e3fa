// Package systemdtest holds black-box tests of the project's systemd units and packages under
// a real systemd: each test boots a container (internal/nspawn) whose root is the host's
// filesystem under a throwaway overlay, with the pcs-lifecycle binary and units (or the .deb)
// installed in it, scripts served from a TLS server on the host's loopback, and, for the Slurm
// scenarios, the real slurmd inside registering with a slurmctld on the host. The tests read
// what an operator would: `systemctl show`, `journalctl -u`, the executor's logs and state.
package systemdtest
