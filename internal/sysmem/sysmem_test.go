package sysmem

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1048576", 1 << 20},
		{"512MiB", 512 << 20},
		{"512mib", 512 << 20},
		{"2 GiB", 2 << 30},
		{"1.5GiB", 3 << 29},
		{"2GB", 2e9},
		{"100KB", 1e5},
		{"4G", 4 << 30},
		{"64k", 64 << 10},
		{"10B", 10},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSize(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	for _, bad := range []string{"", "MiB", "-1", "-1GiB", "1e9", "0x10", "NaN", "Inf", "12 parsecs", "9999999999TiB", "1.5"} {
		t.Run("bad "+bad, func(t *testing.T) {
			_, err := ParseSize(bad)
			if bad == "1.5" { // a fraction of a byte rounds down: still a size
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrSize))
		})
	}
}

func TestMemTotalAndCgroupLimit(t *testing.T) {
	dir := t.TempDir()
	meminfo := filepath.Join(dir, "meminfo")
	require.NoError(t, os.WriteFile(meminfo, []byte("MemFree: 10 kB\nMemTotal:       24576000 kB\n"), 0o600))
	n, err := memTotal(meminfo)
	require.NoError(t, err)
	require.Equal(t, int64(24576000)<<10, n)
	require.NoError(t, os.WriteFile(meminfo, []byte("MemFree: 10 kB\n"), 0o600))
	_, err = memTotal(meminfo)
	require.Error(t, err)

	limit := filepath.Join(dir, "memory.max")
	for content, want := range map[string]int64{"max\n": 0, "1073741824\n": 1 << 30, "9223372036854771712\n": 0, "": 0} {
		require.NoError(t, os.WriteFile(limit, []byte(content), 0o600))
		got, ok := cgroupLimit(limit)
		require.Equal(t, want != 0, ok, "%q", content)
		require.Equal(t, want, got, "%q", content)
	}
	_, ok := cgroupLimit(filepath.Join(dir, "missing"))
	require.False(t, ok)

	m, err := Machine()
	require.NoError(t, err)
	require.Positive(t, m)
}
