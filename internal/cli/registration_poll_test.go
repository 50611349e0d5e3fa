package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --registration-poll of run and daemon falls back to PCS_LIFECYCLE_REGISTRATION_POLL; the
// flag wins over it.
func TestRegistrationPollFromEnvironment(t *testing.T) {
	for _, name := range []string{"run", "daemon"} {
		t.Run(name, func(t *testing.T) {
			cmd, _, err := NewRoot().Find([]string{name})
			require.NoError(t, err)
			t.Setenv("PCS_LIFECYCLE_REGISTRATION_POLL", "750ms")
			require.NoError(t, applyEnv(cmd.Flags()))
			got, err := cmd.Flags().GetDuration("registration-poll")
			require.NoError(t, err)
			assert.Equal(t, 750*time.Millisecond, got)

			cmd, _, err = NewRoot().Find([]string{name})
			require.NoError(t, err)
			require.NoError(t, cmd.Flags().Set("registration-poll", "5s"))
			require.NoError(t, applyEnv(cmd.Flags()))
			got, _ = cmd.Flags().GetDuration("registration-poll")
			assert.Equal(t, 5*time.Second, got)

			cmd, _, err = NewRoot().Find([]string{name})
			require.NoError(t, err)
			t.Setenv("PCS_LIFECYCLE_REGISTRATION_POLL", "often")
			err = applyEnv(cmd.Flags())
			require.Error(t, err)
			assert.Contains(t, err.Error(), "PCS_LIFECYCLE_REGISTRATION_POLL")
		})
	}
}
